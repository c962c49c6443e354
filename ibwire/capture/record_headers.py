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
PCAP_TS_SEC_AT, PCAP_TS_FRAC_AT, PCAP_INCL_LEN_AT, PCAP_ORIG_LEN_AT = (
    struct.calcsize("I" * k) for k in range(4))
_NS = 10**9
_FRAC_ONE = 1 << 32          # ERF timestamps: 32-bit binary fraction of a second

ERF_HEADER_LEN = ERF.size
_TS_AT, _TS_LEN = ERF.by_name["ts_raw"].offset, ERF.by_name["ts_raw"].bits // 8
# The little-endian timestamp: binary fraction in the low half, seconds in the high.
ERF_TS_FRAC_AT, ERF_TS_SEC_AT = _TS_AT, _TS_AT + _TS_LEN // 2
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


# The put_* functions call nothing (Numba compiles them without their callees).
def put_pcap_record_header(out, pos: int, ts_ns: int, caplen: int, wirelen: int) -> int:
    """Write a little-endian, nanosecond pcap record header at out[pos:]; returns the
    position after it (same bytes as `pcap_record_header`)."""
    sec = ts_ns // _NS
    word = PCAP_TS_FRAC_AT - PCAP_TS_SEC_AT
    for k in range(word):
        out[pos + PCAP_TS_SEC_AT + k] = (sec >> (8 * k)) & 0xFF
        out[pos + PCAP_TS_FRAC_AT + k] = ((ts_ns - sec * _NS) >> (8 * k)) & 0xFF
        out[pos + PCAP_INCL_LEN_AT + k] = (caplen >> (8 * k)) & 0xFF
        out[pos + PCAP_ORIG_LEN_AT + k] = (wirelen >> (8 * k)) & 0xFF
    return pos + PCAP_RECORD_HEADER_LEN


def put_erf_header(out, pos: int, ts_ns: int, erf_type: int, cap: int, rlen: int,
                   wlen: int) -> int:
    """Write a 16-byte ERF record header at out[pos:] as ibdump does (varying-length
    flag, capture interface `cap`, lctr 0, no extension headers); returns the position
    after it (same bytes as `erf_header`)."""
    sec = ts_ns // _NS
    ns = ts_ns - sec * _NS
    ts = (sec << 32) | ((ns * _FRAC_ONE + _NS // 2) // _NS)
    for k in range(_TS_LEN):
        out[pos + _TS_AT + k] = (ts >> (8 * k)) & 0xFF
    out[pos + _TYPE_AT] = erf_type
    out[pos + _FLAGS_AT] = (1 << _VLEN_SHIFT) | (cap << _CAP_SHIFT)
    for at, value in ((_RLEN_AT, rlen), (_LCTR_AT, 0), (_WLEN_AT, wlen)):
        out[pos + at] = (value >> 8) & 0xFF
        out[pos + at + 1] = value & 0xFF
    return pos + ERF_HEADER_LEN


def erf_header(ts_ns: int, erf_type: int, cap: int, rlen: int, wlen: int,
               ibdump_quirk: bool = False) -> bytes:
    """The 16-byte ERF record header ibdump writes (see `put_erf_header`)."""
    return ERF.pack({
        "ts_raw": erf_ts_from_ns(ts_ns, ibdump_quirk).to_bytes(_TS_LEN, "little"),
        "type": erf_type, "vlen": 1, "cap": cap, "rlen": rlen, "lctr": 0, "wlen": wlen})


__all__ = ["ERF_HEADER_LEN", "ERF_TS_FRAC_AT", "ERF_TS_SEC_AT", "PCAP_INCL_LEN_AT",
           "PCAP_ORIG_LEN_AT", "PCAP_RECORD_HEADER_LEN", "PCAP_TS_FRAC_AT", "PCAP_TS_SEC_AT",
           "erf_header", "pcap_record_header", "put_erf_header", "put_pcap_record_header"]
