"""ICRC, VCRC and LPCRC of every frame of a chunk, table-driven in Numba.

CRC-32 (ICRC) uses slicing-by-16 tables, CRC-16 (VCRC, LPCRC) slicing-by-8, all
built from `ibwire.crc`'s polynomials (`tables`). The ICRC's unmasked bulk (the
payload) goes through zlib-ng's `zng_crc32` instead -- the same CRC-32/IEEE, folded
with carry-less multiplies where the CPU has them, several times faster than tables
or the system zlib -- called from the compiled code by symbol from the `zlib-ng`
package's extension; `use_lib=False` keeps to the tables. The ICRC's masked headers
are fed through the per-encapsulation templates of `tables` (derived from
`ibwire.crc`'s mask functions); the rest of the packet is read in place. Status
values are `ibwire.crc.CrcStatus`, exactly as the per-packet decoder sets them.
`check_crcs.py_func` is the plain-Python twin.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types

from ibwire.constants import ICRC_LEN, VCRC_LEN
from ibwire.crc import CrcStatus
from ibwire.engines.place import (
    CRC_KIND,
    IB_OFF,
    ICRC_AT,
    L_BTH,
    L_GRH,
    L_IP,
    L_IPV6,
    L_LRH,
    L_UDP,
    LP_AT,
    VCRC_AT,
)
from ibwire.engines.pool import Pool
from ibwire.engines.positions import SZ_BTH, SZ_IP
from ibwire.engines.tables import (
    CRC_NATIVE,
    CRC_NATIVE_GRH,
    CRC_ROCE1,
    CRC_ROCE2_V4,
    STANDIN_CRC,
)
from ibwire.headers.link import LINK

GOOD, BAD, NOT_PRESENT = int(CrcStatus.GOOD), int(CrcStatus.BAD), int(CrcStatus.NOT_PRESENT)
LP_COVER, LP_AT_FIELD = LINK.offsets()["lpcrc"][0], LINK.offsets()["lpcrc"][0]
LP_BYTES = LINK.offsets()["lpcrc"][1]
ONES32 = 0xFFFFFFFF
ONES16 = 0xFFFF
ICRC, VCRC, LPCRC = 1, 2, 4  # `which` bits of check_crcs
LIB_MIN = 64  # shorter spans: the tables (a call costs more than it saves)


def _load_lib() -> bool:
    """Make zlib-ng's CRC-32 resolvable by the compiled code; False without the package."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return False
    llvm.load_library_permanently(zlib_ng.__file__)
    return True


HAVE_LIB = _load_lib()
# The two kernels that may call the library are cached only when it is there: a cache
# written with the call would not load where the symbol is missing, and one written
# without it must never stand in for the fast one.
_lib_jit = njit(cache=HAVE_LIB)
if HAVE_LIB:
    # uint32_t zng_crc32(uint32_t crc, const uint8_t *buf, uint32_t len)
    lib_crc32 = types.ExternalFunction("zng_crc32", types.uint32(types.uint32, types.uintp,
                                                                 types.uint32))
else:
    @njit(cache=True)
    def lib_crc32(crc, addr, n):  # never called: use_lib is False without the library
        return crc


@njit(cache=True, inline="always")
def _slice16(c, t, b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15):
    c ^= b0 | (b1 << 8) | (b2 << 16) | (b3 << 24)
    return (t[15, c & 0xFF] ^ t[14, (c >> 8) & 0xFF] ^ t[13, (c >> 16) & 0xFF]
            ^ t[12, c >> 24] ^ t[11, b4] ^ t[10, b5] ^ t[9, b6] ^ t[8, b7] ^ t[7, b8]
            ^ t[6, b9] ^ t[5, b10] ^ t[4, b11] ^ t[3, b12] ^ t[2, b13] ^ t[1, b14]
            ^ t[0, b15])


@njit(cache=True, inline="always")
def _bytewise(buf, p, e, c, t):
    """Finish a reflected CRC register over buf[p:e] a byte at a time (table row 0)."""
    while p < e:
        c = t[0, (c ^ buf[p]) & 0xFF] ^ (c >> 8)
        p += 1
    return c


@njit(cache=True)
def crc32_run(buf, p, e, c, t):
    """Continue a reflected CRC-32 register `c` over buf[p:e] (slicing-by-16)."""
    while p + 16 <= e:
        c = _slice16(c, t, int(buf[p]), int(buf[p + 1]), int(buf[p + 2]), int(buf[p + 3]),
                     buf[p + 4], buf[p + 5], buf[p + 6], buf[p + 7], buf[p + 8], buf[p + 9],
                     buf[p + 10], buf[p + 11], buf[p + 12], buf[p + 13], buf[p + 14],
                     buf[p + 15])
        p += 16
    return _bytewise(buf, p, e, c, t)


@njit(cache=True)
def crc32_masked(buf, p, e, c, t, tmpl, k, toff):
    """Continue over buf[p:e] with template row k (from column toff) ORed in."""
    m = tmpl[k, toff:]
    j = 0
    while p + j + 16 <= e:
        q = p + j
        c = _slice16(c, t, int(buf[q] | m[j]), int(buf[q + 1] | m[j + 1]),
                     int(buf[q + 2] | m[j + 2]), int(buf[q + 3] | m[j + 3]),
                     buf[q + 4] | m[j + 4], buf[q + 5] | m[j + 5], buf[q + 6] | m[j + 6],
                     buf[q + 7] | m[j + 7], buf[q + 8] | m[j + 8], buf[q + 9] | m[j + 9],
                     buf[q + 10] | m[j + 10], buf[q + 11] | m[j + 11],
                     buf[q + 12] | m[j + 12], buf[q + 13] | m[j + 13],
                     buf[q + 14] | m[j + 14], buf[q + 15] | m[j + 15])
        j += 16
    while p + j < e:
        c = t[0, (c ^ (buf[p + j] | m[j])) & 0xFF] ^ (c >> 8)
        j += 1
    return c


