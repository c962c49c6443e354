"""Field helpers for MAD layouts (one line per specification row).

These are `ibwire.fields`' helpers (`uint`, `rsv`, `raw`, `gid`, `text`, `overlay`,
`derived`, `Layout`) with the defaults MAD tables need: labels made from the field
name (`port_guid` -> `PortGuid`), integers shown in hex with the narrowest type,
and the public name given as a suffix (see below). `mad_uint_dec` shows decimal
(counters), `mad_reserved` is reserved bytes Wireshark shows as
`infiniband.reserved`, `mad_reserved_bits` reserved bits it does not show.

MAD layouts are written like the IBA tables they come from. Their public names
follow Wireshark's MAD naming: `<prefix>.<field name without underscores>` by
default (`system_image_guid` -> `infiniband.nodeinfo.systemimageguid`), a
suffix (`ws="m_key"`, `ws="status.busy"`) or a full name (`ws="infiniband.smplid.mkey"`)
where Wireshark spells it otherwise, and `ws=None` for bytes Wireshark does not show.

Why MAD layouts have no layout prefix: a layout prefix makes `pkt["<prefix>"]`
return that layer's bytes, but Wireshark's container items (`infiniband.mad`,
`infiniband.smplid`, ...) span other ranges than our layers; the MAD decoder adds
those containers as packet extras instead (see `dispatch.py`).

Every MAD layout built here is remembered in `MAD_LAYOUTS`, so the payload
encoder can recognise the layers it owns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ibwire.fields import (
    BYTES,
    DEC,
    HEX,
    IPV4,
    UINT8,
    UINT16,
    UINT24,
    UINT32,
    UINT64,
    Field,
    Layout,
    derived,
    gid,
    overlay,
    raw,
    rsv,
    text,
    uint,
)

RESERVED = "infiniband.reserved"   # Wireshark's name for every reserved byte range
MAD_LAYOUTS: dict[str, Layout] = {}


def _ft(bits: int) -> str:
    for limit, ft in ((8, UINT8), (16, UINT16), (24, UINT24), (32, UINT32)):
        if bits <= limit:
            return ft
    return UINT64 if bits <= 64 else BYTES


def _label(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def mad_uint(name: str, bits: int, ws: str | None = "", **kw: Any) -> Field:
    """An unsigned field, shown in hex (Wireshark's default for MAD fields)."""
    kw.setdefault("base", HEX)
    kw.setdefault("ftype", _ft(bits))
    return uint(name, bits, kw.pop("label", _label(name)), wsname=ws, **kw)


def mad_uint_dec(name: str, bits: int, ws: str | None = "", **kw: Any) -> Field:
    """An unsigned field shown in decimal (counters, LIDs in CM)."""
    return mad_uint(name, bits, ws, base=DEC, **kw)


def mad_reserved(nbytes: int, ws: str | None = RESERVED) -> Field:
    """Reserved whole bytes; Wireshark shows them as `infiniband.reserved`."""
    return replace(rsv("reserved", nbytes * 8, ftype=BYTES, wsname=ws), kind="bytes")


def mad_reserved_bits(bits: int) -> Field:
    """Reserved bits Wireshark does not show."""
    kind = "bytes" if bits > 64 else "int"
    return replace(rsv("reserved", bits, ftype=BYTES if kind == "bytes" else _ft(bits)),
                   kind=kind)


def mad_raw(name: str, nbytes: int, ws: str | None = "", **kw: Any) -> Field:
    return raw(name, nbytes, kw.pop("label", _label(name)), wsname=ws, **kw)


def mad_gid(name: str, ws: str | None = "", **kw: Any) -> Field:
    return gid(name, kw.pop("label", _label(name)), wsname=ws, **kw)


def mad_text(name: str, nbytes: int, ws: str | None = "", **kw: Any) -> Field:
    return text(name, nbytes, kw.pop("label", _label(name)), wsname=ws, **kw)


def mad_overlay(name: str, bit: int, bits: int, ws: str | None = "", **kw: Any) -> Field:
    """A masked view of bits another field of the layout already covers."""
    kw.setdefault("base", HEX)
    kw.setdefault("ftype", _ft(bits))
    return overlay(name, bit, bits, kw.pop("label", _label(name)), wsname=ws, **kw)


def mad_derived(name: str, fn: Callable[[Mapping[str, Any]], Any], ws: str | None = "",
                **kw: Any) -> Field:
    """A value computed from other fields (no bits of its own)."""
    kw.setdefault("ftype", UINT32)
    return derived(name, fn, kw.pop("label", _label(name)), wsname=ws, **kw)


def ipv4_tail(name: str, of: str, when: Callable[[Mapping[str, Any]], bool],
              ws: str | None = "") -> Field:
    """The IPv4 address in the last 4 bytes of a 16-byte field (IPv4-mapped GIDs)."""
    return mad_derived(name, lambda v: bytes(v[of][12:16]), ws, ftype=IPV4, present=when)


def _public(prefix: str | None, f: Field) -> str | None:
    ws = f.wsname
    if ws is None:
        return None
    if ws == "":
        return f"{prefix}.{f.name.replace('_', '')}" if prefix else None
    if ws.startswith(("infiniband.", "infiniband_", "ibwire.")):
        return ws
    return f"{prefix}.{ws}" if prefix else None


def named(prefix: str | None, fields: list[Field]) -> list[Field]:
    """Resolve the public names of a field list (to reuse it under other layouts)."""
    return [replace(f, wsname=_public(prefix, f)) for f in fields]


def mad_layout(name: str, label: str, prefix: str | None, fields: list[Field],
      size: int | None = None, register: bool = True,
      container: str | None = None) -> Layout:
    """Build a MAD layout: public names filled in, duplicate `reserved` names numbered,
    and (with `size`) unnamed reserved bytes appended up to `size` bytes. `container`
    is the Wireshark subtree name covering exactly this layout's bytes, if any."""
    out: list[Field] = []
    seen: dict[str, int] = {}
    bits = 0
    for f in fields:
        n = seen.get(f.name, 0)
        seen[f.name] = n + 1
        fname = f.name if n == 0 else f"{f.name}_{n + 1}"
        out.append(replace(f, name=fname, wsname=_public(prefix, f)))
        if f.overlay is None and f.derive is None:
            bits += f.bits
    if size is not None:
        if bits > size * 8:
            raise ValueError(f"layout {name}: {bits} bits exceed {size} bytes")
        if bits < size * 8:
            n = seen.get("reserved", 0)
            out.append(replace(mad_reserved_bits(size * 8 - bits), name="reserved" if n == 0 else
                               f"reserved_{n + 1}"))
    lay = Layout(name, container, label, out, protocol="infiniband", register=register)
    MAD_LAYOUTS[name] = lay
    return lay


_DYNAMIC: dict[tuple[str, int], Layout] = {}


def filler(kind: str, nbytes: int) -> Layout:
    """Variable-size byte ranges as fixed layouts, cached per size: `pad` (reserved
    space after an attribute, no public name), `raw` (bytes we could not decode,
    `infiniband.raw`) and `data` (opaque attribute data, `infiniband.mad.rawdata`)."""
    key = (kind, nbytes)
    lay = _DYNAMIC.get(key)
    if lay is None:
        if kind == "pad":
            fld = mad_reserved_bits(nbytes * 8)
        elif kind == "raw":
            fld = mad_raw("undecoded", nbytes, "infiniband.raw", label="Undecoded bytes")
        else:
            fld = mad_raw("data", nbytes, "infiniband.mad.rawdata", label="Attribute data")
        lay = mad_layout(f"mad_{kind}{nbytes}", f"MAD {kind} ({nbytes} bytes)", None, [fld],
                         register=False)
        _DYNAMIC[key] = lay
    return lay


def is_mad_layout(layout: Layout) -> bool:
    return MAD_LAYOUTS.get(layout.name) is layout


__all__ = ["DEC", "HEX", "MAD_LAYOUTS", "RESERVED", "UINT8", "UINT16", "UINT24", "UINT32",
           "UINT64", "filler", "ipv4_tail", "is_mad_layout", "mad_derived", "mad_gid",
           "mad_layout", "mad_overlay", "mad_raw", "mad_reserved", "mad_reserved_bits",
           "mad_text", "mad_uint", "mad_uint_dec", "named"]
