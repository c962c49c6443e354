"""Literals, read by the type of the field they are compared with: numbers, booleans,
byte strings, IPv4/IPv6 networks, Ethernet addresses and strings."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from .errors import Bad
from .ftypes import DESC, INT_MAX, family
from .lexer import HEX_RE, Tok

INT_RE = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_BYTE_INT_RE = re.compile(r"0[xX][0-9a-fA-F]{2}\Z")
_U64 = 0xFFFFFFFFFFFFFFFF


def parse_int(s: str) -> int:
    if not INT_RE.match(s):
        raise Bad(f'"{s}" is not a valid number.')
    body = s.lstrip("+-")
    if len(body) > 20 and body[0] != "0":  # decimal past 2**64 (and past int()'s limit)
        raise Bad(f'"{s}" causes an integer overflow.')
    if body[:2] in ("0x", "0X"):
        v = int(body[2:], 16)
    elif body[:2] in ("0b", "0B"):
        v = int(body[2:], 2)
    elif len(body) > 1 and body[0] == "0":
        v = int(body, 8)
    else:
        v = int(body)
    if v > _U64:
        raise Bad(f'"{s}" causes an integer overflow.')
    return -v if s[0] == "-" else v


def parse_bytes(s: str) -> bytes | None:
    """`01:02:ff`, `01-02-ff`, `01.02.ff`, `0102ff`, `0xff`; None when not a byte string."""
    if _BYTE_INT_RE.match(s):
        return bytes([int(s[2:], 16)])
    seps = [c for c in ":-." if c in s]
    if len(seps) > 1:
        return None
    parts = s.split(seps[0]) if seps else [s]
    out = bytearray()
    for p in parts:
        if not HEX_RE.match(p) or (seps and len(p) > 2 and len(p) % 2):
            return None
        even = p[:len(p) - len(p) % 2]
        out += bytes.fromhex(even)
        if len(p) % 2:  # a trailing lone digit is a byte of its own, as in tshark
            out.append(int(p[-1], 16))
    return bytes(out)


def parse_net(s: str, bits: int) -> tuple[int, int]:
    name = "IPv4" if bits == 32 else "IPv6"
    cls = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
    addr, slash, plen = s.partition("/")
    try:
        if "%" in addr:
            raise ValueError(addr)
        value = int(cls(addr))
    except ValueError:
        raise Bad(f'"{s}" is not a valid hostname or {name} address.') from None
    if not slash:
        return value, bits
    if not plen.isdigit() or not plen.isascii():
        raise Bad(f'"{s}" is not a valid hostname or {name} address.')
    n = int(plen) if len(plen) <= 4 else 9999
    if n > bits:
        if bits == 32:
            raise Bad(f"Netmask bits in a CIDR IPv4 address should be <= 32, not {n}")
        raise Bad(f"Prefix in a IPv6 address should be <= 128, not {n}")
    return value, n


def typed_literal(ftype: str, tok: Tok, s: str, fname: str) -> Any:
    """The literal `s` (from `tok`) read as a value of `ftype`, compared with `fname`."""
    fam = family(ftype)
    data: bytes | None = tok.value if tok.kind in ("str", "chr") else None
    shown = data.decode("utf-8", "replace") if data is not None else s
    if ftype == "bool":
        if tok.kind == "chr":
            return int(data[0] != 0)  # type: ignore[index]
        if tok.kind == "word" and s.lower() in ("true", "false"):
            return int(s.lower() == "true")
        if tok.kind == "word" and INT_RE.match(s):
            return int(parse_int(s) != 0)
        raise Bad(f'"{shown}" cannot be found among the possible values for {fname}.')
    if fam == "int":
        if tok.kind == "chr":
            return data[0]  # type: ignore[index]
        if tok.kind == "str":
            raise Bad(f'{DESC[ftype]} cannot be converted from a string ("{shown}").')
        v = parse_int(s)
        if v > INT_MAX[ftype]:
            raise Bad(f'"{s}" too big for this field, maximum {INT_MAX[ftype]}.')
        return v
    if fam == "double":
        if tok.kind == "word" and _FLOAT_RE.match(s):
            return float(s)
        if tok.kind == "chr":
            return float(data[0])  # type: ignore[index]
        raise Bad(f'"{shown}" is not a valid number.')
    if fam in ("ipv4", "ipv6"):
        if tok.kind != "word":
            raise Bad(f'{DESC[ftype]} cannot be converted from a string ("{shown}").')
        return parse_net(s, 32 if fam == "ipv4" else 128)
    if fam == "string":
        return data if data is not None else s.encode()
    if ftype == "ether":
        if data is not None:
            raise Bad(f'{DESC[ftype]} cannot be converted from a string ("{shown}").')
        b = parse_bytes(s)
        if b is None:
            raise Bad(f'"{s}" is not a valid Ethernet address.')
        if len(b) != 6:
            few = "few" if len(b) < 6 else "many"
            raise Bad(f'"{s}" contains too {few} bytes to be a valid Ethernet address.')
        return b
    if data is not None:  # bytes, protocol, slices
        return data
    b = parse_bytes(s)
    if b is None:
        raise Bad(f'"{s}" is not a valid byte string.')
    return b
