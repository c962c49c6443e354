"""Capture record headers, written once: the pcap record header and the ERF record
header. `pcap.PcapWriter` and `erf.erf_record` use the byte forms; writers that fill
a buffer in a Numba kernel (`ibwire.gen.bulk`) call the `put_*` forms, which are plain
Python that Numba compiles (`njit(put_pcap_record_header)`): they index a uint8 buffer
and use only integer globals.

ERF field positions come from the `ERF` layout (`headers.carriers`); the timestamp is
`erf_time.erf_ts_from_ns`'s rounding (not ibdump's quirk).
"""

from __future__ import annotations

import struct

from ibwire.capture.erf_time import erf_ts_from_ns
from ibwire.headers.carriers import ERF

# pcap record header: ts_sec, ts_frac, incl_len, orig_len (32 bits each).
_PCAP_RECORD = struct.Struct("IIII")
PCAP_RECORD_HEADER_LEN = _PCAP_RECORD.size
_NS = 10**9
_FRAC_ONE = 1 << 32          # ERF timestamps: 32-bit binary fraction of a second

ERF_HEADER_LEN = ERF.size
_TS_AT, _TS_LEN = ERF.by_name["ts_raw"].offset, ERF.by_name["ts_raw"].bits // 8
_TYPE_AT = ERF.offsets()["type"][0]
_FLAGS_AT = ERF.offsets()["cap"][0]
_VLEN_SHIFT, _CAP_SHIFT = ERF.offsets()["vlen"][2], ERF.offsets()["cap"][2]
_RLEN_AT, _LCTR_AT, _WLEN_AT = (ERF.offsets()[n][0] for n in ("rlen", "lctr", "wlen"))


def pcap_record_header(ts_ns: int, caplen: int, wirelen: int, nanosecond: bool = True,
                       byteorder: str = "little") -> bytes:
    """The 16-byte pcap record header (microsecond files truncate the fraction)."""
    sec, ns = divmod(ts_ns, _NS)
    if not 0 <= sec < 1 << 32:
        raise ValueError(f"timestamp {ts_ns} ns does not fit a pcap record")
    if not 0 <= wirelen < 1 << 32:
        raise ValueError(f"wire length {wirelen} does not fit a pcap record")
    frac = ns if nanosecond else ns // 1000
    e = "<" if byteorder == "little" else ">"
    return struct.pack(e + _PCAP_RECORD.format, sec, frac, caplen, wirelen)


def _put_le(out, pos: int, value: int, n: int) -> None:
    for k in range(n):
        out[pos + k] = (value >> (8 * k)) & 0xFF


def _put_be(out, pos: int, value: int, n: int) -> None:
    for k in range(n):
        out[pos + k] = (value >> (8 * (n - 1 - k))) & 0xFF


def put_pcap_record_header(out, pos: int, ts_ns: int, caplen: int, wirelen: int) -> int:
    """Write a little-endian, nanosecond pcap record header at out[pos:]; returns the
    position after it (same bytes as `pcap_record_header`)."""
    sec = ts_ns // _NS
    _put_le(out, pos, sec, 4)
    _put_le(out, pos + 4, ts_ns - sec * _NS, 4)
    _put_le(out, pos + 8, caplen, 4)
    _put_le(out, pos + 12, wirelen, 4)
    return pos + PCAP_RECORD_HEADER_LEN


def put_erf_header(out, pos: int, ts_ns: int, erf_type: int, cap: int, rlen: int,
                   wlen: int) -> int:
    """Write a 16-byte ERF record header at out[pos:] as ibdump does (varying-length
    flag, capture interface `cap`, lctr 0, no extension headers); returns the position
    after it (same bytes as `erf_header`)."""
    sec = ts_ns // _NS
    ns = ts_ns - sec * _NS
    _put_le(out, pos + _TS_AT, (sec << 32) | ((ns * _FRAC_ONE + _NS // 2) // _NS), _TS_LEN)
    out[pos + _TYPE_AT] = erf_type
    out[pos + _FLAGS_AT] = (1 << _VLEN_SHIFT) | (cap << _CAP_SHIFT)
    _put_be(out, pos + _RLEN_AT, rlen, 2)
    _put_be(out, pos + _LCTR_AT, 0, 2)
    _put_be(out, pos + _WLEN_AT, wlen, 2)
    return pos + ERF_HEADER_LEN


def erf_header(ts_ns: int, erf_type: int, cap: int, rlen: int, wlen: int,
               ibdump_quirk: bool = False) -> bytes:
    """The 16-byte ERF record header ibdump writes (see `put_erf_header`)."""
    return ERF.pack({
        "ts_raw": erf_ts_from_ns(ts_ns, ibdump_quirk).to_bytes(_TS_LEN, "little"),
        "type": erf_type, "vlen": 1, "cap": cap, "rlen": rlen, "lctr": 0, "wlen": wlen})


__all__ = ["ERF_HEADER_LEN", "PCAP_RECORD_HEADER_LEN", "erf_header", "pcap_record_header",
           "put_erf_header", "put_pcap_record_header"]
