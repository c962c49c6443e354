"""Classic pcap (libpcap) files: streaming reader and writer.

Layout: a 24-byte file header (magic, version 2.x, thiszone, sigfigs, snaplen,
linktype) then records of a 16-byte header (seconds, micro- or nanoseconds, incl_len,
orig_len) and incl_len bytes. The magic gives both the byte order and the timestamp
resolution: a1b2c3d4 = microseconds, a1b23c4d = nanoseconds, either byte order.

The linktype field carries the link type in its low 28 bits; bits 28-31 say whether
and how many FCS bytes each packet ends with (exposed as ``fcs_len``).

``thiszone`` is ignored, as libpcap and Wireshark do (writers always set it to 0).
For LINKTYPE_ERF the frame time is the ERF header's timestamp, as in tshark.

Damage (see ``_resync``): a record length over the limit, or one that runs past the
end of the file, is skipped by scanning for two records in a row whose headers are
plausible: 0 < incl_len <= orig_len, incl_len within the limit, the fraction below
one second, the time at most a day after (and 1 s before) the last good record's.
pcap has no redundancy, so a wrong length that is still plausible goes unnoticed
until the header after it is garbage; the record it belongs to is delivered as the
file says.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ibwire.capture._resync import (
    NEED,
    Candidates,
    Damage,
    byte_range,
    lookahead_regex,
    near,
    recover,
    regex_candidates,
    seconds_high,
)
from ibwire.capture._stream import PathOrFile, Reader, Source, Writer
from ibwire.capture.erf import erf_frame_ts_ns
from ibwire.capture.frame import CaptureError, Frame
from ibwire.capture.record_headers import PCAP_RECORD_HEADER_LEN, pcap_record_header
from ibwire.constants import LINKTYPE_ERF

if TYPE_CHECKING:
    pass

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
RECORD_HEADER_LEN = PCAP_RECORD_HEADER_LEN
DEFAULT_SNAPLEN = 262144
# Any record longer than this is corrupt whatever the snaplen says (64 MiB).
MAX_RECORD_LEN = 1 << 26
_NS = 10**9


class PcapReader(Reader):
    """Streaming pcap reader: iterate to get Frames, one record in memory at a time."""

    format = "pcap"

    def __init__(self, fileobj_or_path: PathOrFile | Source, name: str | None = None, *,
                 resync: bool = True) -> None:
        super().__init__(fileobj_or_path, name, resync=resync)
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
        prev: int | None = None  # seconds of the last good record with data
        try:
            while True:
                src.begin_record()
                try:
                    record = self._record_at(src)
                except Damage as damage:
                    recover(src, damage, self.skipped if self.resync else None,
                            self._candidates(prev), self._check, prev)
                    continue
                if record is None:
                    return
                (sec, frac, incl_len, orig_len), data = record
                if incl_len:  # a zero-filled region reads as empty records
                    prev = sec
                ts_ns = sec * _NS + frac * unit
                if is_erf:
                    ts_ns = erf_frame_ts_ns(data, ts_ns)
                yield src.frame(ts_ns, self.linktype, data, orig_len)
                src.records += 1
        finally:
            self.close()

    def _record_at(self, src: Source) -> tuple[tuple[int, ...], bytes] | None:
        head = src.read_header(RECORD_HEADER_LEN, "record header")
        if head is None:
            return None
        fields = self._record.unpack(head)
        incl_len = fields[2]
        if incl_len > self._max_len:
            raise Damage(f"record length {incl_len} exceeds {self._limit}", head)
        data = src.read(incl_len)
        if len(data) < incl_len:
            raise Damage(f"truncated record body: {len(data)} of {incl_len} bytes", head + data)
        return fields, data

    # -- resynchronisation (see _resync) ----------------------------------------------
    def _candidates(self, prev: int | None) -> Candidates:
        little = self.byteorder == "<"
        high = seconds_high(prev, little) if prev is not None else b".."
        # Regex parts, most significant byte first: a fraction below 10**9 (ns: high
        # byte <= 0x3b) or 10**6 (us: 0x000f4240); an incl_len within the limit, not 0.
        sec = [high, b".."]
        frac = ([byte_range(0, 0x3B), b"..."] if self.nanosecond
                else [b"\x00", byte_range(0, 0x0F), b".."])
        incl = [byte_range(0, self._max_len >> 24), b"..."]
        if little:
            sec, frac, incl = [b"..", high], frac[::-1], incl[::-1]
        return regex_candidates(lookahead_regex([*sec, *frac, b"(?!\\x00{4})", *incl]))

    def _check(self, buf: bytes, pos: int, end: int, prev: object,
               first: bool) -> tuple[int, object]:
        if pos + RECORD_HEADER_LEN > end:
            return NEED, None
        sec, frac, incl, orig = self._record.unpack_from(buf, pos)
        ok = (0 < incl <= min(orig, self._max_len) and orig <= MAX_RECORD_LEN
              and frac < (_NS if self.nanosecond else 10**6)
              and near(prev if isinstance(prev, int) else None, sec))
        return (RECORD_HEADER_LEN + incl if ok else 0), sec


class PcapWriter(Writer):
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
        self.byteorder = byteorder
        super().__init__(fileobj_or_path, gzip)
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
        self._out.write(pcap_record_header(ts_ns, len(data), wire_len, self.nanosecond,
                                           self.byteorder) + data)
        self.count += 1
