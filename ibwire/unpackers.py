"""Compiled per-layout unpackers for the per-packet path.

`Layout.unpack` walks the field list for every header it decodes; here each
layout is turned once into a function whose body is one `int.from_bytes` and a
dict display with the layout's shifts and masks written in as constants. The
source text is generated from the layout's own fields (never from input bytes),
as `collections.namedtuple` and `dataclasses` do, so no offset is typed twice.

`compile_unpack(layout)` mirrors `Layout.unpack` exactly (wire fields in order,
then overlays); `compile_take(layout)` adds the derived fields the way
`Layout.derived_values` does. Tests pin both to the Construct codec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibwire.fields import Layout

Unpacker = Callable[..., dict[str, Any]]


def _items(layout: Layout) -> list[str]:
    total = layout.bits
    items = []
    for f in layout.wire:
        if f.kind == "int":
            shift = total - f.bit_offset - f.bits
            items.append(f"{f.name!r}: (w >> {shift}) & {f.mask:#x}" if shift
                         else f"{f.name!r}: w & {f.mask:#x}")
        else:
            o = f.bit_offset // 8
            items.append(f"{f.name!r}: chunk[{o}:{o + f.bits // 8}]")
    for f in layout.fields:
        if f.overlay is not None:
            shift = total - f.bit_offset - f.bits
            items.append(f"{f.name!r}: (w >> {shift}) & {f.mask:#x}")
    return items


def compile_unpack(layout: Layout) -> Unpacker:
    """`fn(data, offset=0) -> dict`: the same dict `layout.unpack` returns."""
    body = ", ".join(_items(layout))
    src = (f"def unpack(data, offset=0):\n"
           f"    chunk = data[offset:offset + {layout.size}]\n"
           f"    w = int.from_bytes(chunk, 'big')\n"
           f"    return {{{body}}}\n")
    namespace: dict[str, Any] = {}
    exec(compile(src, f"<unpack {layout.name}>", "exec"), namespace)  # noqa: S102 - layout text
    fn = namespace["unpack"]
    fn.__doc__ = f"Unpack {layout.name} ({layout.size} bytes), compiled from its layout."
    return fn


def compile_take(layout: Layout) -> Unpacker:
    """Unpack plus derived fields (what the decoder stores in a `Layer`)."""
    unpack = compile_unpack(layout)
    derived = tuple((f.name, f.derive) for f in layout.fields if f.derive is not None)
    if not derived:
        return unpack

    def take(data: bytes, offset: int = 0) -> dict[str, Any]:
        values = unpack(data, offset)
        for name, fn in derived:
            try:
                values[name] = fn(values)
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                values[name] = None
        return values
    return take
