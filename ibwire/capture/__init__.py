"""Capture files: streaming readers and writers for pcap, pcapng and native ERF.

``open_capture`` sniffs the format (and gzip) and yields ``Frame`` objects; a broken
file raises one ``CaptureError`` naming the record and byte offset, after every good
record before it. A damaged record the reader can step over (``resync=True``, the
default) is listed in the reader's ``.skipped`` instead. Link types are not judged
here (see ``check_linktype``).
"""

from ibwire.capture.erf import (
    ErfReader,
    ErfRecord,
    ErfWriter,
    erf_record,
    parse_erf_record,
)
from ibwire.capture.erf_time import erf_ts_from_ns, erf_ts_to_ns
from ibwire.capture.frame import CaptureError, Frame, Skipped
from ibwire.capture.linktypes import KNOWN_LINKTYPES, UnknownLinkTypeError, check_linktype
from ibwire.capture.open import CaptureReader, open_capture, read_capture, write_capture
from ibwire.capture.pcap import PcapReader, PcapWriter
from ibwire.capture.pcapng import PcapngReader
from ibwire.capture.pcapng_writer import PcapngWriter
from ibwire.capture.record_headers import (
    erf_header,
    pcap_record_header,
    put_erf_header,
    put_pcap_record_header,
)
from ibwire.constants import (
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LINKTYPE_INFINIBAND,
    LINKTYPE_IPOIB,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
)

__all__ = [
    "KNOWN_LINKTYPES", "LINKTYPE_ERF", "LINKTYPE_ETHERNET", "LINKTYPE_INFINIBAND",
    "LINKTYPE_IPOIB", "LINKTYPE_LINUX_SLL", "LINKTYPE_LINUX_SLL2", "LINKTYPE_RAW",
    "CaptureError", "CaptureReader", "ErfReader", "ErfRecord", "ErfWriter", "Frame",
    "PcapReader", "PcapWriter", "PcapngReader", "PcapngWriter", "Skipped",
    "UnknownLinkTypeError", "check_linktype", "erf_header", "erf_record", "erf_ts_from_ns",
    "erf_ts_to_ns",
    "open_capture", "parse_erf_record", "pcap_record_header", "put_erf_header",
    "put_pcap_record_header", "read_capture", "write_capture",
]