@njit(cache=True)
def crc16_run(buf, p, e, c, t):
    """Continue a reflected CRC-16 register over buf[p:e] (slicing-by-8)."""
    while p + 8 <= e:
        c ^= int(buf[p]) | (int(buf[p + 1]) << 8)
        c = (t[7, c & 0xFF] ^ t[6, c >> 8] ^ t[5, buf[p + 2]] ^ t[4, buf[p + 3]]
                ^ t[3, buf[p + 4]] ^ t[2, buf[p + 5]] ^ t[1, buf[p + 6]] ^ t[0, buf[p + 7]])
        p += 8
    return _bytewise(buf, p, e, c, t)


@njit(cache=True)
def _le(buf, p, n):
    v = 0
    for k in range(n - 1, -1, -1):
        v = (v << 8) | int(buf[p + k])
    return v


@njit(cache=True)
def _be(buf, p, n):
    v = 0
    for k in range(n):
        v = (v << 8) | int(buf[p + k])
    return v


@_lib_jit
def icrc_of(buf, b, lo, info, i, tmpl, tlen, t32, use_lib):
    """The ICRC of frame i (masked per its encapsulation), or -1 if unplaceable."""
    at = info[ICRC_AT, i]
    bth = lo[L_BTH, i]
    if at < 0 or bth < 0:
        return -1
    kind = info[CRC_KIND, i]
    hdr_end = bth + SZ_BTH
    if kind == CRC_NATIVE or kind == CRC_NATIVE_GRH:
        s = lo[L_LRH, i]
        c = crc32_masked(buf, b + s, b + hdr_end, ONES32, t32, tmpl, kind, 0)
    elif kind == CRC_ROCE1:
        s = lo[L_GRH, i]
        c = crc32_masked(buf, b + s, b + hdr_end, STANDIN_CRC, t32, tmpl, kind, 0)
    elif kind == CRC_ROCE2_V4:
        ip, udp = lo[L_IP, i], lo[L_UDP, i]
        if udp == ip + SZ_IP:  # no options: the template covers IP, UDP and BTH at once
            c = crc32_masked(buf, b + ip, b + hdr_end, STANDIN_CRC, t32, tmpl, kind, 0)
        else:
            c = crc32_masked(buf, b + ip, b + ip + SZ_IP, STANDIN_CRC, t32, tmpl, kind, 0)
            c = crc32_run(buf, b + ip + SZ_IP, b + udp, c, t32)  # options: invariant
            c = crc32_masked(buf, b + udp, b + hdr_end, c, t32, tmpl, kind, SZ_IP)
    else:
        s = lo[L_IPV6, i]
        c = crc32_masked(buf, b + s, b + hdr_end, STANDIN_CRC, t32, tmpl, kind, 0)
    if use_lib and at - hdr_end >= LIB_MIN:
        addr = buf.ctypes.data + b + hdr_end
        return np.int64(lib_crc32(c ^ ONES32, addr, at - hdr_end)) & ONES32
    c = crc32_run(buf, b + hdr_end, b + at, c, t32)
    return c ^ ONES32


@_lib_jit
def check_crcs(buf, doff, lo, info, tmpl, tlen, t32, t16, icrc_st, vcrc_st, lp_st,
               icrc_val, vcrc_val, which, use_lib):
    """Status (CrcStatus) and wire value of every frame's ICRC, VCRC and LPCRC
    (those whose bit is set in `which`; the others stay NOT_PRESENT)."""
    for i in range(doff.shape[0]):
        b = doff[i]
        icrc_st[i] = NOT_PRESENT
        vcrc_st[i] = NOT_PRESENT
        lp_st[i] = NOT_PRESENT
        icrc_val[i] = 0
        vcrc_val[i] = 0
        c = icrc_of(buf, b, lo, info, i, tmpl, tlen, t32, use_lib) if which & ICRC else -1
        if c >= 0:
            at = info[ICRC_AT, i]
            icrc_st[i] = GOOD if c == _le(buf, b + at, ICRC_LEN) else BAD
            icrc_val[i] = _be(buf, b + at, ICRC_LEN)
        v = info[VCRC_AT, i]
        if v >= 0 and which & VCRC:
            c = crc16_run(buf, b + info[IB_OFF, i], b + v, ONES16, t16) ^ ONES16
            vcrc_st[i] = GOOD if c == _le(buf, b + v, VCRC_LEN) else BAD
            vcrc_val[i] = _be(buf, b + v, VCRC_LEN)
        lp = info[LP_AT, i]
        if lp >= 0 and which & LPCRC:
            c = crc16_run(buf, b + lp, b + lp + LP_COVER, ONES16, t16) ^ ONES16
            lp_st[i] = GOOD if c == _be(buf, b + lp + LP_AT_FIELD, LP_BYTES) else BAD


def crc_arrays(n: int, pool: Pool | None = None) -> tuple[np.ndarray, ...]:
    """Output arrays for `check_crcs`: three statuses, the ICRC and VCRC values."""
    pool = pool or Pool()
    return tuple(pool.take(f"crc{k}", (n,), t) for k, t in enumerate(
        (np.uint8, np.uint8, np.uint8, np.uint32, np.uint16)))
