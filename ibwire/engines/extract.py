"""The extraction kernel: registry fields of placed layers into numpy columns.

A field row (`tables.FieldRow`) says which layer holds the field and where
(`Layout.offsets()`); `extract` reads it for every frame whose layer is present
and writes 0 elsewhere (the present mask is the layer's offset >= 0). Only the
header bytes of requested fields are touched. `extract.py_func` is the twin.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibwire.engines.pool import Pool
from ibwire.engines.tables import (
    K_B16,
    K_U8,
    K_U16,
    K_U32,
    K_U64,
    KIND_DTYPE,
    FieldRow,
    field_rows,
    layers,
)

# Columns of a row in the int64 row table the kernel reads.
R_LAYER, R_OFF, R_NBYTES, R_SHIFT, R_BITS, R_KIND, R_DST = range(7)
B16 = 16


@njit(cache=True)
def extract(buf, doff, lo, rows, out8, out16, out32, out64, outb):
    """Fill the zeroed output matrices (one row per column, one entry per frame)."""
    n = doff.shape[0]
    for f in range(rows.shape[0]):
        layer, off, nb = rows[f, R_LAYER], rows[f, R_OFF], rows[f, R_NBYTES]
        shift, bits, kind, dst = rows[f, R_SHIFT], rows[f, R_BITS], rows[f, R_KIND], \
            rows[f, R_DST]
        for i in range(n):
            at = lo[layer, i]
            if at < 0:
                continue  # outputs start zeroed; another layer may hold the name
            p = doff[i] + at + off
            if kind == K_B16:
                for k in range(B16):
                    outb[dst, i * B16 + k] = buf[p + k]
                continue
            v = np.uint64(0)
            for k in range(nb):
                v = (v << np.uint64(8)) | np.uint64(buf[p + k])
            v = v >> np.uint64(shift)
            if bits < 64:
                v = v & ((np.uint64(1) << np.uint64(bits)) - np.uint64(1))
            if kind == K_U8:
                out8[dst, i] = v
            elif kind == K_U16:
                out16[dst, i] = v
            elif kind == K_U32:
                out32[dst, i] = v
            else:
                out64[dst, i] = v


class Plan:
    """Which field rows to run for a set of column names, and where each lands."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.kind: dict[str, int] = {}
        self.dst: dict[str, int] = {}
        self.rows_of: dict[str, list[FieldRow]] = {}
        counts = [0] * 5
        table = []
        for name in names:
            rows = field_rows()[name]
            kind = max(r.kind for r in rows) if rows[0].kind != K_B16 else K_B16
            dst = counts[kind]
            counts[kind] += 1
            self.kind[name], self.dst[name], self.rows_of[name] = kind, dst, rows
            # Several layouts may hold one public name (RETH/AtomicETH va): each
            # row writes only where its layer is present (never two at once).
            for r in rows:
                table.append((r.layer, r.offset, r.nbytes, r.shift, r.field.bits
                              if r.kind != K_B16 else 128, kind, dst))
        self.counts = counts
        self.rows = np.array(table, dtype=np.int64).reshape(-1, 7)

    def run(self, buf: np.ndarray, doff: np.ndarray, lo: np.ndarray,
            pool: Pool | None = None) -> dict[str, np.ndarray]:
        n = len(doff)
        if not self.names:
            return {}
        pool = pool or Pool()
        outs = [pool.zeros(f"out{k}", (max(c, 1), n * (B16 if k == K_B16 else 1)),
                           KIND_DTYPE[k]) for k, c in enumerate(self.counts)]
        if len(self.rows):
            extract(buf, doff, lo, self.rows, *outs)
        out = {}
        for name in self.names:
            k, d = self.kind[name], self.dst[name]
            out[name] = outs[k][d] if k != K_B16 else outs[k][d].reshape(n, B16)
        return out

    def present(self, name: str, lo: np.ndarray) -> np.ndarray:
        """Frames whose layer holds the field (before any `present` predicate)."""
        rows = self.rows_of[name]
        mask = lo[rows[0].layer] >= 0
        for r in rows[1:]:
            mask = mask | (lo[r.layer] >= 0)
        return mask


def layer_values(layer: int, lo: np.ndarray, buf: np.ndarray, doff: np.ndarray) -> dict:
    """Every int field of one layer as arrays, by field name (for `present` predicates)."""
    lay = layers().layouts[layer]
    names = [f.wsname for f in lay.fields if f.wsname in field_rows() and f.kind == "int"
             and f.derive is None]
    plan = Plan(list(dict.fromkeys(names)))
    cols = plan.run(buf, doff, lo)
    return {f.name: cols[f.wsname].astype(np.int64) for f in lay.fields if f.wsname in cols}


__all__ = ["K_U64", "Plan", "extract", "layer_values"]
