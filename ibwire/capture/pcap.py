"""Classic pcap (libpcap) files: streaming reader and writer.

Layout: a 24-byte file header (magic, version 2.x, thiszone, sigfigs, snaplen,
linktype) then records of a 16-byte header (seconds, micro- or nanoseconds, incl_len,
orig_len) and incl_len bytes. The magic gives both the byte order and the timestamp
resolution: a1b2c3d4 = microseconds, a1b23c4d = nanoseconds, either byte order.

The linktype field carries the link type in its low 28 bits; bits 28-31 say whether
and how many FCS bytes each packet ends with (exposed as ``fcs_len``).

``thiszone`` is ignored, as libpcap and Wireshark do (writers always set it to 0).
For LINKTYPE_ERF the frame time is the ERF header's timestamp, as in tshark.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ibwire.capture._stream import Output, PathOrFile, Source, open_source
from ibwire.capture.erf import erf_frame_ts_ns
from ibwire.capture.frame import CaptureError, Frame
from ibwire.capture.linktypes import LINKTYPE_ERF

if TYPE_CHECKING:
    from typing import Self

MAGIC_USEC = 0xA1B2C3D4
MAGIC_NSEC = 0xA1B23C4D
# First four bytes of a pcap file as they appear on disk.
PCAP_MAGICS: dict[bytes, tuple[str, bool]] = {
    b"\xd4\xc3\xb2\xa1": ("<", False),
    b"\xa1\xb2\xc3\xd4": (">", False),
    b"\x4d\x3c\xb2\xa1": ("<", True),
    b"\xa1\xb2\x3c\x4d": (">", True),
}
FILE_HEADER_LEN = 24
RECORD_HEADER_LEN = 16
DEFAULT_SNAPLEN = 262144
# Any record longer than this is corrupt whatever the snaplen says (64 MiB).
MAX_RECORD_LEN = 1 << 26
_NS = 10**9


class PcapReader:
    """Streaming pcap reader: iterate to get Frames, one record in memory at a time."""

    format = "pcap"

    def __init__(self, fileobj_or_path: PathOrFile | Source, name: str | None = None) -> None:
        self._src, self._owned = open_source(fileobj_or_path, name)
        try:
            self._read_file_header()
        except BaseException:
            self.close()
            raise

    def _read_file_header(self) -> None:
        src = self._src
        head = src.read(FILE_HEADER_LEN)
        if not head:
            raise CaptureError("empty file", source=src.name, at_record=False)
        magic = head[:4]
        if magic not in PCAP_MAGICS:
            raise CaptureError(
                f"not a pcap file: magic {magic.hex(' ')}", source=src.name, at_record=False
            )
        if len(head) < FILE_HEADER_LEN:
            raise CaptureError(
                f"truncated pcap file header: {len(head)} of {FILE_HEADER_LEN} bytes",
                source=src.name, at_record=False,
            )
        self.byteorder, self.nanosecond = PCAP_MAGICS[magic]
        e = self.byteorder
        (self.version_major, self.version_minor, self.thiszone, self.sigfigs,
         self.snaplen, network) = struct.unpack(e + "HHiIII", head[4:])
        if self.version_major != 2:
            raise CaptureError(
                f"unsupported pcap version {self.version_major}.{self.version_minor}",
                source=src.name, at_record=False,
            )
        self.linktype = network & 0x0FFFFFFF
        # Bit 28 set: bits 29-31 give the FCS length in 16-bit words.
        self.fcs_len: int | None = ((network >> 29) & 7) * 2 if network & 0x10000000 else None
        self._record = struct.Struct(e + "IIII")
        # Some writers store records a little over their snaplen, so allow up to
        # 256 KiB whatever the snaplen; beyond 64 MiB the length is garbage.
        slack = max(self.snaplen, DEFAULT_SNAPLEN)
        self._max_len = min(slack, MAX_RECORD_LEN)
        self._limit = (
            f"snaplen {self.snaplen}" if slack <= MAX_RECORD_LEN
            else f"the {MAX_RECORD_LEN}-byte sanity limit"
        )

    def __iter__(self) -> Iterator[Frame]:
        src = self._src
        unit = 1 if self.nanosecond else 1000
        is_erf = self.linktype == LINKTYPE_ERF
        try:
            while True:
                src.begin_record()
                head = src.read(RECORD_HEADER_LEN)
                if not head:
                    return
                if len(head) < RECORD_HEADER_LEN:
                    raise src.error(
                        f"truncated record header: {len(head)} of {RECORD_HEADER_LEN} bytes"
                    )
                sec, frac, incl_len, orig_len = self._record.unpack(head)
                if incl_len > self._max_len:
                    raise src.error(f"record length {incl_len} exceeds {self._limit}")
                data = src.read_exact(incl_len, "record body")
                ts_ns = sec * _NS + frac * unit
                if is_erf:
                    ts_ns = erf_frame_ts_ns(data, ts_ns)
                yield Frame(
                    index=src.records,
                    ts_ns=ts_ns,
                    linktype=self.linktype,
                    data=data,
                    wire_len=orig_len,
                    offset=src.record_offset,
                )
                src.records += 1
        finally:
            self.close()

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()


class PcapWriter:
    """Writes a classic pcap file (version 2.4, thiszone 0, sigfigs 0).

    Timestamps are truncated to microseconds unless ``nanosecond``. The file header
    is written at once, so an empty capture is still a valid file.
    """

    def __init__(
        self,
        fileobj_or_path: PathOrFile,
        linktype: int,
        nanosecond: bool = True,
        snaplen: int = DEFAULT_SNAPLEN,
        *,
        byteorder: str = "little",
        gzip: bool | None = None,
    ) -> None:
        if byteorder not in ("little", "big"):
            raise ValueError(f"byteorder must be 'little' or 'big', not {byteorder!r}")
        if not 0 <= linktype <= 0x0FFFFFFF:
            raise ValueError(f"link type {linktype} does not fit the pcap header")
        e = "<" if byteorder == "little" else ">"
        self.linktype = linktype
        self.nanosecond = nanosecond
        self.snaplen = snaplen
        self.count = 0
        self._record = struct.Struct(e + "IIII")
        self._out = Output(fileobj_or_path, gzip)
        magic = MAGIC_NSEC if nanosecond else MAGIC_USEC
        self._out.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))

    def write(
        self, frame_or_bytes: Frame | bytes, ts_ns: int | None = None,
        wire_len: int | None = None,
    ) -> None:
        """Write one record; ``ts_ns``/``wire_len`` override the Frame's (default 0/len)."""
        if isinstance(frame_or_bytes, Frame):
            frame = frame_or_bytes
            if frame.linktype != self.linktype:
                raise ValueError(
                    f"record {frame.index} has link type {frame.linktype}, "
                    f"this pcap file {self.linktype}"
                )
            data = frame.data
            ts_ns = frame.ts_ns if ts_ns is None else ts_ns
            wire_len = frame.wire_len if wire_len is None else wire_len
        else:
            data = bytes(frame_or_bytes)
            ts_ns = 0 if ts_ns is None else ts_ns
            wire_len = len(data) if wire_len is None else wire_len
        if len(data) > self.snaplen:
            raise ValueError(f"record of {len(data)} bytes exceeds snaplen {self.snaplen}")
        sec, ns = divmod(ts_ns, _NS)
        if not 0 <= sec < 1 << 32:
            raise ValueError(f"timestamp {ts_ns} ns does not fit a pcap record")
        if not 0 <= wire_len < 1 << 32:
            raise ValueError(f"wire length {wire_len} does not fit a pcap record")
        frac = ns if self.nanosecond else ns // 1000
        self._out.write(self._record.pack(sec, frac, len(data), wire_len) + data)
        self.count += 1

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
