"""The report's read of a capture from the bulk engine (`engines.columns.iter_chunks`).

Per chunk of frames: the `ibwire stats` collectors are fed as `ibwire stats` feeds
them in bulk (`cli.bulk.stats.feed`), the RC engine's and the credit analyses'
column rows come from `rc_bulk.chunk_columns` and `credit_bulk.chunk_columns` (the code
behind `ibwire rc` and `ibwire credits`), and the frames carrying a MAD give the
fabric view its MADs (`fabric_mads.checked_mad`). Frames the kernels hand over are
decoded per packet once per chunk (`Rows.packet` keeps them) for all of these.

The read stops where the CLI's bulk path stops (a damaged file, an unknown link
type, an engine error); `read` says how far it got and the caller reads on per
packet from the next frame, so bad input is reported exactly as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ibwire.analysis.fabric_mads import Mad, checked_mad
from ibwire.cli.output import Progress
from ibwire.decoder import Options
from ibwire.report.chunks import Chunked

CHUNK = 1 << 16           # frames per engine chunk (as the CLI's bulk path)


@dataclass
class Outcome:
    frames: int = 0                         # frames read here (the rest: per packet)
    done: bool = False                      # every frame of the file was read here
    mads: list[Mad] = field(default_factory=list)
    rejected: list[tuple[int, int, str]] = field(default_factory=list)


def _fields() -> list[str]:
    from ibwire.analysis import credit_bulk, rc_bulk
    from ibwire.cli.bulk import stats
    from ibwire.cli.bulk.rows import BASE
    return list(dict.fromkeys([*BASE, *stats.COLUMNS, *rc_bulk.FIELDS, *credit_bulk.FIELDS]))


def _engine() -> Any:
    from ibwire.cli import bulk
    if not bulk.enabled():                  # IBWIRE_PER_PACKET=1: the reference path
        return None
    try:
        from ibwire.engines import columns
    except ImportError:                     # numba or pyarrow missing
        return None
    return columns


def _gzipped(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def read(path: str, options: Options, stats: list[Any], builders: Chunked, source: int = 0,
         progress: bool = False) -> Outcome:
    """Feed `stats` and `builders` from the bulk engine, as far as it reads `path`."""
    from ibwire.analysis.credit_bulk import chunk_columns as credit_chunk
    from ibwire.analysis.rc_bulk import chunk_columns as rc_chunk
    from ibwire.cli.bulk.rows import Clock, Rows
    from ibwire.cli.bulk.run import _known
    from ibwire.cli.bulk.stats import feed
    from ibwire.cli.reader import load_decoders

    got = Outcome()
    cols = _engine()
    if cols is None or path == "-":
        return got
    load_decoders()                         # MADs and IPoIB, as the per-packet reader
    try:
        size = os.path.getsize(path)
    except OSError:
        return got                          # the per-packet reader says why
    bar = Progress(size, progress and not _gzipped(path))
    clock = Clock()
    chunks = cols.iter_chunks(path, _fields(), chunk=CHUNK, options=options)
    try:
        while True:
            try:
                ch = next(chunks)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - the engine gave up here; the per-packet
                return got     # reader reads on from the next frame and reports it
            if ch.batch.base < 0 or not _known(ch):
                return got     # damaged file or unknown link type: per packet
            rows = Rows(ch, len(ch), clock, options)
            feed(rows, stats)
            builders.add_parts(rc_chunk(ch, builders.labels, rows.packet),
                               credit_chunk(ch, rows.packet), len(ch))
            for i in np.flatnonzero(rows.int("ibwire.offset.mad") >= 0).tolist():
                mad = checked_mad(rows.packet(i), int(rows.number[i]), source, got.rejected)
                if mad is not None:
                    got.mads.append(mad)
            got.frames += len(ch)
            if len(ch):
                bar.update(int(ch.batch.roff[-1]), now=True)
    finally:
        chunks.close()                      # a stop part-way releases the file now
        bar.close()
    got.done = True
    return got
