"""`ibwire report --jobs N` (`--scheduler`, `--chunk`): the report's reads on the
workers of `ibwire.scale`, the analyses here on what they send back.

Each capture is split into the record spans of `scale.chunks.tasks`; per span a
worker builds the RC engine's columns (`scale.chunks.decode`, as `ibwire rc
--jobs`) and the credit analysis' (`scale.credits.part`, as `ibwire credits
--jobs`), and per capture one worker feeds the `ibwire stats` collectors with the
bulk engine (as `ibwire stats --jobs`: they do not merge across spans yet). The
columns are gathered in frame order and the RC engine and the link report run
once per capture on them (`collect.analyse`, the code the one-process read uses),
so the page is the one `ibwire report` writes without `--jobs`. The fabric view
is `ibwire fabric --jobs`'s (`scale.fabric.build_fabric`).

A capture the record kernels or the bulk engine cannot read to its end (damage,
an unknown link type) is read here by `collect.read_capture`, the reference read,
so bad input is reported exactly as without `--jobs`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.report.collect import Capture, analyse, read_capture


def capture_stats(path: str) -> tuple[list[Any], bool]:
    """(the `ibwire stats` collectors fed by the bulk read of `path`, whether it read
    every frame). Runs on a worker."""
    from ibwire.cli.bulk.rows import Clock, Rows
    from ibwire.cli.bulk.run import _known
    from ibwire.cli.bulk.stats import feed
    from ibwire.cli.reader import decode_options, load_decoders
    from ibwire.cli.stats.expert import Expert
    from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
    from ibwire.cli.stats.summary import Summary
    from ibwire.report import bulk_read

    stats = [Summary(source=path), OpcodeHistogram(), MadHistogram(), Expert()]
    engine = bulk_read._engine()
    if engine is None or path == "-":
        return stats, False
    load_decoders()
    options = decode_options([])
    clock = Clock()
    chunks = None
    try:
        chunks = engine.iter_chunks(path, bulk_read._fields(), chunk=bulk_read.CHUNK,
                                    options=options)
        for ch in chunks:
            if ch.batch.base < 0 or not _known(ch):
                return stats, False
            feed(Rows(ch, len(ch), clock, options), stats)
    except Exception:  # noqa: BLE001 - the engine gave up: the reference read does it all
        return stats, False
    finally:
        if chunks is not None:
            chunks.close()
    return stats, True


def _rc_columns(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One capture's RC columns from its spans' (`rc_columns`' numbering)."""
    from ibwire.report.chunks import Chunked
    from ibwire.scale.chunks import concat, engine_columns

    cols = concat(pieces)
    return engine_columns(cols) if cols else Chunked().finish()[0]


def _credit_columns(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    from ibwire.analysis import bulk_input as bi
    from ibwire.analysis.credit_bulk import DTYPES
    return parts[0] if len(parts) == 1 else bi.concat(parts, DTYPES)


def _submit(fn: Any, items: list[Any], c: Any) -> Any:
    return [fn(x) for x in items] if c is None else c.map(fn, items, pure=False)


def read_captures(paths: list[str], c: Any = None, chunk: int = 50_000,
                  progress: bool = False) -> tuple[list[Capture], dict[str, Any] | None]:
    """The report's captures and fabric view (None: no MADs), read on the client's
    workers (None: in this process, span by span)."""
    from ibwire.analysis.fabric_json import fabric_dict
    from ibwire.scale import chunks, credits
    from ibwire.scale.fabric import build_fabric

    tasks = chunks.tasks(paths, chunk, c)
    whole = {t.capture for t in tasks if t.count == chunks.WHOLE}
    spans = [t for t in tasks if t.capture not in whole]
    jobs = [_submit(capture_stats, paths, c), _submit(chunks.decode, spans, c),
            _submit(credits.part, spans, c)]
    stats, rc_parts, cr_parts = jobs if c is None else c.gather(jobs)
    caps = []
    for i, path in enumerate(paths):
        fed, done = stats[i]
        mine = [k for k, t in enumerate(spans) if t.capture == i]
        if i in whole or not done:
            caps.append(read_capture(path, progress=progress, source=i))
            continue
        caps.append(analyse(path, fed, _rc_columns([rc_parts[k] for k in mine]),
                            _credit_columns([cr_parts[k] for k in mine])))
    fab = None
    if any(cap.has_mads for cap in caps):
        fab = fabric_dict(build_fabric(paths, c, chunk))
    return caps, fab
