"""Capture files in terms of packets: `ibwire.read` and `ibwire.write`.

The capture layer (`ibwire.capture`) deals in frames; these two join it to the
decoder and encoder, so a script reads and writes decoded packets directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ibwire.capture import Frame, open_capture, write_capture
from ibwire.capture._stream import PathOrFile
from ibwire.constants import LINKTYPE_ERF, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND
from ibwire.decoder import Options, decode
from ibwire.encode import encode_packet
from ibwire.packet import Packet

_LINKTYPE_BY_ENCAP = {"eth": LINKTYPE_ETHERNET, "erf": LINKTYPE_ERF, "ib": LINKTYPE_INFINIBAND}


def read(path: PathOrFile, *, options: Options | None = None) -> Iterator[Packet]:
    """Decode every record of a pcap, pcapng, ERF or gzipped capture, streaming.

    A broken file raises `CaptureError` after every good packet before it (strict:
    to step over damaged regions and see them listed, use
    `ibwire.capture.open_capture`, whose readers resynchronise and keep `.skipped`)."""
    with open_capture(path, resync=False) as frames:
        for frame in frames:
            yield decode(frame.data, frame.linktype, frame=frame, options=options)


def write(path: PathOrFile, packets: Iterable[Packet | bytes], *, fmt: str = "pcap",
          linktype: int | None = None, start_ns: int = 0, step_ns: int = 1000) -> int:
    """Write packets (decoded `Packet`s, re-encoded from their values, or wire bytes).

    A packet read from a file keeps its timestamp and link type; others get
    `start_ns + i * step_ns` and `linktype` (default: from the packet's
    encapsulation). Returns the number of records written."""
    def frames() -> Iterator[Frame]:
        for i, pkt in enumerate(packets):
            ts = start_ns + i * step_ns
            if isinstance(pkt, Packet):
                data = encode_packet(pkt)
                src = pkt.frame
                if src is not None:
                    yield Frame(i, src.ts_ns, src.linktype, data, len(data), src.interface)
                    continue
                lt = linktype or _LINKTYPE_BY_ENCAP.get(pkt.encap, LINKTYPE_ETHERNET)
            else:
                data, lt = bytes(pkt), linktype or LINKTYPE_ETHERNET
            yield Frame(i, ts, lt, data, len(data))
    return write_capture(path, frames(), fmt=fmt, linktype=linktype)
