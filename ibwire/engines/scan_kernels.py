"""Record-boundary kernels: pcap, pcapng packet blocks and native ERF records.

Each kernel walks records from `pos` in a byte window and fills the record arrays
(`doff` data offset in the window, `cap` captured length, `wire` original length,
`ts` nanoseconds, `lt` link type, `ifc` interface, `roff` absolute record offset)
until the window holds no complete record (status NEED), the arrays are full
(FULL), a record is damaged (DAMAGE: the streaming reader, which resynchronises
exactly as documented in `ibwire.capture`, takes over) or, for pcapng, a section
or interface block needs parsing in Python (BLOCK). The format facts (record
header sizes, block types, ERF header fields) come from `ibwire.capture` and the
ERF layout. `<kernel>.py_func` is each kernel's plain-Python twin.
"""

from __future__ import annotations

from numba import njit

from ibwire.capture.erf import (
    ERF_HEADER_LEN,
    ERF_SNIFF_TYPES,
    ERF_TYPE_MASK,
)
from ibwire.capture.erf_header import erf_header_end as _erf_header_end
from ibwire.capture.pcap import RECORD_HEADER_LEN
from ibwire.capture.pcapng import EPB, IDB, MAX_BLOCK_LEN, PB, SHB, SPB
from ibwire.capture.record_headers import (
    ERF_TS_FRAC_AT,
    ERF_TS_SEC_AT,
    PCAP_INCL_LEN_AT,
    PCAP_ORIG_LEN_AT,
    PCAP_TS_FRAC_AT,
    PCAP_TS_SEC_AT,
)
from ibwire.constants import ERF_TYPE_PAD, LINKTYPE_ERF
from ibwire.headers.carriers import ERF

NEED, DAMAGE, FULL, BLOCK = 0, 1, 2, 3
NS = 1_000_000_000
ERF_TYPE_AT = ERF.by_name["type"].offset
ERF_RLEN_AT = ERF.offsets()["rlen"][0]
ERF_WLEN_AT = ERF.offsets()["wlen"][0]
# The one parser of the ERF extension chain (ibwire.capture.erf), compiled; the
# placement kernel calls it too.
erf_header_end = njit(cache=True)(_erf_header_end)
ERF_YEAR_S = 365 * 86_400  # Wireshark's plausibility window (ibwire.capture.erf)
ERF_MAX_TYPE = max(ERF_SNIFF_TYPES)
BLOCK_HDR = 8            # pcapng block type + total length
EPB_FIXED, SPB_FIXED = 20, 4  # fixed part of the EPB/PB and SPB bodies
SHB_MIN = 28


@njit(cache=True)
def rd32(buf, p, big):
    if big:
        return (int(buf[p]) << 24) | (int(buf[p + 1]) << 16) | (int(buf[p + 2]) << 8) | \
            int(buf[p + 3])
    return (int(buf[p + 3]) << 24) | (int(buf[p + 2]) << 16) | (int(buf[p + 1]) << 8) | \
        int(buf[p])


@njit(cache=True)
def rd16(buf, p, big):
    if big:
        return (int(buf[p]) << 8) | int(buf[p + 1])
    return (int(buf[p + 1]) << 8) | int(buf[p])


@njit(cache=True)
def erf_ts_ns(buf, p):
    """tshark's conversion of the little-endian ERF timestamp (see erf_time)."""
    frac = rd32(buf, p + ERF_TS_FRAC_AT, False)
    sec = rd32(buf, p + ERF_TS_SEC_AT, False)
    return sec * NS + ((frac * NS + (1 << 31)) >> 32)


@njit(cache=True)
def scan_pcap(buf, pos, end, base, big, nsec, linktype, max_len, doff, cap, wire, ts, lt,
              ifc, roff, n0):
    """pcap records from `pos`; returns (records, position, status)."""
    n = n0
    unit = 1 if nsec else 1000
    while True:
        if n >= doff.shape[0]:
            return n, pos, FULL
        if pos + RECORD_HEADER_LEN > end:
            return n, pos, NEED
        incl = rd32(buf, pos + PCAP_INCL_LEN_AT, big)
        if incl > max_len:
            return n, pos, DAMAGE
        if pos + RECORD_HEADER_LEN + incl > end:
            return n, pos, NEED
        d = pos + RECORD_HEADER_LEN
        t = rd32(buf, pos + PCAP_TS_SEC_AT, big) * NS + rd32(buf, pos + PCAP_TS_FRAC_AT, big) * unit
        if linktype == LINKTYPE_ERF and incl >= ERF_HEADER_LEN:
            t = erf_ts_ns(buf, d)  # tshark: an ERF record's own time
        doff[n] = d
        cap[n] = incl
        wire[n] = rd32(buf, pos + PCAP_ORIG_LEN_AT, big)
        ts[n] = t
        lt[n] = linktype
        ifc[n] = 0
        roff[n] = base + pos
        n += 1
        pos = d + incl


