"""ERF (Endace Extensible Record Format): records, timestamps, native files.

An ERF record is a 16-byte header (little-endian 64-bit timestamp; type; flags;
big-endian rlen, lctr, wlen), optional 8-byte extension headers, then the packet,
padded so that rlen may exceed header + wlen. ibdump writes ERF records for native
InfiniBand ports, either wrapped in pcap (LINKTYPE_ERF 197, the record is the pcap
record's data) or, for other tools, as a bare sequence of records ("native ERF").

Timestamps (tshark's conversion, ibdump's quirk) are in ``erf_time``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ibwire.capture._resync import (
    NEED,
    Candidates,
    Damage,
    byte_set,
    lookahead_regex,
    near,
    recover,
    regex_candidates,
    seconds_high,
)
from ibwire.capture._stream import PathOrFile, Reader, Source, Writer
from ibwire.capture.erf_header import (  # noqa: F401 - the ERF API lives here too
    ERF_EXT_FLAG,
    ERF_EXT_LEN,
    ERF_EXT_MORE,
    ERF_TYPE_AT,
    ERF_TYPE_MASK,
    erf_header_end,
    erf_pad,
    erf_type_of,
)
from ibwire.capture.erf_header import (
    ERF_RLEN_AT as _RLEN_AT,
)
from ibwire.capture.erf_header import (
    ERF_RLEN_SIZE as _RLEN_SIZE,
)
from ibwire.capture.erf_header import (
    ERF_TS_LEN as _TS_LEN,
)
from ibwire.capture.erf_header import (
    ERF_WLEN_AT as _WLEN_AT,
)
from ibwire.capture.erf_time import erf_ts_to_ns
from ibwire.capture.frame import Frame
from ibwire.capture.record_headers import ERF_HEADER_LEN, erf_header
from ibwire.constants import (
    ERF_TYPE_IB,
    ERF_TYPE_PAD,
    LINKTYPE_ERF,
)
from ibwire.headers.carriers import ERF as ERF_LAYOUT

if TYPE_CHECKING:
    pass


# Types a native ERF file plausibly starts with (PAD excluded: '0' would match text).
ERF_SNIFF_TYPES = frozenset(set(range(1, 26)) | {27, 28, 29})

_RECORD_ALIGN = 8   # DAG cards pad records to a multiple of 8 bytes
_YEAR = 365 * 86_400
_SANE = (788_918_400, 4_102_444_800)  # 1995 .. 2100: a DAG card or ibdump clock


@dataclass(frozen=True, slots=True)
class ErfRecord:
    """One ERF record, parsed as far as its bytes allow (see ``parse_erf_record``)."""

    ts: int  # raw 64-bit timestamp
    ts_ns: int
    type: int  # 7 bits
    ext_header_present: bool
    flags: int
    cap: int  # capture interface, flags & 3
    vlen: bool
    trunc: bool
    rxe: bool
    dse: bool
    rlen: int
    lctr: int
    wlen: int
    ext_headers: list[bytes] = field(default_factory=list)  # raw 8-byte headers
    header_len: int = ERF_HEADER_LEN  # 16 + 8 * len(ext_headers)
    payload: bytes = b""
    problems: list[tuple[int, str]] = field(default_factory=list)  # (offset, reason)


def parse_erf_record(data: bytes, strict: bool = False) -> ErfRecord:
    """Parse an ERF record; never raises on bad bytes.

    The payload is cut by wlen, not rlen: records may be padded (rlen rounded up to a
    multiple of 8) while ibdump writes rlen = 16 + len. For Ethernet ERF types the
    payload keeps its leading 2-byte offset/pad field. Disagreements between rlen, wlen
    and the bytes present are listed in ``problems`` as (byte offset, reason).

    Inside pcap/pcapng (the default) the capture record's own length bounds the ERF
    record, as Wireshark reads it: some ibdump versions write rlen rounded up to a
    multiple of 8 while the pcap record holds only 16 + wlen bytes, which is not an
    error. Only a record too short for its header and wlen bytes, or with rlen
    smaller than its header, is a problem. ``strict`` (a bare record of a native
    ERF file, which rlen delimits) also reports rlen beyond the bytes present.
    """
    data = bytes(data)
    problems: list[tuple[int, str]] = []
    if len(data) < ERF_HEADER_LEN:
        problems.append((0, f"truncated ERF header: {len(data)} of {ERF_HEADER_LEN} bytes"))
        padded = data + bytes(ERF_HEADER_LEN - len(data))
        hdr_ok = False
    else:
        padded = data
        hdr_ok = True
    hdr = ERF_LAYOUT.unpack(padded)   # the one definition of the header layout
    ts = int.from_bytes(hdr["ts_raw"], "little")
    flags = padded[ERF_LAYOUT.by_name["res"].offset]
    rlen, lctr, wlen = hdr["rlen"], hdr["lctr"], hdr["wlen"]
    ext_present = bool(hdr["ext_header"])

    header_len = ERF_HEADER_LEN
    if ext_present and hdr_ok:
        end = erf_header_end(data, 0, len(data))
        if end < 0:
            # Every whole extension header read said another follows.
            end = ERF_HEADER_LEN + (len(data) - ERF_HEADER_LEN) // ERF_EXT_LEN * ERF_EXT_LEN
            problems.append((end, f"truncated ERF extension header: {len(data) - end} of "
                             f"{ERF_EXT_LEN} bytes"))
        header_len = end
    ext_headers = [data[p:p + ERF_EXT_LEN] for p in range(ERF_HEADER_LEN, header_len,
                                                         ERF_EXT_LEN)]

    payload = b""
    if hdr_ok:
        if rlen < header_len:
            problems.append((_RLEN_AT, f"rlen {rlen} is shorter than the {header_len}-byte "
                             "ERF header"))
        elif rlen > len(data) and strict:
            problems.append((_RLEN_AT, f"rlen {rlen} exceeds the {len(data)} bytes present"))
        elif rlen < len(data):
            problems.append((_RLEN_AT, f"rlen {rlen} is shorter than the {len(data)} bytes "
                             "present"))
        want = wlen + erf_pad(hdr["type"])
        bound = len(data) if rlen >= len(data) else rlen  # padding never read past
        available = max(0, bound - header_len)
        if want > available:
            problems.append(
                (_WLEN_AT, f"wlen {wlen} exceeds the {available} bytes of payload in the record")
            )
        payload = data[header_len:header_len + min(want, max(0, len(data) - header_len))]

    return ErfRecord(
        ts=ts,
        ts_ns=erf_ts_to_ns(ts),
        type=hdr["type"],
        ext_header_present=ext_present,
        flags=flags,
        cap=hdr["cap"],
        vlen=bool(hdr["vlen"]),
        trunc=bool(hdr["trunc"]),
        rxe=bool(hdr["rxe"]),
        dse=bool(hdr["dse"]),
        rlen=rlen,
        lctr=lctr,
        wlen=wlen,
        ext_headers=ext_headers,
        header_len=header_len,
        payload=payload,
        problems=problems,
    )


def erf_record(
    payload: bytes, ts_ns: int, erf_type: int = ERF_TYPE_IB, cap: int = 0,
    pad: bool = False, ibdump_quirk: bool = False,
) -> bytes:
    """Build an ERF record the way ibdump does.

    flags = 0x04 (varying length) | cap, lctr = 0, wlen = len(payload), and
    rlen = 16 + len(payload) (ibdump), or rounded up to a multiple of 8 with zero
    padding when ``pad`` (as DAG cards write).
    """
    if not 0 <= erf_type <= ERF_TYPE_MASK:
        raise ValueError(f"ERF type {erf_type} does not fit 7 bits")
    if not 0 <= cap <= 3:
        raise ValueError(f"ERF capture interface {cap} does not fit 2 bits")
    rlen = ERF_HEADER_LEN + len(payload)
    if pad:
        rlen += -rlen % _RECORD_ALIGN
    if rlen > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes does not fit an ERF record")
    header = erf_header(ts_ns, erf_type, cap, rlen, len(payload), ibdump_quirk)
    return header + bytes(payload) + bytes(rlen - ERF_HEADER_LEN - len(payload))


def _rlen(data: bytes) -> int:
    return int.from_bytes(data[_RLEN_AT:_RLEN_AT + _RLEN_SIZE], "big")


def erf_frame_ts_ns(data: bytes, fallback_ns: int) -> int:
    """``frame.time`` of an ERF-in-pcap record: the ERF header's timestamp, as tshark."""
    if len(data) < ERF_HEADER_LEN:
        return fallback_ns
    return erf_ts_to_ns(int.from_bytes(data[:_TS_LEN], "little"))


