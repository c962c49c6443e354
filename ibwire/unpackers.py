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
# What Layout.derived_values turns into a None value.
_DERIVE_ERRORS = (KeyError, TypeError, ValueError, ZeroDivisionError)


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


def _compile(layout: Layout, with_derived: bool) -> Unpacker:
    body = ", ".join(_items(layout))
    lines = ["def unpack(data, offset=0):",
             f"    chunk = data[offset:offset + {layout.size}]",
             "    w = int.from_bytes(chunk, 'big')",
             f"    v = {{{body}}}"]
    namespace: dict[str, Any] = {"_ERRORS": _DERIVE_ERRORS}
    if with_derived:
        for i, f in enumerate(fl for fl in layout.fields if fl.derive is not None):
            namespace[f"_d{i}"] = f.derive
            lines += ["    try:", f"        v[{f.name!r}] = _d{i}(v)",
                      "    except _ERRORS:", f"        v[{f.name!r}] = None"]
    lines.append("    return v\n")
    exec(compile("\n".join(lines), f"<unpack {layout.name}>", "exec"),  # noqa: S102
         namespace)
    fn = namespace["unpack"]
    fn.__doc__ = f"Unpack {layout.name} ({layout.size} bytes), compiled from its layout."
    return fn


def compile_unpack(layout: Layout) -> Unpacker:
    """`fn(data, offset=0) -> dict`: the same dict `layout.unpack` returns."""
    return _compile(layout, False)


def compile_take(layout: Layout) -> Unpacker:
    """Unpack plus derived fields, as `Layout.derived_values` adds them (what the
    decoder stores in a `Layer`)."""
    return _compile(layout, True)
