"""Index record boundaries and decode chunks of a capture into the RC engine's columns.

A task is (capture, first frame, frame count): frames are counted by reading record
headers only (`open_capture`), so each worker decodes just its own frames. Endpoint
labels stay strings here (each chunk numbers its own endpoints otherwise); the
partition that analyses a connection numbers them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from zlib import crc32

import numpy as np

from ibwire.analysis.rc_input import ENDPOINTS, ColumnBuilder

CAPTURE = "ibwire.capture"          # index of the capture (point) a row comes from
PAIR = "ibwire.pair"                # hash of the unordered endpoint pair


@dataclass(frozen=True)
class Task:
    capture: int
    path: str
    start: int                      # 0-based first frame
    count: int


def frame_count(path: str) -> int:
    """Frames in the capture, reading record headers (what `ibwire dump` reads)."""
    from ibwire.capture import open_capture
    with open_capture(path) as frames:
        return sum(1 for _ in frames)


def tasks(paths: list[str], chunk: int, counts: list[int] | None = None) -> list[Task]:
    """Chunks of at most `chunk` frames, capture by capture."""
    counts = counts if counts is not None else [frame_count(p) for p in paths]
    return [Task(c, p, s, min(chunk, n - s)) for c, (p, n) in enumerate(zip(paths, counts))
            for s in range(0, n, max(1, chunk))]


def decode(task: Task) -> dict[str, np.ndarray]:
    """The RC columns of the task's frames (frame numbers as in the whole capture),
    with `ibwire.src`/`ibwire.dst` as label strings and the pair hash."""
    from ibwire.capture import open_capture
    from ibwire.decoder import decode as decode_frame

    builder = ColumnBuilder()
    with open_capture(task.path) as frames:
        for frame in islice(frames, task.start, task.start + task.count):
            builder.add(decode_frame(frame.data, frame.linktype, frame=frame))
    cols = builder.columns()
    cols["frame.number"] += task.start
    labels = cols.pop(ENDPOINTS)
    for side in ("ibwire.src", "ibwire.dst"):
        cols[side] = labels[cols[side]] if len(labels) else cols[side].astype(object)
    cols[CAPTURE] = np.full(len(cols["frame.number"]), task.capture, np.int32)
    cols[PAIR] = pair_hash(cols["ibwire.src"], cols["ibwire.dst"])
    return cols


def pair_hash(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A stable hash of the unordered endpoint pair: both directions of a connection
    (and its CM exchange on QP1, between the same two ports) hash alike."""
    memo: dict[tuple[str, str], int] = {}
    out = np.empty(len(src), np.uint32)
    for i, (s, d) in enumerate(zip(src, dst)):
        key = (s, d) if s <= d else (d, s)
        h = memo.get(key)
        if h is None:
            h = memo[key] = crc32(f"{key[0]}|{key[1]}".encode())
        out[i] = h
    return out


def split(cols: dict[str, np.ndarray], parts: int) -> list[dict[str, np.ndarray]]:
    """The shuffle's map side: the rows of each partition (pair hash mod parts)."""
    dest = cols[PAIR] % parts
    return [{k: v[dest == p] for k, v in cols.items()} for p in range(parts)]


def concat(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The shuffle's reduce side: one partition's rows in (capture, frame) order."""
    pieces = [p for p in pieces if len(p["frame.number"])]
    if not pieces:
        return {}
    cols = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
    order = np.lexsort((cols["frame.number"], cols[CAPTURE]))
    return {k: v[order] for k, v in cols.items()}


def engine_columns(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows of one capture point as the RC engine takes them (endpoints numbered in
    order of first appearance, as `rc_columns` numbers them)."""
    labels: dict[str, int] = {}
    out = {k: v for k, v in cols.items() if k not in (CAPTURE, PAIR)}
    for s, d in zip(cols["ibwire.src"], cols["ibwire.dst"]):
        labels.setdefault(s, len(labels))
        labels.setdefault(d, len(labels))
    for side in ("ibwire.src", "ibwire.dst"):
        out[side] = np.fromiter((labels[x] for x in cols[side]), np.int32, len(cols[side]))
    out[ENDPOINTS] = np.asarray(list(labels), dtype=object)
    return out