def looks_like_erf(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) plausibly starts a native ERF file."""
    if len(head) < ERF_HEADER_LEN:
        return False
    ts = int.from_bytes(head[:_TS_LEN], "little")
    rlen = _rlen(head)
    min_len = ERF_HEADER_LEN + (ERF_EXT_LEN if head[ERF_TYPE_AT] & ERF_EXT_FLAG else 0)
    sec = ts >> 32
    return erf_type_of(head) in ERF_SNIFF_TYPES and rlen >= min_len and (
        _SANE[0] <= sec < _SANE[1]
    )


class ErfReader(Reader):
    """Streaming reader for native ERF files; yields LINKTYPE_ERF Frames.

    ``Frame.data`` is the whole record (header, extension headers, payload, padding),
    ``wire_len`` is header length + wlen (what a pcap record of it would call the
    original length). PAD records (type 48) are skipped, as tshark does.

    ERF has no magic and no second length, so a record header is also checked the way
    Wireshark recognises ERF files: type 0 (legacy) does not occur, and the time is at
    most 1 s before the previous record's and at most a year after it -- or, if not
    (files put end to end), the next record follows on from it. A header that fails is
    damage (see ``_resync``): a wrong rlen is noticed at the record after it.
    """

    format = "erf"

    def __iter__(self) -> Iterator[Frame]:
        src = self._src
        prev: int | None = None  # raw timestamp of the last good record (PAD aside)
        try:
            while True:
                src.begin_record()
                try:
                    record = self._record_at(src, prev)
                except Damage as damage:
                    recover(src, damage, self.skipped if self.resync else None,
                            _candidates(prev), _check, prev)
                    continue
                if record is None:
                    return
                if erf_type_of(record) == ERF_TYPE_PAD:
                    continue
                prev = int.from_bytes(record[:_TS_LEN], "little")
                parsed = parse_erf_record(record, strict=True)
                yield src.frame(parsed.ts_ns, LINKTYPE_ERF, record,
                                parsed.header_len + parsed.wlen)
                src.records += 1
        finally:
            self.close()

    def _record_at(self, src: Source, prev: int | None) -> bytes | None:
        head = src.read_header(ERF_HEADER_LEN, "ERF record header")
        if head is None:
            return None
        rlen = _rlen(head)
        if rlen < ERF_HEADER_LEN:
            raise Damage(f"ERF rlen {rlen} is shorter than the {ERF_HEADER_LEN}-byte header",
                         head)
        erf_type = erf_type_of(head)
        if erf_type == 0:
            raise Damage("ERF type 0 (legacy) is not a record this reader knows", head)
        ts = int.from_bytes(head[:_TS_LEN], "little")
        in_step = erf_type == ERF_TYPE_PAD or prev is None or _follows(prev, ts)
        out_of_step = "" if prev is None else (
            f"ERF timestamp {ts >> 32} s is out of step with the previous record's "
            f"{prev >> 32} s")
        body = src.read(rlen - ERF_HEADER_LEN)
        record = head + body
        if len(body) < rlen - ERF_HEADER_LEN:
            raise Damage(out_of_step if not in_step else (
                f"truncated ERF record body: {len(body)} of {rlen - ERF_HEADER_LEN} bytes"),
                record)
        if erf_type == ERF_TYPE_PAD:
            return record
        if erf_header_end(record, 0, len(record)) < 0:
            raise Damage(f"ERF extension headers run past rlen {rlen}", record)
        if not (in_step or self._followed(ts)):
            raise Damage(out_of_step, record)
        return record

    def _followed(self, ts: int) -> bool:
        """Whether the next record (of a known type, not PAD) follows on from ``ts``."""
        buf, at, avail = self._src.lookahead(ERF_HEADER_LEN)
        if avail < ERF_HEADER_LEN:
            return True  # the end, or a cut the next read reports
        head = buf[at:at + ERF_HEADER_LEN]
        return (_rlen(head) >= ERF_HEADER_LEN and erf_type_of(head) in ERF_SNIFF_TYPES
                and _follows(ts, int.from_bytes(head[:_TS_LEN], "little")))


def _follows(prev: int, ts: int) -> bool:
    """Wireshark's test: at most 1 s back (interfaces interleave), at most a year on."""
    return -1 <= (ts >> 32) - (prev >> 32) <= _YEAR


