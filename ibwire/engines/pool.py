"""Recycled output arrays: a chunk's arrays are reused once nothing refers to them.

Fresh arrays for every chunk would be fresh pages for the kernel to fault in (tens
of MB per chunk, the largest cost of the placement pass); arrays a caller still
holds -- a Chunk, a pyarrow Table built on them, any numpy view -- are never
reused, because their reference count shows them in use.
"""

from __future__ import annotations

import sys

import numpy as np

_FREE = 2  # the pool's list and getrefcount's own argument


class Pool:
    def __init__(self) -> None:
        self._arrays: dict[tuple, list[np.ndarray]] = {}

    def take(self, key: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        """An uninitialised array (callers fill it), recycled when possible."""
        size = int(np.prod(shape))
        spare = self._arrays.setdefault((key, np.dtype(dtype).str), [])
        for arr in spare:
            if sys.getrefcount(arr) <= _FREE + 1 and arr.size >= size:  # +1: `arr` here
                return arr[:size].reshape(shape)
        arr = np.empty(max(size, 1), dtype)
        if len(spare) < 4:
            spare.append(arr)
        return arr[:size].reshape(shape)

    def zeros(self, key: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        arr = self.take(key, shape, dtype)
        arr.fill(0)
        return arr
