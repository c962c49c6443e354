"""`ibwire.columns` / `ibwire.iter_columns`: a capture as column tables.

Per chunk of records: the scan kernels find the records (`scan`), `place` finds
every header, `extract` reads the requested registry fields, `check_crcs` checks
ICRC/VCRC/LPCRC, and the frames the kernels hand over are decoded per packet
(`fallback`). Arrays become pyarrow columns without copying; a field absent from
a frame is null (the validity bitmap is the field's present mask). Variable parts
are located, not copied: `ibwire.payload.offset`/`.len` are relative to the frame
data, which starts at `ibwire.frame.data_offset` in the (decompressed) file.
See docs/columns.md for every column.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ibwire.crc import CrcStatus
from ibwire.decoder import Options
from ibwire.engines import fallback
from ibwire.engines.crc_kernels import HAVE_LIB, ICRC, LPCRC, VCRC, check_crcs, crc_arrays
from ibwire.engines.extract import Plan, layer_values
from ibwire.engines.place import FB, IB_OFF, ICRC_AT, MAL, N_INFO, PAY_LEN, PAY_OFF, VCRC_AT, place
from ibwire.engines.pool import Pool
from ibwire.engines.scan import DEFAULT_CHUNK, Batch, batches
from ibwire.engines.span import span_batches
from ibwire.engines.tables import (
    CRC16_T,
    CRC32_T,
    CRC_TMPL,
    CRC_TMPL_LEN,
    field_rows,
    kernel_tables,
    layers,
)

# Frame and engine columns (not in the registry): name -> description.
FRAME_COLUMNS = {
    "frame.number": "uint64: 1-based frame number (tshark's)",
    "ibwire.frame.time_ns": "int64: time, nanoseconds since the epoch",
    "frame.len": "int64: original (wire) length",
    "frame.cap_len": "int32: captured length",
    "frame.interface_id": "int32: interface (pcapng: id within its section)",
    "ibwire.frame.linktype": "int32: pcap LINKTYPE of the frame",
    "ibwire.frame.offset": "int64: offset of the record in the (decompressed) file",
    "ibwire.frame.data_offset": "int64: offset of the frame data in the file, -1 unknown",
    "ibwire.payload.offset": "int32: payload offset in the frame data, -1 none",
    "ibwire.payload.len": "int32: payload length (pad excluded)",
    "ibwire.ib.offset": "int32: where LRH/GRH/BTH starts in the frame data, -1 none",
    "ibwire.malformed.code": "uint8: layer of the first problem (0 = none)",
    "ibwire.fallback": "bool: decoded per packet (the kernels handed it over)",
}
CRC_COLUMNS = {
    "infiniband.invariant.crc.status": "uint8 CrcStatus",
    "infiniband.variant.crc.status": "uint8 CrcStatus",
    "infiniband_link.lpcrc.status": "uint8 CrcStatus",
    "infiniband.invariant.crc": "uint32 (null: none captured)",
    "infiniband.variant.crc": "uint16 (null: none captured)",
}
OFFSET_PREFIX = "ibwire.offset."


def offset_columns() -> dict[str, str]:
    """One offset column per layer row of the current graph."""
    return {OFFSET_PREFIX + n: "int32: layer offset in the frame data, -1 absent"
            for n in layers().names}


def column_names() -> list[str]:
    """Every column `columns()` can return, in table order."""
    return [*FRAME_COLUMNS, *CRC_COLUMNS, *offset_columns(), *field_rows()]


def _resolve(fields: Iterable[str] | None) -> list[str]:
    if fields is None:
        return column_names()
    names = list(dict.fromkeys(fields))
    known = set(column_names())
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"not a column field: {', '.join(bad)} (see ibwire.engines.columns."
                         "column_names(); other fields need the per-packet decoder)")
    return names


class Chunk:
    """One chunk of frames: numpy arrays (zero-copy into `table()`)."""

    def __init__(self, batch: Batch, lo: np.ndarray, info: np.ndarray,
                 values: dict[str, np.ndarray], present: dict[str, np.ndarray],
                 crc: tuple[np.ndarray, ...] | None, names: list[str]) -> None:
        self.batch, self.lo, self.info = batch, lo, info
        self.values, self.present, self.crc, self.names = values, present, crc, names

    def __len__(self) -> int:
        return len(self.batch)

    def array(self, name: str) -> tuple[np.ndarray, np.ndarray | None]:
        """(values, present mask or None = all present) of one column."""
        b, info = self.batch, self.info
        if name in self.values:
            return self.values[name], self.present.get(name)
        if name.startswith(OFFSET_PREFIX):
            return self.lo[layers().index[name[len(OFFSET_PREFIX):]]], None
        simple = {
            "frame.number": lambda: np.arange(b.first + 1, b.first + 1 + len(b), dtype=np.uint64),
            "ibwire.frame.time_ns": lambda: b.ts, "frame.len": lambda: b.wire,
            "frame.cap_len": lambda: b.cap, "frame.interface_id": lambda: b.ifc,
            "ibwire.frame.linktype": lambda: b.lt, "ibwire.frame.offset": lambda: b.roff,
            "ibwire.frame.data_offset": lambda: b.doff + b.base if b.base >= 0
            else np.full(len(b), -1, np.int64),
            "ibwire.payload.offset": lambda: info[PAY_OFF],
            "ibwire.payload.len": lambda: info[PAY_LEN],
            "ibwire.ib.offset": lambda: info[IB_OFF],
            "ibwire.malformed.code": lambda: info[MAL].astype(np.uint8),
            "ibwire.fallback": lambda: info[FB].astype(bool),
        }
        if name in simple:
            return simple[name](), None
        ist, vst, lst, ival, vval = self.crc  # type: ignore[misc]
        crcs = {"infiniband.invariant.crc.status": (ist, None),
                "infiniband.variant.crc.status": (vst, None),
                "infiniband_link.lpcrc.status": (lst, None),
                "infiniband.invariant.crc": (ival, ist != CrcStatus.NOT_PRESENT),
                "infiniband.variant.crc": (vval, info[VCRC_AT] >= 0)}
        return crcs[name]

    def table(self) -> pa.Table:
        return pa.table({n: _arrow(*self.array(n)) for n in self.names})


def _arrow(values: np.ndarray, present: np.ndarray | None) -> pa.Array:
    n = len(values)
    validity = None
    if present is not None and not present.all():
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    if values.dtype == np.bool_:
        arr = pa.array(values)
        return arr if validity is None else pa.Array.from_buffers(
            pa.bool_(), n, [validity, arr.buffers()[1]])
    if values.ndim == 2:
        typ = pa.binary(values.shape[1])
    else:
        typ = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(np.ascontiguousarray(values))])


def _predicate(name: str, plan: Plan, chunk: Chunk, cache: dict[int, dict]) -> None:
    """Apply a registry field's `present` rule (AETH syndrome views, DR SMP fields)."""
    row = field_rows()[name][0]
    rule = row.field.present  # type: ignore[attr-defined]
    if rule is None:
        return
    vals = cache.get(row.layer)
    if vals is None:
        vals = cache[row.layer] = layer_values(row.layer, chunk.lo, chunk.batch.buf,
                                               chunk.batch.doff)
    try:
        ok = np.asarray(rule(vals), dtype=bool)
        if ok.shape != (len(chunk),):
            raise ValueError
    except (ValueError, TypeError, KeyError):
        ok = np.array([bool(rule({k: int(v[i]) for k, v in vals.items()}))
                       for i in range(len(chunk))], dtype=bool)
    chunk.present[name] &= ok
    chunk.values[name][~chunk.present[name]] = 0


