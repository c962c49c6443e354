"""Field types: their families, how packet values are normalized, and how they order."""

from __future__ import annotations

import ipaddress
import operator
from collections.abc import Callable
from typing import Any

INT_MAX = {"uint8": 0xFF, "uint16": 0xFFFF, "uint24": 0xFFFFFF,
           "uint32": 0xFFFFFFFF, "uint64": 0xFFFFFFFFFFFFFFFF}
DESC = {"uint8": "Unsigned integer (1 byte)", "uint16": "Unsigned integer (2 bytes)",
        "uint24": "Unsigned integer (3 bytes)", "uint32": "Unsigned integer (4 bytes)",
        "uint64": "Unsigned integer (8 bytes)", "bool": "Boolean",
        "ipv4": "IPv4 address", "ipv6": "IPv6 address",
        "ether": "Ethernet or other MAC address", "bytes": "Byte sequence",
        "string": "Character string", "double": "Floating point (double-precision)",
        "protocol": "Protocol", "none": "Label"}
_FAMILY = {**{t: "int" for t in INT_MAX}, "bool": "int", "bytes": "bytes",
           "ether": "bytes", "protocol": "bytes", "string": "string",
           "ipv4": "ipv4", "ipv6": "ipv6", "double": "double"}
SLICEABLE = {"bytes", "ether", "protocol", "string", "ipv4", "ipv6"}


def family(ftype: str) -> str | None:
    return _FAMILY.get(ftype)  # None: presence only ("none" and unknown types)


# --------------------------------------------------------------------------- normalizers
def _norm_int(v: Any) -> int | None:
    try:
        return operator.index(v)
    except TypeError:
        return None


def _norm_bool(v: Any) -> int | None:
    i = _norm_int(v)
    return None if i is None else int(i != 0)


def _norm_float(v: Any) -> float | None:
    if isinstance(v, (str, bytes, bytearray)):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def norm_bytes(v: Any) -> bytes | None:
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    return None


def _norm_ip(bits: int) -> Callable[[Any], tuple[int, int] | None]:
    cls = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address

    def norm(v: Any) -> tuple[int, int] | None:
        if isinstance(v, (bytes, bytearray, memoryview)) and len(v) == bits // 8:
            return int.from_bytes(v, "big"), bits
        if isinstance(v, str):
            try:
                v = cls(v)
            except ValueError:
                return None
        if isinstance(v, cls):
            return int(v), bits
        return None
    return norm


def normalizer(ftype: str) -> Callable[[Any], Any]:
    fam = family(ftype)
    if ftype == "bool":
        return _norm_bool
    if fam == "int":
        return _norm_int
    if fam == "double":
        return _norm_float
    if fam == "ipv4":
        return _norm_ip(32)
    if fam == "ipv6":
        return _norm_ip(128)
    return norm_bytes


# --------------------------------------------------------------------------- ordering
def _cmp_plain(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _cmp_bytes(a: bytes, b: bytes) -> int:
    if len(a) != len(b):
        return 1 if len(a) > len(b) else -1
    return (a > b) - (a < b)


def _cmp_net(a: tuple[int, int], b: tuple[int, int], bits: int) -> int:
    shift = bits - min(a[1], b[1])
    x, y = a[0] >> shift, b[0] >> shift
    return (x > y) - (x < y)


def comparator(ftype: str) -> Callable[[Any, Any], int]:
    if ftype == "ipv4":
        return lambda a, b: _cmp_net(a, b, 32)
    if ftype == "ipv6":
        return lambda a, b: _cmp_net(a, b, 128)
    if family(ftype) == "bytes":
        return _cmp_bytes
    return _cmp_plain
