"""Shared pieces of the analyses' bulk inputs (`rc_input`, `credit_input`).

The analyses read numpy columns built chunk by chunk from the bulk engine
(`ibwire.engines.columns.iter_chunks`): values copied out of each chunk (the
engine reuses its arrays), absent values -1, text columns (addresses, endpoint
labels) formatted once per distinct value, and the few fields only the
per-packet decoder has (MAD bodies, MAC Control) taken from a per-packet decode
of just the rows whose columns say they can carry them.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ibwire.capture.frame import CaptureError
from ibwire.engines.columns import Chunk, iter_chunks
from ibwire.engines.fallback import decode_row
from ibwire.packet import Packet

# Errors the bulk engine may raise on a damaged file where the per-packet reader
# raises CaptureError (e.g. a gzip file too short for its header): the analyses
# then read that file per packet, so bad input never crashes and is reported alike.
ENGINE_ERRORS = (EOFError, OSError, zlib.error)


def chunks(path: str | os.PathLike[str], fields: Iterable[str],
           strict: bool = True, span: tuple[int, int, int] | None = None) -> Iterator[Chunk]:
    """The capture's chunks (only `span`'s records when given, `ibwire.engines.span`);
    a damaged file raises `CaptureError` after every good frame (`strict`), or ends
    there (`strict=False`), as the per-packet reader."""
    try:
        yield from iter_chunks(path, fields, span=span)
    except CaptureError:
        if strict:
            raise


def ints(ch: Chunk, name: str) -> np.ndarray:
    """A column as int64, -1 where the frame does not carry it."""
    values, present = ch.array(name)
    out = values.astype(np.int64)
    if present is not None:
        out[~present] = -1
    return out


def present(ch: Chunk, name: str) -> np.ndarray:
    values, mask = ch.array(name)
    return np.ones(len(values), bool) if mask is None else mask.copy()


def big_endian(ch: Chunk, name: str, width: int) -> np.ndarray:
    """A column's values as `width` big-endian bytes per row (n x width uint8):
    integer columns as the decoder's bytes, binary (GID, IPv6) columns as they are."""
    values, _ = ch.array(name)
    if values.ndim == 2:
        return np.ascontiguousarray(values[:, :width])
    wide = values.astype(">u8").view(np.uint8).reshape(len(values), 8)
    return np.ascontiguousarray(wide[:, 8 - width:])


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows of a 2-D uint8 array in order of first use, each row's index
    into them)."""
    k = np.ascontiguousarray(keys)
    if len(k) == 0:
        return k, np.zeros(0, np.int64)
    flat = k.view(np.dtype((np.void, k.shape[1]))).ravel()
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return k[first[order]], rank[inverse.ravel()]


def text_column(raw: np.ndarray, mask: np.ndarray, fmt: Callable[[bytes], str],
                absent: str = "") -> np.ndarray:
    """Object array of texts: `fmt(bytes)` of each distinct present row, else `absent`."""
    n, width = raw.shape
    if not mask.any():
        return np.full(n, absent, dtype=object)
    if width <= 7:           # IPv4, MAC: one integer per row (0: absent), sorted fast
        key = np.zeros(n, np.uint64)
        for j in range(width):
            key = (key << np.uint64(8)) | raw[:, j].astype(np.uint64)
        key = np.where(mask, key + np.uint64(1), np.uint64(0))
        uniq, inverse = np.unique(key, return_inverse=True)
        texts = np.array([fmt(int(k - 1).to_bytes(width, "big")) if k else absent
                          for k in uniq.tolist()] + [absent], dtype=object)
        return texts[inverse.reshape(-1)]
    keys = np.concatenate([mask[:, None].astype(np.uint8), raw], axis=1)
    uniq, inverse = unique_rows(keys)
    texts = np.array([fmt(row[1:].tobytes()) if row[0] else absent for row in uniq]
                     + [absent], dtype=object)
    return texts[inverse] if len(inverse) else np.zeros(0, dtype=object)


def decoded(ch: Chunk, rows: np.ndarray, packet: Callable[[int], Packet] | None = None
            ) -> Iterator[tuple[int, Packet]]:
    """(row, per-packet decode) of the chosen rows of a chunk (the rare ones);
    `packet(row)` decodes instead when given (a caller's cache of decoded rows)."""
    for i in rows:
        yield int(i), (decode_row(ch.batch, int(i), None) if packet is None
                       else packet(int(i)))


def concat(parts: list[dict[str, np.ndarray]], dtypes: dict[str, object]) -> dict[str, np.ndarray]:
    """Join per-chunk columns, each cast to its dtype (as the per-packet builders)."""
    out = {}
    for name, dt in dtypes.items():
        arrays = [p[name] for p in parts]
        if dt is object:
            out[name] = (np.concatenate(arrays) if arrays else np.zeros(0, dtype=object))
        else:
            out[name] = (np.concatenate(arrays) if arrays else np.zeros(0, np.int64)).astype(dt)
    return out
