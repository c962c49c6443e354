"""ICRC, VCRC and LPCRC (IBA Vol. 1 §7.8; RoCE Annex A16/A17).

ICRC is CRC-32/IEEE (zlib) over the packet with the variant fields replaced by
ones; VCRC and LPCRC are CRC-16 with polynomial 0x100B, reflected, init and final
XOR 0xFFFF. Both trailers go on the wire least-significant byte first, so
Wireshark's numbers (the wire bytes read big-endian) are byte-swapped values.

The mask functions take the exact header bytes of one packet and return the
bytes the ICRC covers; offsets come from the header layouts, never literals
spread through the code.
"""

from __future__ import annotations

import zlib
from enum import IntEnum

import crcmod

from ibwire.constants import ICRC_LEN, VCRC_LEN
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import IPV4, IPV6, UDP
from ibwire.headers.routing import GRH, LRH

# The polynomials: CRC-32/IEEE for the ICRC (zlib), CRC-16 0x100B for VCRC/LPCRC,
# both reflected, init and final XOR all ones.
ICRC_POLY, VCRC_POLY = 0x04C11DB7, 0x100B
ICRC_POLY_REFLECTED, VCRC_POLY_REFLECTED = 0xEDB88320, 0xD008

# crcmod's initCrc is the register value XOR the final XOR (0xFFFF ^ 0xFFFF).
_crc16 = crcmod.mkCrcFun(0x10000 | VCRC_POLY, initCrc=0, rev=True, xorOut=0xFFFF)


def reflected_table(poly_reflected: int) -> list[int]:
    """The 256-entry byte table of a reflected CRC, for table-driven kernels
    (Numba cannot call zlib or crcmod)."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly_reflected if c & 1 else c >> 1
        table.append(c)
    return table

LRH_STANDIN = b"\xff" * LRH.size  # RoCE has no LRH: the ICRC covers eight ones instead.


class CrcStatus(IntEnum):
    """Wireshark's checksum-status values, as tshark prints them for `*.status`."""

    BAD = 0
    GOOD = 1
    UNVERIFIED = 2
    NOT_PRESENT = 3


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def crc16(data: bytes) -> int:
    return _crc16(data)


def vcrc(data: bytes) -> int:
    """VCRC value over LRH..ICRC (native IB only)."""
    return _crc16(data)


def lpcrc(first4: bytes) -> int:
    """Link packet CRC over the first four bytes of a link packet."""
    return _crc16(first4)


def _set_ones(buf: bytearray, layout_offset: int, layout, name: str) -> None:
    off, nbytes, shift, mask = layout.offsets()[name]
    start = layout_offset + off
    word = int.from_bytes(buf[start:start + nbytes], "big") | (mask << shift)
    buf[start:start + nbytes] = word.to_bytes(nbytes, "big")


def _mask(buf: bytearray, off: int, layout) -> None:
    """Set the layout's ICRC-variant fields (`Layout.icrc_variant`) to ones."""
    for name in layout.icrc_variant:
        _set_ones(buf, off, layout, name)


def _mask_bth(buf: bytearray, bth_off: int) -> None:
    _mask(buf, bth_off, BTH)


def _mask_grh(buf: bytearray, grh_off: int) -> None:
    _mask(buf, grh_off, GRH)


def icrc_input_native(data: bytes, end: int, has_grh: bool) -> bytes:
    """Masked bytes of a native packet from the LRH up to `end` (the ICRC offset)."""
    buf = bytearray(data[:end])
    if has_grh:
        buf[:LRH.size] = LRH_STANDIN
        _mask_grh(buf, LRH.size)
        _mask_bth(buf, LRH.size + GRH.size)
    else:
        _mask(buf, 0, LRH)
        _mask_bth(buf, LRH.size)
    return bytes(buf)


def icrc_input_roce1(grh_to_pad: bytes) -> bytes:
    buf = bytearray(LRH_STANDIN + grh_to_pad)
    _mask_grh(buf, LRH.size)
    _mask_bth(buf, LRH.size + GRH.size)
    return bytes(buf)


def icrc_input_roce2(ip_header: bytes, udp_to_pad: bytes) -> bytes:
    """`ip_header` is the whole IPv4 (with any options) or IPv6 header."""
    buf = bytearray(LRH_STANDIN + ip_header + udp_to_pad)
    ip_off = LRH.size
    _mask(buf, ip_off, IPV4 if ip_header[0] >> 4 == 4 else IPV6)
    udp_off = ip_off + len(ip_header)
    _mask(buf, udp_off, UDP)
    _mask_bth(buf, udp_off + UDP.size)
    return bytes(buf)


def icrc_wire(masked: bytes) -> bytes:
    """The four ICRC bytes as they go on the wire."""
    return crc32(masked).to_bytes(ICRC_LEN, "little")


def vcrc_wire(data: bytes) -> bytes:
    return vcrc(data).to_bytes(VCRC_LEN, "little")


def lpcrc_wire(first4: bytes) -> bytes:
    return lpcrc(first4).to_bytes(VCRC_LEN, "little")   # the same CRC-16 width


# -- the per-packet fast path: mask the headers as one integer, CRC the rest in place.
def _ones(layout) -> bytes:
    buf = bytearray(layout.size)
    _mask(buf, 0, layout)
    return bytes(buf)


_BTH_VARIANT = _ones(BTH)
_GRH_VARIANT = _ones(GRH)
_HEAD_MASKS: dict[tuple[str, int], tuple[int, int]] = {}
_STANDIN_CRC = zlib.crc32(LRH_STANDIN)


def _head_mask(kind: str, ip_len: int = 0) -> tuple[int, int]:
    """(mask as an integer, its length) over the headers that hold variant fields."""
    key = (kind, ip_len)
    got = _HEAD_MASKS.get(key)
    if got is None:
        if kind == "native":
            head = _ones(LRH) + _BTH_VARIANT
        elif kind == "native_grh":
            head = LRH_STANDIN + _GRH_VARIANT + _BTH_VARIANT
        elif kind == "roce1":
            head = _GRH_VARIANT + _BTH_VARIANT
        else:
            ip = _ones(IPV4 if kind == "ipv4" else IPV6)
            head = ip.ljust(ip_len, b"\0") + _ones(UDP) + _BTH_VARIANT
        got = _HEAD_MASKS[key] = (int.from_bytes(head, "big"), len(head))
    return got


def icrc_fast(data: bytes, start: int, crc_end: int, kind: str, ip_len: int = 0) -> int | None:
    """The ICRC value of the packet whose covered bytes run from `start` to `crc_end`
    (`kind`: native, native_grh, roce1, or ipv4/ipv6 for RoCEv2 from the IP header
    of `ip_len` bytes). Equal to `crc32(icrc_input_*(...))`; None when the headers
    are cut short (callers then take the slow path, which defines that case)."""
    mask, n = _head_mask(kind, ip_len)
    if crc_end - start < n:
        return None
    head = (int.from_bytes(data[start:start + n], "big") | mask).to_bytes(n, "big")
    value = zlib.crc32(head, 0 if kind[0] == "n" else _STANDIN_CRC)
    return zlib.crc32(memoryview(data)[start + n:crc_end], value)
