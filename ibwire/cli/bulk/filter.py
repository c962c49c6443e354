"""Display filters as array operations, when every name they read is a column.

A compiled filter (`dfilter.evaluate` nodes) over integer fields that occur at
most once per frame — comparisons with constants, sets, `and`/`or`/`xor`/`not`,
field and protocol existence — becomes a boolean mask over a chunk. Anything
else (slices, strings, addresses, field-to-field tests, frame or column names)
returns None from `compile_mask` and the filter runs per packet. Rows the engine
handed over are always tested per packet; on the other rows the mask is checked
against the per-packet test for the first and last frame of each kind, and a
chunk where they disagree is tested per packet throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ibwire.cli.bulk.rows import Rows, groups, last_rows
from ibwire.cli.dfilter import evaluate as ev
from ibwire.cli.dfilter.ftypes import _cmp_plain
from ibwire.cli.filtering import PacketFilter
from ibwire.engines.tables import FIELD_ROWS, LAYOUTS
from ibwire.fields import BOOL, REGISTRY

Mask = Callable[[Rows], np.ndarray]
_INT_TYPES = {"uint8", "uint16", "uint24", "uint32", "uint64", BOOL}
# Protocols whose every layer the engine places on the rows it keeps.
_PROTOCOLS = {lay.protocol for lay in LAYOUTS} & {"eth", "vlan", "ip", "ipv6", "udp", "erf",
                                                  "infiniband", "infiniband_link"}
_RELS = {fn: name for name, fn in ev._RELS.items()}


class _NotColumns(Exception):
    pass


def compile_mask(filt: PacketFilter) -> Mask | None:
    if filt.extra:
        return None
    try:
        return _node(filt.filter._root)
    except _NotColumns:
        return None


def _field(f: Any) -> str:
    entry = REGISTRY.entries.get(getattr(f, "name", ""))
    if not isinstance(f, ev.Field) or f.slices or entry is None or f.name not in FIELD_ROWS \
            or entry.ftype not in _INT_TYPES \
            or any(LAYOUTS[r.layer].name == "vlan" for r in FIELD_ROWS[f.name]):
        raise _NotColumns
    return f.name


def _const(c: Any) -> int:
    if not isinstance(c, ev.Const) or type(c.vals[0]) is not int:
        raise _NotColumns
    return c.vals[0]


def _node(node: ev.Node) -> Mask:
    if isinstance(node, ev.Always):
        return lambda rows: np.ones(rows.n, bool)
    if isinstance(node, ev.Not):
        child = _node(node.child)
        return lambda rows: ~child(rows)
    if isinstance(node, (ev.And, ev.Or, ev.Xor)):
        kids = [_node(c) for c in node.children]
        op = np.logical_xor if isinstance(node, ev.Xor) else \
            np.logical_or if isinstance(node, ev.Or) else np.logical_and
        init = not isinstance(node, (ev.Or, ev.Xor))

        def combine(rows: Rows) -> np.ndarray:
            acc = np.full(rows.n, init)
            for k in kids:
                acc = op(acc, k(rows))
            return acc
        return combine
    if isinstance(node, ev.Exists):
        return _exists(node.name)
    if isinstance(node, ev.Compare):
        return _compare(node)
    if isinstance(node, ev.Member):
        return _member(node)
    raise _NotColumns


def _exists(name: str) -> Mask:
    if name in REGISTRY.protocols:
        if name not in _PROTOCOLS:
            raise _NotColumns
        layers = [lay.name for lay in LAYOUTS if lay.protocol == name]

        def has(rows: Rows) -> np.ndarray:
            out = np.zeros(rows.n, bool)
            for lay in layers:
                out |= rows.has_layer(lay)
            if name == "infiniband":
                out &= rows.int("ibwire.ib.offset") >= 0
            return out
        return has
    entry = REGISTRY.entries.get(name)
    if entry is not None and entry.field is None and entry.layout is not None:
        # A header's own name (`infiniband.aeth`): its bytes are there when it is.
        held = [lay.name for lay in LAYOUTS if lay.prefix == name]
        if not held:
            raise _NotColumns
        return lambda rows: np.logical_or.reduce([rows.has_layer(h) for h in held])
    field = _field(ev.Field(name, REGISTRY.entries[name].ftype, []) if name in REGISTRY
                   else None)
    return lambda rows: rows.present(field)


def _values(rows: Rows, name: str) -> tuple[np.ndarray, np.ndarray]:
    values = rows.int(name)
    if REGISTRY.entries[name].ftype == BOOL:
        values = (values != 0).astype(np.int64)
    return values, rows.present(name)


def _compare(node: ev.Compare) -> Mask:
    name, value = _field(node.lhs), _const(node.rhs)
    rel = _RELS.get(node.rel)
    if rel is None or node.cmp is not _cmp_plain:
        raise _NotColumns
    ops = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "lt": np.less,
           "ge": np.greater_equal, "le": np.less_equal}[rel]

    def test(rows: Rows) -> np.ndarray:
        v, present = _values(rows, name)
        return present & ops(v, value)
    return test


def _member(node: ev.Member) -> Mask:
    name = _field(node.lhs)
    singles = sorted(node.fixed) if node.fixed is not None else list(node.singles)
    if any(type(s) is not int for s in singles):
        raise _NotColumns
    ranges = [(_const(lo), _const(hi) if hi is not None else None) for lo, hi in node.ranges]

    def test(rows: Rows) -> np.ndarray:
        v, present = _values(rows, name)
        inside = np.isin(v, singles)
        for lo, hi in ranges:
            inside |= (v == lo) if hi is None else ((v >= lo) & (v <= hi))
        return present & inside
    return test


def display_mask(rows: Rows, filt: PacketFilter, mask: Mask | None) -> np.ndarray:
    """Which rows the filter shows: the array test where it is exact, else per packet."""
    out = np.zeros(rows.n, bool)
    per_packet = rows.slow.copy() if mask is not None else np.ones(rows.n, bool)
    if mask is not None:
        out = mask(rows)
        gid, first = groups([rows.linktype, rows.layer_bits()], rows.n)
        for i in np.unique(np.concatenate([first, last_rows(gid, len(first))])).tolist():
            if not rows.slow[i] and _test(rows, filt, i) != bool(out[i]):
                per_packet[:] = True
                break
    for i in np.flatnonzero(per_packet).tolist():
        out[i] = _test(rows, filt, i)
    return out


def _test(rows: Rows, filt: PacketFilter, i: int) -> bool:
    info = rows.info(i)
    return filt.matches(info, info.pkt)      # type: ignore[arg-type]
