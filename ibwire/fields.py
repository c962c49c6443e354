"""The field registry: every header layout is written here once, as data.

A `Layout` is an ordered list of `Field`s, each given by its width in bits; byte
and bit offsets follow from the order, so a layout reads like the tables of the
InfiniBand specification. Everything else derives from a layout:

* `Layout.struct`  - the Construct schema (a `BitStruct`) that parses and builds it;
* `Layout.unpack` / `Layout.pack` - a fast shift-and-mask codec over the same
  offsets, used on the per-packet path (tests pin it equal to the Construct codec);
* `Layout.offsets()` - (byte offset, byte count, shift, mask) rows for Numba kernels;
* `REGISTRY` (`ibwire.registry`) - every public field name (Wireshark's where
  Wireshark has the field, `infiniband.*`/`ibwire.*` otherwise) for `ibwire fields`,
  display filters and the Scapy layers; a layout registers its fields when built.

Fields that Wireshark exposes as masked views of a byte another field already
covers (the AETH syndrome byte and its parts) are `overlay` fields: they name an
absolute bit offset and take no space of their own. Fields computed from others
(credits from the AETH credit code) are `derived`: no bits, a function instead.
"""

from __future__ import annotations  # noqa: I001 - the re-exported names stay compact

import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import construct as cs

# Display types and the registry are re-exported: the layouts' users import them here.
from ibwire.field_types import (
    BOOL, BYTES, DEC, DEC_HEX, DOUBLE, ETHER, HEX, IPV4, IPV6, NONE, STRING, UINT8, UINT16,
    UINT24, UINT32, UINT64,
)
from ibwire.registry import REGISTRY

__all__ = [
    "BOOL", "BYTES", "DEC", "DEC_HEX", "DOUBLE", "ETHER", "HEX", "IPV4", "IPV6", "NONE", "STRING",
    "UINT8", "UINT16", "UINT24", "UINT32", "UINT64", "REGISTRY", "Field", "Layout", "Header",
    "uint", "flag", "rsv", "raw", "gid", "text", "overlay", "derived",
]

_INT_TYPES = {UINT8: 1, UINT16: 2, UINT24: 3, UINT32: 4, UINT64: 8}


def _auto_ftype(bits: int) -> str:
    if bits == 1:
        return BOOL
    for ft, n in _INT_TYPES.items():
        if bits <= 8 * n:
            return ft
    return BYTES


@dataclass(frozen=True)
class Field:
    """One field of a layout. `name` is the specification's name in snake_case."""

    name: str
    bits: int
    label: str = ""
    ftype: str = ""            # display type; default from the width
    base: str = DEC
    wsname: str | None = ""    # public name; "" = "<layout prefix>.<name>", None = none
    values: Mapping[int, str] | None = None
    reserved: bool = False
    kind: str = "int"          # int | bytes | ipv6 | ipv4 | ether | string
    overlay: int | None = None  # absolute bit offset for overlay fields
    derive: Callable[[Mapping[str, Any]], Any] | None = None
    present: Callable[[Mapping[str, Any]], bool] | None = None
    bit_offset: int = -1       # filled in by Layout

    @property
    def public(self) -> bool:
        return self.wsname is not None

    @property
    def offset(self) -> int:
        """Byte offset of the first byte holding this field."""
        return self.bit_offset // 8

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    def describe(self, value: Any) -> str | None:
        """The value's name, where the field has named values."""
        if self.values is None or not isinstance(value, int):
            return None
        return self.values.get(value)


def uint(name: str, bits: int, label: str = "", **kw: Any) -> Field:
    return Field(name, bits, label or name, **kw)


def flag(name: str, label: str = "", **kw: Any) -> Field:
    kw.setdefault("ftype", BOOL)
    return Field(name, 1, label or name, **kw)


def rsv(name: str, bits: int, **kw: Any) -> Field:
    kw.setdefault("wsname", None)
    kind = "bytes" if bits % 8 == 0 and bits > 64 else "int"
    return Field(name, bits, "Reserved", reserved=True, kind=kind, **kw)