@njit(cache=True)
def scan_erf(buf, pos, end, base, prev_sec, doff, cap, wire, ts, lt, ifc, roff, n0):
    """Native ERF records; returns (records, position, status, last seconds)."""
    n = n0
    while True:
        if n >= doff.shape[0]:
            return n, pos, FULL, prev_sec
        if pos + ERF_HEADER_LEN > end:
            return n, pos, NEED, prev_sec
        rlen = rd16(buf, pos + ERF_RLEN_AT, True)
        tbyte = int(buf[pos + ERF_TYPE_AT])
        etype = tbyte & ERF_TYPE_MASK
        if rlen < ERF_HEADER_LEN or etype == 0:
            return n, pos, DAMAGE, prev_sec
        if pos + rlen > end:
            return n, pos, NEED, prev_sec
        if etype == ERF_TYPE_PAD:
            pos += rlen
            continue
        sec = rd32(buf, pos + ERF_TS_SEC_AT, False)
        if prev_sec >= 0 and not (-1 <= sec - prev_sec <= ERF_YEAR_S):
            return n, pos, DAMAGE, prev_sec  # the reader's look-ahead decides
        hend = erf_header_end(buf, pos, pos + rlen)
        if hend < 0:
            return n, pos, DAMAGE, prev_sec
        hlen = hend - pos
        doff[n] = pos
        cap[n] = rlen
        wire[n] = hlen + rd16(buf, pos + ERF_WLEN_AT, True)
        ts[n] = erf_ts_ns(buf, pos)
        lt[n] = LINKTYPE_ERF
        ifc[n] = 0
        roff[n] = base + pos
        prev_sec = sec
        n += 1
        pos += rlen


TS_MAX = (1 << 63) - 1
TS_OUT = -(1 << 63)  # a time the int64 column cannot hold: the streaming reader takes over


@njit(cache=True)
def _ticks_ns(ticks, units, mul, off_ns):
    # ticks < 0: the 64-bit count wrapped int64; either way the time is past year 2262.
    room = TS_MAX - max(off_ns, 0)
    if ticks < 0:
        return TS_OUT
    if mul > 0:
        if ticks > room // mul:
            return TS_OUT
        return ticks * mul + off_ns
    if ticks // units >= room // NS:
        return TS_OUT
    return (ticks // units) * NS + (ticks % units) * NS // units + off_ns


@njit(cache=True)
def scan_pcapng(buf, pos, end, base, big, if_lt, if_units, if_mul, if_off, if_snap,
                doff, cap, wire, ts, lt, ifc, roff, n0):
    """Packet blocks of one section (interfaces given); returns (records, position,
    status). Section and interface blocks stop the kernel with BLOCK."""
    n = n0
    nif = if_lt.shape[0]
    while True:
        if n >= doff.shape[0]:
            return n, pos, FULL
        if pos + BLOCK_HDR > end:
            return n, pos, NEED
        btype = rd32(buf, pos, big)
        if btype == SHB or btype == IDB:
            return n, pos, BLOCK
        total = rd32(buf, pos + 4, big)
        if total < 12 or total % 4 or total > MAX_BLOCK_LEN:
            return n, pos, DAMAGE
        if pos + total > end:
            return n, pos, NEED
        if rd32(buf, pos + total - 4, big) != total:
            return n, pos, DAMAGE
        body = pos + BLOCK_HDR
        blen = total - BLOCK_HDR - 4
        if btype == EPB or btype == PB:
            if blen < EPB_FIXED:
                return n, pos, DAMAGE
            if btype == EPB:
                local = rd32(buf, body, big)
            else:
                local = rd16(buf, body, big)
            ticks = (rd32(buf, body + 4, big) << 32) | rd32(buf, body + 8, big)
            c = rd32(buf, body + 12, big)
            if c > blen - EPB_FIXED or local >= nif:
                return n, pos, DAMAGE
            doff[n] = body + EPB_FIXED
            cap[n] = c
            wire[n] = rd32(buf, body + 16, big)
            t = _ticks_ns(ticks, if_units[local], if_mul[local], if_off[local])
            if t == TS_OUT:
                return n, pos, DAMAGE
            ts[n] = t
            lt[n] = if_lt[local]
            ifc[n] = local
            roff[n] = base + pos
            n += 1
        elif btype == SPB:
            if blen < SPB_FIXED:
                return n, pos, DAMAGE
            if nif == 0:
                return n, pos, DAMAGE
            orig = rd32(buf, body, big)
            c = min(orig, blen - SPB_FIXED)
            if if_snap[0]:
                c = min(c, if_snap[0])
            doff[n] = body + SPB_FIXED
            cap[n] = c
            wire[n] = orig
            ts[n] = 0
            lt[n] = if_lt[0]
            ifc[n] = 0
            roff[n] = base + pos
            n += 1
        pos += total