# -- resynchronisation (see _resync): a known type, sane rlen, a time near the last --
_TYPES = byte_set(ERF_SNIFF_TYPES | {t | ERF_EXT_FLAG for t in ERF_SNIFF_TYPES})
_MAX_EXT = 16  # a candidate with more extension headers than this is not believed


def _candidates(prev: int | None) -> Candidates:
    high = seconds_high(prev >> 32, True) if prev is not None else b".."
    return regex_candidates(lookahead_regex([b"......", high, _TYPES]))


def _check(buf: bytes, pos: int, end: int, prev: object, first: bool) -> tuple[int, object]:
    if pos + ERF_HEADER_LEN > end:
        return NEED, None
    erf_type, rlen = erf_type_of(buf, pos), _rlen(buf[pos:pos + ERF_HEADER_LEN])
    ts = int.from_bytes(buf[pos:pos + _TS_LEN], "little")
    if not first and erf_type == ERF_TYPE_PAD:
        return (rlen if rlen >= ERF_HEADER_LEN else 0), prev
    sec = ts >> 32
    ext = bool(buf[pos + ERF_TYPE_AT] & ERF_EXT_FLAG)
    ok = (erf_type in ERF_SNIFF_TYPES
          and rlen >= ERF_HEADER_LEN + (ERF_EXT_LEN if ext else 0)
          and (near(prev >> 32, sec) if isinstance(prev, int) else _SANE[0] <= sec < _SANE[1]))
    if ok and ext:
        # The chain must end within rlen and _MAX_EXT headers; NEED when the bytes
        # present stop before that is known.
        cap = pos + min(rlen, ERF_HEADER_LEN + ERF_EXT_LEN * _MAX_EXT)
        if erf_header_end(buf, pos, min(cap, end)) < 0:
            if end < cap:
                return NEED, None
            ok = False
    return (rlen if ok else 0), ts


