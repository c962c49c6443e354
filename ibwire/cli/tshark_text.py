"""Field values as text, the way `tshark -T fields` prints them.

Hex fields print zero-padded to the width of their registered type (an FT_UINT64
prints 16 digits even for a 32-bit wire field), decimal and dec-hex fields print
in decimal, booleans as 1/0, byte fields as unseparated hex, addresses in their
usual notation.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ibwire.fields import (
    BOOL,
    BYTES,
    DEC,
    DOUBLE,
    ETHER,
    HEX,
    IPV4,
    IPV6,
    NONE,
    REGISTRY,
    STRING,
    UINT8,
    UINT16,
    UINT24,
    UINT32,
    UINT64,
)

_HEX_DIGITS = {UINT8: 2, UINT16: 4, UINT24: 6, UINT32: 8, UINT64: 16}


def format_value(ftype: str, base: str, value: Any) -> str:
    """One value as tshark's `-T fields` prints it."""
    if value is None:
        return ""
    if ftype == NONE:
        return "1"   # a present subtree item (FT_NONE) prints as 1
    if ftype == BOOL:
        return "1" if value else "0"
    if ftype in _HEX_DIGITS:
        if isinstance(value, (bytes, bytearray)):
            value = int.from_bytes(value, "big")
        if base == HEX:
            return f"0x{value:0{_HEX_DIGITS[ftype]}x}"
        return str(value)
    if ftype == IPV6:
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            return str(ipaddress.IPv6Address(bytes(value)))
        return str(value)
    if ftype == IPV4:
        if isinstance(value, (bytes, bytearray)) and len(value) == 4:
            return str(ipaddress.IPv4Address(bytes(value)))
        return str(value)
    if ftype == ETHER:
        if isinstance(value, (bytes, bytearray)):
            return ":".join(f"{b:02x}" for b in value)
        return str(value)
    if ftype == STRING:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).split(b"\0", 1)[0].decode("utf-8", "replace")
        return str(value)
    if ftype == DOUBLE:
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, int) and ftype == BYTES:
        return f"{value:x}"
    return str(value)


def format_field(wsname: str, value: Any) -> str:
    """Format by public field name (type and base from the registry)."""
    entry = REGISTRY.entries.get(wsname)
    if entry is None:
        return format_value(BYTES if isinstance(value, (bytes, bytearray)) else DEC, DEC, value)
    return format_value(entry.ftype, entry.base, value)


def display_value(wsname: str, value: Any) -> str:
    """For trees and summaries: the tshark text plus the value's name, if any."""
    text = format_field(wsname, value)
    entry = REGISTRY.entries.get(wsname)
    if entry is not None and entry.field is not None:
        name = entry.field.describe(value)
        if name:
            return f"{name} ({text})"
    return text
