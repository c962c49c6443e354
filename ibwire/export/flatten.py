"""JSON documents of the analyses (rc, credits, fabric) as flat Arrow tables.

Every list of objects in a document becomes a table named by its path
(`credits_pfc_intervals`); nested objects become columns joined by `_`
(`requester_endpoint`, `naks_psn_seq_err`); a list of objects inside a row becomes
its own table whose `parent_row` is the row it belongs to. Columns are plain
Parquet types only: a column with no value at all is written as a null string, a
value that mixes types or holds nested lists of lists as its JSON text.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa


def tables(doc: dict[str, Any], prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Rows of every table in the document: {table name: rows}."""
    out: dict[str, list[dict[str, Any]]] = {}
    _walk(doc, prefix, out)
    return out


def _is_rows(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _walk(node: Any, name: str, out: dict[str, list[dict[str, Any]]]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _walk(v, f"{name}_{k}", out)
    elif _is_rows(node):
        rows = out.setdefault(name, [])
        for r in node:
            rows.append(_row(r, name, len(rows), out))


def _row(rec: dict[str, Any], table: str, index: int, out: dict[str, list[dict[str, Any]]],
         ) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    stack = [("", rec)]
    while stack:
        pre, d = stack.pop()
        for k, v in d.items():
            col = f"{pre}{k}"
            if isinstance(v, dict) and not _mapping(v):
                stack.append((col + "_", v))
            elif _is_rows(v):
                child = out.setdefault(f"{table}_{col}", [])
                for r in v:
                    child.append({"parent_row": index, **_row(r, f"{table}_{col}",
                                                             len(child), out)})
            elif isinstance(v, dict | list) and not _scalars(v):
                flat[col] = json.dumps(v, sort_keys=True)
            else:
                flat[col] = v
    return flat


def _mapping(d: dict[str, Any]) -> bool:
    """A dict keyed by data (LIDs, VLs), not by names: kept as JSON text."""
    return any(k[:1].isdigit() for k in d)


def _scalars(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, int | float | str | bool) for x in v)


def arrow(rows: list[dict[str, Any]]) -> pa.Table:
    """The rows as a table of plain types (column order: first appearance)."""
    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r))
    cols = {}
    for n in names:
        values = [r.get(n) for r in rows]
        try:
            arr = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arr = pa.array([None if v is None else json.dumps(v) for v in values], pa.string())
        if pa.types.is_null(arr.type) or (pa.types.is_list(arr.type)
                                          and pa.types.is_null(arr.type.value_type)):
            arr = pa.array([None if v is None else json.dumps(v) for v in values], pa.string())
        cols[n] = arr
    return pa.table(cols)
