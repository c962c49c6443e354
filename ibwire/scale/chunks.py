"""Index record boundaries and decode chunks of a capture into the RC engine's columns.

A task is a span of records of one capture: (capture, first record, count, byte
offset). `tasks` indexes each file once with the record kernels
(`ibwire.engines.span`); a worker reads its own bytes and builds the columns with
the bulk engines (`rc_bulk.chunk_columns`: only MAD frames are decoded per packet).
A file the kernels cannot read cleanly (damage) is one whole-file task read by
`rc_columns` itself, so bad input is reported as by `ibwire rc`.

Endpoints travel as small integers into a per-chunk label table (`ENDPOINTS`): the
shuffle moves 4 bytes per endpoint, and the partition numbers them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any
from zlib import crc32

import numpy as np

from ibwire.analysis.rc_input import COLUMNS, ENDPOINTS

CAPTURE = "ibwire.capture"          # index of the capture (point) a row comes from
PAIR = "ibwire.pair"                # hash of the unordered endpoint pair
WHOLE = -1                          # Task.count of a file read whole (not clean)
_SIDES = ("ibwire.src", "ibwire.dst")


@dataclass(frozen=True)
class Task:
    capture: int
    path: str
    start: int                      # 0-based first record
    count: int                      # records; WHOLE: the whole file, the reference way
    offset: int = -1                # byte offset of the first record (-1: scan to it)

    @property
    def span(self) -> tuple[int, int, int]:
        return self.start, self.count, self.offset


def tasks(paths: list[str], chunk: int, client: Any = None) -> list[Task]:
    """Spans of at most `chunk` records, capture by capture (one record-kernel pass
    over each file, no decoding; files indexed in parallel on the client's workers)."""
    from ibwire.engines.span import record_index, spans
    from ibwire.scale.runner import map_ordered

    out: list[Task] = []
    indexes = map_ordered(partial(record_index, every=chunk), paths, client)
    for c, (path, idx) in enumerate(zip(paths, indexes)):
        if not idx.clean:
            out.append(Task(c, path, 0, WHOLE))
            continue
        out += [Task(c, path, *s) for s in spans(idx, chunk)]
    return out


def decode(task: Task) -> dict[str, np.ndarray]:
    """The RC columns of the task's records (frame numbers as in the whole capture),
    endpoints numbered into the task's own `ENDPOINTS` labels, with the pair hash."""
    from ibwire.analysis import bulk_input as bi
    from ibwire.analysis.rc_bulk import FIELDS, chunk_columns
    from ibwire.analysis.rc_input import rc_columns

    if task.count == WHOLE:
        cols = rc_columns(task.path)
        labels = list(cols.pop(ENDPOINTS))
    else:
        numbers: dict[str, int] = {}
        parts = [chunk_columns(ch, numbers) for ch in bi.chunks(task.path, FIELDS,
                                                                span=task.span)]
        cols = bi.concat(parts, dict(COLUMNS))
        labels = list(numbers)
    cols[ENDPOINTS] = np.asarray(labels, dtype=object)
    cols[CAPTURE] = np.full(len(cols["frame.number"]), task.capture, np.int32)
    cols[PAIR] = pair_hash(cols["ibwire.src"], cols["ibwire.dst"], cols[ENDPOINTS])
    return cols


def pair_hash(src: np.ndarray, dst: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """A stable hash of the unordered endpoint pair (of the labels, so every chunk
    agrees): both directions of a connection (and its CM exchange on QP1, between
    the same two ports) hash alike. Hashed once per distinct pair."""
    if len(src) == 0:
        return np.zeros(0, np.uint32)
    n = max(len(labels), 1)
    code = src.astype(np.int64) * n + dst.astype(np.int64)
    uniq, inverse = np.unique(code, return_inverse=True)
    hashes = np.empty(len(uniq), np.uint32)
    for i, u in enumerate(uniq.tolist()):
        s, d = str(labels[u // n]), str(labels[u % n])
        a, b = (s, d) if s <= d else (d, s)
        hashes[i] = crc32(f"{a}|{b}".encode())
    return hashes[inverse.ravel()]


def split(cols: dict[str, np.ndarray], parts: int) -> list[dict[str, np.ndarray]]:
    """The shuffle's map side: the rows of each partition (pair hash mod parts); each
    piece keeps the chunk's label table (small)."""
    dest = cols[PAIR] % parts
    return [{k: v if k == ENDPOINTS else v[dest == p] for k, v in cols.items()}
            for p in range(parts)]


def concat(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The shuffle's reduce side: one partition's rows in (capture, frame) order,
    endpoints numbered into one label table for the partition."""
    pieces = [p for p in pieces if len(p["frame.number"])]
    if not pieces:
        return {}
    numbers: dict[str, int] = {}
    remapped = []
    for p in pieces:
        ids = np.array([numbers.setdefault(str(x), len(numbers)) for x in p[ENDPOINTS]]
                       + [0], np.int64)
        remapped.append({k: ids[v] if k in _SIDES else v for k, v in p.items()
                         if k != ENDPOINTS})
    cols = {k: np.concatenate([p[k] for p in remapped]) for k in remapped[0]}
    order = np.lexsort((cols["frame.number"], cols[CAPTURE]))
    cols = {k: v[order] for k, v in cols.items()}
    cols[ENDPOINTS] = np.asarray(list(numbers), dtype=object)
    return cols


def engine_columns(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows of one capture point as the RC engine takes them: endpoints numbered in
    order of first appearance, source before destination (as `rc_columns` numbers
    them), dtypes as `rc_columns` gives them."""
    dtypes = dict(COLUMNS)
    out = {k: v.astype(dtypes[k]) for k, v in cols.items() if k in dtypes}
    both = np.stack([cols["ibwire.src"], cols["ibwire.dst"]], axis=1).ravel()
    used, first, inverse = np.unique(both, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    ends = rank[inverse.ravel()].reshape(-1, 2)
    out["ibwire.src"] = ends[:, 0].astype(np.int32)
    out["ibwire.dst"] = ends[:, 1].astype(np.int32)
    out[ENDPOINTS] = np.asarray([cols[ENDPOINTS][u] for u in used[order]], dtype=object)
    return out