def iter_chunks(path: str | os.PathLike[str], fields: Iterable[str] | None = None, *,
                chunk: int = DEFAULT_CHUNK, fallback_decode: bool = True,
                options: Options | None = None,
                span: tuple[int, int, int] | None = None) -> Iterator[Chunk]:
    """Chunks of numpy columns (the engine's own form; `iter_columns` for tables).
    `span`: only records (first, count, byte offset) of `ibwire.engines.span`."""
    names = _resolve(fields)
    opts = options or Options()
    rows = field_rows()
    plan = Plan([n for n in names if n in rows])
    want_crc = any(n in CRC_COLUMNS for n in names)
    # The graph's tables for this run (its RoCE ports: the options').
    tables = kernel_tables(opts.roce_ports)
    n_layers = len(tables.layer_size)
    pool = Pool()
    source = batches(path, chunk, pool) if span is None else \
        span_batches(path, *span, chunk=chunk, pool=pool)
    for batch in source:
        n = len(batch)
        lo = pool.take("lo", (n_layers, n), np.int32)
        info = pool.take("info", (N_INFO, n), np.int32)
        place(batch.buf, batch.doff, batch.cap, batch.lt, lo, info, *tables)
        values = plan.run(batch.buf, batch.doff, lo, pool)
        present = {name: plan.present(name, lo) for name in plan.names}
        crc = None
        if want_crc:
            crc = crc_arrays(n, pool)
            check_crcs(batch.buf, batch.doff, lo, info, CRC_TMPL, CRC_TMPL_LEN, CRC32_T,
                       CRC16_T, *crc, ICRC | VCRC | LPCRC, HAVE_LIB)
            if not opts.verify_crc:
                for st in crc[:3]:
                    st[st <= CrcStatus.GOOD] = CrcStatus.UNVERIFIED
            crc[0][(info[ICRC_AT] >= 0) & (crc[0] == CrcStatus.NOT_PRESENT)] = \
                CrcStatus.UNVERIFIED
        ch = Chunk(batch, lo, info, values, present, crc, names)
        cache: dict[int, dict] = {}
        for name in plan.names:
            _predicate(name, plan, ch, cache)
        if fallback_decode:
            rows = np.flatnonzero(info[FB])
            if len(rows):
                fallback.fill(ch, rows, options)
        yield ch


