"""Turn a registry `Layout` into a Scapy `Packet` class.

The field list of every generated layer comes from `Layout.wire`; nothing here
names a header field. Byte-aligned integers of 8/16/24/32/64 bits get Scapy's
byte fields (ByteField, XShortField, X3BytesField, IntField, XLongField, ...),
sub-byte runs get BitFields, GIDs IP6Field, IPv4 addresses IPField, MACs
MACField, byte strings StrFixedLenField; `values` become enum fields and
`base` hex/dec picks the X... variant. A layer's Scapy name is the layout label.

Extras a header needs beyond its fixed bytes (trailers after the payload, ERF
extension headers) are passed in by the module that defines the layer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from scapy.fields import (
    BitEnumField,
    BitField,
    ByteEnumField,
    ByteField,
    Field,
    IntEnumField,
    IntField,
    IP6Field,
    IPField,
    LongEnumField,
    LongField,
    MACField,
    ShortEnumField,
    ShortField,
    StrFixedLenField,
    ThreeBytesField,
    X3BytesField,
    XBitField,
    XByteEnumField,
    XByteField,
    XIntField,
    XLongField,
    XShortEnumField,
    XShortField,
    XStrFixedLenField,
)
from scapy.packet import Packet

from ibwire.fields import DEC_HEX, HEX, REGISTRY, Header, Layout
from ibwire.fields import Field as IBField

# width -> (dec, hex, dec enum, hex enum); None where Scapy has no such class.
_BYTE_FIELDS: dict[int, tuple[Any, Any, Any, Any]] = {
    8: (ByteField, XByteField, ByteEnumField, XByteEnumField),
    16: (ShortField, XShortField, ShortEnumField, XShortEnumField),
    24: (ThreeBytesField, X3BytesField, None, None),
    32: (IntField, XIntField, IntEnumField, None),
    64: (LongField, XLongField, LongEnumField, None),
}

# Names a Scapy field cannot take: they are Packet attributes or methods.
_RESERVED_NAMES = frozenset(n for n in dir(Packet) if not n.startswith("__")) | \
    frozenset(getattr(Packet, "__slots__", ()))


class TrailerField(Field):
    """A value that sits after the layer's payload (pad, ICRC, VCRC).

    It takes no bytes where the field list puts it; the owning layer's
    `do_dissect` cuts it from the end and its `post_build` appends it. Values
    are the wire bytes (b"" = absent); an int is read as the wire bytes in
    big-endian order, which is how Wireshark displays these CRCs.
    """

    __slots__ = ["nbytes", "show_int"]

    def __init__(self, name: str, nbytes: int | None, show_int: bool = True) -> None:
        super().__init__(name, None, fmt="B")
        self.nbytes = nbytes      # None: variable (the pad)
        self.show_int = show_int

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        return s

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        return s, None

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if isinstance(x, int) and self.nbytes:
            return x.to_bytes(self.nbytes, "big")
        return x if x is None else bytes(x)

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        if x is None:
            return "None (computed on build)"
        if self.show_int and x:
            return f"0x{int.from_bytes(x, 'big'):0{2 * len(x)}x}"
        return repr(bytes(x))

    def i2len(self, pkt: Packet, x: Any) -> int:
        return 0


def scapy_name(f: IBField) -> str:
    """The Scapy field name for a layout field (a trailing _ where Packet owns the name)."""
    return f.name + "_" if f.name in _RESERVED_NAMES else f.name


def scapy_field(f: IBField, default: Any, enum: Any = None) -> Field:
    """One Scapy field for one layout field. `enum` names values the layout does not
    hold: a dict, or Scapy's (value -> name, name -> value) pair of callables for a
    table that may grow (the BTH opcodes)."""
    name = scapy_name(f)
    nbytes = f.bits // 8
    if f.kind == "ipv6":
        return IP6Field(name, _addr(default, ipaddress.IPv6Address, "::"))
    if f.kind == "ipv4":
        return IPField(name, _addr(default, ipaddress.IPv4Address, "0.0.0.0"))
    if f.kind == "ether":
        return MACField(name, default if isinstance(default, str) else "00:00:00:00:00:00")
    if f.kind == "string":
        return StrFixedLenField(name, default or b"", length=nbytes)
    if f.kind == "bytes":
        return XStrFixedLenField(name, default or b"", length=nbytes)
    hexa = f.base in (HEX, DEC_HEX)
    if enum is None and f.values:
        enum = dict(f.values)
    aligned = _BYTE_FIELDS.get(f.bits) if f.bit_offset % 8 == 0 else None
    if aligned is not None:
        dec_cls, hex_cls, enum_cls, xenum_cls = aligned
        if enum is None:
            return (hex_cls if hexa else dec_cls)(name, default)
        cls = (xenum_cls or enum_cls) if hexa else enum_cls
        if cls is not None:
            return cls(name, default, enum)
    if enum is not None:
        return BitEnumField(name, default, f.bits, enum)
    return (XBitField if hexa else BitField)(name, default, f.bits)


def _addr(default: Any, cls: Any, zero: str) -> str:
    if isinstance(default, (bytes, bytearray)) and default:
        return str(cls(bytes(default)))
    return default if isinstance(default, str) else zero


def fields_desc(layout: Layout, auto: Iterable[str] = (),
                overrides: Mapping[str, Field] | None = None,
                enums: Mapping[str, Any] | None = None) -> list[Field]:
    """Scapy fields for `layout.wire`. `auto` fields default to None (filled on
    build); `enums` names values that live in a table rather than in the layout
    (BTH opcodes); `overrides` replaces a field's Scapy form where a layout keeps
    a value the Scapy way cannot show (the ERF little-endian timestamp)."""
    auto = set(auto)
    overrides = overrides or {}
    enums = enums or {}
    out: list[Field] = []
    for f in layout.wire:
        if f.name in overrides:
            out.append(overrides[f.name])
            continue
        default = None if f.name in auto else layout.defaults.get(
            f.name, 0 if f.kind == "int" else None)
        out.append(scapy_field(f, default, enums.get(f.name)))
    return out


_CLASSES: dict[str, type[Packet]] = {}


def layer_class(layout: Layout, cls_name: str | None = None, *,
                bases: tuple[type, ...] = (), auto: Iterable[str] = (),
                extra_fields: Iterable[Field] = (), overrides: Mapping[str, Field] | None = None,
                enums: Mapping[str, Any] | None = None,
                namespace: Mapping[str, Any] | None = None) -> type[Packet]:
    """The Scapy class of `layout` (made once and cached by layout name).

    `bases` are mixins with behaviour (post_build, trailers); `extra_fields`
    follow the layout's fields (conditional or trailer fields)."""
    cached = _CLASSES.get(layout.name)
    if cached is not None:
        return cached
    ns: dict[str, Any] = {
        "name": layout.label,
        "fields_desc": fields_desc(layout, auto, overrides, enums) + list(extra_fields),
        "ib_layout": layout,
        "__module__": __name__,
        "__doc__": f"{layout.label} ({layout.size} bytes), generated from layout "
                   f"{layout.name!r}.",
    }
    ns.update(namespace or {})
    name = cls_name or _camel(layout.name)
    cls = type(Packet)(name, tuple(bases) + (Packet,), ns)
    _CLASSES[layout.name] = cls
    return cls


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def class_for(name: str) -> type[Packet]:
    """The Scapy class of a registered layout, generated on first use."""
    if name not in _CLASSES:
        layer_class(REGISTRY.layouts[name])
    return _CLASSES[name]


def layer_values(layer: Packet) -> dict[str, Any]:
    """A generated layer's values keyed by layout field name (for `Layout.pack`)."""
    layout: Layout = layer.ib_layout
    out: dict[str, Any] = {}
    for f in layout.wire:
        v = layer.getfieldval(scapy_name(f))
        out[f.name] = v
    return out


def to_header(layer: Packet) -> Header:
    """The library `Header` of a generated Scapy layer (for `ibwire.encode`)."""
    layout: Layout = layer.ib_layout
    return Header(layout, {k: v for k, v in layer_values(layer).items() if v is not None})


def patch(layout: Layout, data: bytes, name: str, value: int, at: int = 0) -> bytes:
    """`data` with one integer field of `layout` (starting at byte `at`) set to `value`."""
    off, nbytes, shift, mask = layout.offsets()[name]
    start = at + off
    word = int.from_bytes(data[start:start + nbytes], "big")
    word = (word & ~(mask << shift)) | ((value & mask) << shift)
    return data[:start] + word.to_bytes(nbytes, "big") + data[start + nbytes:]