class ErfWriter(Writer):
    """Writes a native ERF file (a bare sequence of records).

    ``write`` takes a LINKTYPE_ERF Frame or a complete ERF record and writes it
    verbatim (so reading then writing is byte-identical); ``write_payload`` wraps an
    InfiniBand packet (type 21) or link packet (type 25) the way ibdump does.
    """

    def __init__(self, fileobj_or_path: PathOrFile, gzip: bool | None = None) -> None:
        super().__init__(fileobj_or_path, gzip)

    def write(self, frame_or_record: Frame | bytes) -> None:
        if isinstance(frame_or_record, Frame):
            if frame_or_record.linktype != LINKTYPE_ERF:
                raise ValueError(
                    f"record {frame_or_record.index} has link type {frame_or_record.linktype}; "
                    "a native ERF file holds only ERF records (link type 197)"
                )
            record = frame_or_record.data
        else:
            record = bytes(frame_or_record)
        if len(record) < ERF_HEADER_LEN or _rlen(record) != len(record):
            raise ValueError("not a complete ERF record (rlen must equal its length)")
        self._out.write(record)
        self.count += 1

    def write_payload(
        self, payload: bytes, ts_ns: int, erf_type: int = ERF_TYPE_IB, cap: int = 0,
        pad: bool = False, ibdump_quirk: bool = False,
    ) -> None:
        self.write(erf_record(payload, ts_ns, erf_type, cap, pad, ibdump_quirk))