def iter_columns(path: str | os.PathLike[str], fields: Iterable[str] | None = None, *,
                 chunk: int = DEFAULT_CHUNK, fallback_decode: bool = True,
                 options: Options | None = None) -> Iterator[pa.Table]:
    """A pyarrow Table per chunk of at most `chunk` frames (bounded memory)."""
    for ch in iter_chunks(path, fields, chunk=chunk, fallback_decode=fallback_decode,
                          options=options):
        yield ch.table()


def columns(path: str | os.PathLike[str], fields: Iterable[str] | None = None, *,
            chunk: int = DEFAULT_CHUNK, iterator: bool = False, fallback_decode: bool = True,
            options: Options | None = None) -> Any:
    """The capture as one pyarrow Table (chunked columns), or with `iterator=True` an
    iterator of per-chunk Tables. `fields`: column names (default: all)."""
    it = iter_columns(path, fields, chunk=chunk, fallback_decode=fallback_decode,
                      options=options)
    if iterator:
        return it
    tables = list(it)
    if not tables:
        empty = Batch(np.zeros(0, np.uint8), 0, *(np.zeros(0, t) for t in (
            np.int64, np.int32, np.int64, np.int64, np.int32, np.int32, np.int64)))
        lo = np.zeros((len(layers().names), 0), np.int32)
        info = np.zeros((N_INFO, 0), np.int32)
        names = _resolve(fields)
        plan = Plan([n for n in names if n in field_rows()])
        return Chunk(empty, lo, info, plan.run(empty.buf, empty.doff, lo),
                     {n: np.zeros(0, bool) for n in plan.names}, crc_arrays(0), names).table()
    return pa.concat_tables(tables)