def raw(name: str, nbytes: int, label: str = "", **kw: Any) -> Field:
    return Field(name, nbytes * 8, label or name, ftype=BYTES, kind="bytes", **kw)


def gid(name: str, label: str = "", **kw: Any) -> Field:
    return Field(name, 128, label or name, ftype=IPV6, kind="ipv6", **kw)


def text(name: str, nbytes: int, label: str = "", **kw: Any) -> Field:
    return Field(name, nbytes * 8, label or name, ftype=STRING, kind="string", **kw)


def overlay(name: str, bit_offset: int, bits: int, label: str = "", **kw: Any) -> Field:
    return Field(name, bits, label or name, overlay=bit_offset, **kw)


def derived(name: str, fn: Callable[[Mapping[str, Any]], Any], label: str = "", **kw: Any) -> Field:
    return Field(name, 0, label or name, derive=fn, **kw)


_NOT_SET = object()


class Layout:
    """A fixed-size header or structure: an ordered list of fields."""

    def __init__(self, name: str, prefix: str | None, label: str, fields: Iterable[Field],
                 *, defaults: Mapping[str, Any] | None = None, register: bool = True,
                 protocol: str | None = None, icrc_variant: tuple[str, ...] = ()) -> None:
        self.name = name
        self.prefix = prefix
        self.label = label
        self.protocol = protocol or (prefix.split(".")[0] if prefix else name)
        self.defaults = dict(defaults or {})
        # Fields the ICRC treats as variant (set to ones in its input): routers and
        # switches may change them in flight (IBA §7.8.1; RoCE annexes A16/A17).
        self.icrc_variant = icrc_variant
        laid: list[Field] = []
        pos = 0
        for f in fields:
            ws = f.wsname
            if ws == "":
                ws = f"{prefix}.{f.name}" if prefix else None
            ft = f.ftype or _auto_ftype(f.bits)
            if f.derive is not None:
                laid.append(replace(f, wsname=ws, ftype=ft or UINT32))
                continue
            if f.overlay is not None:
                laid.append(replace(f, wsname=ws, ftype=ft, bit_offset=f.overlay))
                continue
            laid.append(replace(f, wsname=ws, ftype=ft, bit_offset=pos))
            pos += f.bits
        if pos % 8:
            raise ValueError(f"layout {name}: {pos} bits is not a whole number of bytes")
        self.bits = pos
        self.size = pos // 8
        self.fields: tuple[Field, ...] = tuple(laid)
        self.wire: tuple[Field, ...] = tuple(
            f for f in laid if f.derive is None and f.overlay is None)
        self.by_name: dict[str, Field] = {f.name: f for f in laid}
        if len(self.by_name) != len(laid):
            raise ValueError(f"layout {name}: duplicate field names")
        for f in self.wire:
            if f.kind != "int" and f.bit_offset % 8:
                raise ValueError(f"layout {name}: {f.name} is not byte aligned")
        self._struct: cs.Construct | None = None
        self._unpack: Callable[..., dict[str, Any]] | None = None
        self._values: Callable[..., dict[str, Any]] | None = None
        self._offsets: dict[str, tuple[int, int, int, int]] | None = None
        if register:
            REGISTRY.add_layout(self)

    # -- codecs ------------------------------------------------------------
    @property
    def struct(self) -> cs.Construct:
        """The Construct schema, derived from the field list."""
        if self._struct is None:
            parts = []
            for f in self.wire:
                if f.kind == "int":
                    sub = cs.BitsInteger(f.bits)
                else:
                    sub = cs.Bytewise(cs.Bytes(f.bits // 8))
                parts.append(f.name / sub)
            self._struct = cs.BitStruct(*parts)
        return self._struct

    def unpack(self, data: bytes, offset: int = 0) -> dict[str, Any]:
        """Decode `self.size` bytes at `offset` (caller checks the length)."""
        fn = self._unpack
        if fn is None:
            from ibwire.unpackers import compile_unpack
            # The instance attribute shadows this method from now on.
            fn = self._unpack = self.unpack = compile_unpack(self)  # type: ignore[method-assign]
        return fn(data, offset)

    def values_at(self, data: bytes, offset: int = 0) -> dict[str, Any]:
        """`unpack` plus the derived fields: what a decoded layer holds."""
        fn = self._values
        if fn is None:
            from ibwire.unpackers import compile_take
            fn = self._values = self.values_at = compile_take(self)  # type: ignore[method-assign]
        return fn(data, offset)

    def unpack_loop(self, data: bytes, offset: int = 0) -> dict[str, Any]:
        """The field-by-field reference codec the compiled `unpack` is tested against."""
        chunk = data[offset:offset + self.size]
        word = int.from_bytes(chunk, "big")
        total = self.bits
        out: dict[str, Any] = {}
        for f in self.wire:
            if f.kind == "int":
                out[f.name] = (word >> (total - f.bit_offset - f.bits)) & f.mask
            else:
                o = f.bit_offset // 8
                out[f.name] = chunk[o:o + f.bits // 8]
        for f in self.fields:
            if f.overlay is not None:
                out[f.name] = (word >> (total - f.bit_offset - f.bits)) & f.mask
        return out

    def pack(self, values: Mapping[str, Any]) -> bytes:
        """Encode; missing fields take the layout default or zero."""
        word = 0
        total = self.bits
        for f in self.wire:
            v = values.get(f.name, _NOT_SET)
            if v is _NOT_SET or v is None:
                v = self.defaults.get(f.name, 0 if f.kind == "int" else b"")
            if f.kind == "int":
                v = int(v) & f.mask
            else:
                v = int.from_bytes(_to_bytes(f, v), "big")
            word |= v << (total - f.bit_offset - f.bits)
        return word.to_bytes(self.size, "big")

    def derived_values(self, values: dict[str, Any]) -> None:
        """Add derived fields in place."""
        for f in self.fields:
            if f.derive is not None:
                try:
                    values[f.name] = f.derive(values)
                except (KeyError, TypeError, ValueError, ZeroDivisionError):  # as unpackers
                    values[f.name] = None

    def offsets(self) -> dict[str, tuple[int, int, int, int]]:
        """For bulk kernels: name -> (byte offset, byte count, right shift, mask)."""
        if self._offsets is not None:
            return self._offsets
        rows = {}
        for f in self.fields:
            if f.derive is not None or f.kind != "int":
                continue
            first = f.bit_offset // 8
            last = (f.bit_offset + f.bits - 1) // 8
            nbytes = last - first + 1
            shift = nbytes * 8 - (f.bit_offset - first * 8) - f.bits
            rows[f.name] = (first, nbytes, shift, f.mask)
        self._offsets = rows
        return rows

    def __call__(self, **values: Any) -> Header:
        unknown = set(values) - set(self.by_name)
        if unknown:
            raise TypeError(f"{self.name} has no field(s) {sorted(unknown)}")
        return Header(self, dict(values))

    def __repr__(self) -> str:
        return f"<Layout {self.name} {self.size} bytes>"


def _to_bytes(f: Field, v: Any) -> bytes:
    n = f.bits // 8
    if f.kind == "ipv6" and isinstance(v, str):
        v = ipaddress.IPv6Address(v).packed
    elif f.kind == "ipv4" and isinstance(v, str):
        v = ipaddress.IPv4Address(v).packed
    elif f.kind == "ether" and isinstance(v, str):
        v = bytes.fromhex(v.replace(":", "").replace("-", ""))
    elif f.kind == "string" and isinstance(v, str):
        v = v.encode()
    elif isinstance(v, int):
        v = v.to_bytes(n, "big")
    v = bytes(v)
    if len(v) > n:
        raise ValueError(f"{f.name}: {len(v)} bytes given, field holds {n}")
    return v.ljust(n, b"\0")


@dataclass
class Header:
    """A layout with values: what users build packets from (`BTH(opcode=0x11)`)."""

    layout: Layout
    values: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name in ("layout", "values"):
            raise AttributeError(name)
        if name in self.layout.by_name:
            v = self.values.get(name)
            if v is None:
                return self.layout.defaults.get(name, 0)
            return v
        raise AttributeError(f"{self.layout.name} has no field {name!r}")

    def bytes(self) -> bytes:
        return self.layout.pack(self.values)
