"""The bulk loop behind `ibwire dump` and `ibwire stats`: engine chunks in, lines
and statistics out, the per-packet formatter for the rows the engine hands over.

`eligible` says whether a command's output can come from here; `run` returns
how far it got. It stops early (and the caller's per-packet loop carries on from
the next frame) when the engine leaves its fast readers for the streaming ones
(a damaged file) or raises: the per-packet loop then prints the same warnings
and errors it always does.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np

from ibwire.cli import bulk
from ibwire.cli.output import Output
from ibwire.cli.stats import Stat
from ibwire.decoder import Options

# Numba and pyarrow load only when the bulk path runs (see `_engine`).

TIME_MODES = ("r", "d", "dd", "e")
CHUNK = 1 << 16           # frames per engine chunk: bounds the memory the lines take


@dataclass
class Outcome:
    done: bool            # every frame was handled here
    frames: int = 0       # frames handled (the per-packet loop skips them)
    last_ts: int | None = None
    linktype: int = 1
    per_packet: int = 0   # rows printed by the per-packet formatter


def _engine() -> Any:
    try:
        from ibwire.engines import columns
    except ImportError:   # numba or pyarrow missing: the per-packet path serves
        return None
    return columns


def eligible(args: argparse.Namespace, out: Output, stats: list[Stat], printer: Any,
             filt: Any, has_sink: bool) -> bool:
    """Whether this command's output can be built in bulk, byte for byte."""
    from ibwire.cli.dump import FieldsPrinter, TextPrinter
    path = args.r or args.file
    if not bulk.enabled() or not path or path == "-" or has_sink \
            or out.color or out.flush_each:
        return False
    # What the printer needs first: the engine (Numba) loads only when it will serve.
    if isinstance(printer, TextPrinter):
        if not (printer.summary and not printer.details and not printer.hex
                and printer.time_mode in TIME_MODES):
            return False
    elif isinstance(printer, FieldsPrinter):
        from ibwire.cli.bulk.lines import FieldLines
        if not FieldLines.supported(printer.writer):
            return False
    elif printer is not None:
        return False
    if filt is not None:
        from ibwire.cli.bulk.filter import compile_mask
        if printer is None or compile_mask(filt) is None:
            return False
    if any(not _stat_ok(st) for st in stats):
        return False
    return _engine() is not None


def _stat_ok(st: Stat) -> bool:
    from ibwire.cli.bulk.stats import supported
    return supported(st)


def _lines_for(printer: Any) -> Any:
    from ibwire.cli.bulk.lines import FieldLines, SummaryLines
    from ibwire.cli.dump import FieldsPrinter, TextPrinter
    if isinstance(printer, TextPrinter):
        return SummaryLines(printer.time_mode)
    if isinstance(printer, FieldsPrinter):
        return FieldLines(printer.writer)
    return None


def run(path: str, options: Options, count: int | None, printer: Any, stats: list[Stat],
        out: Output, filt: Any = None) -> Outcome:
    from ibwire.cli.bulk.rows import BASE, Clock, Rows
    cols = _engine()
    lines = _lines_for(printer)
    from ibwire.cli.bulk.filter import compile_mask, display_mask
    from ibwire.cli.bulk.stats import COLUMNS, feed
    mask = compile_mask(filt) if filt is not None else None
    names = list(dict.fromkeys([*BASE, *(lines.columns if lines else []),
                                *(COLUMNS if stats else []),
                                *(sorted(filt.filter.fields & set(cols.column_names()))
                                  if filt is not None else [])]))
    clock = Clock()
    result = Outcome(done=False)
    chunks = cols.iter_chunks(path, names, options=options, fallback_decode=False,
                              chunk=CHUNK)
    while count is None or result.frames < count:
        try:
            chunk = next(chunks)
        except StopIteration:
            break
        except Exception:  # noqa: BLE001 - the engine gave up here; the per-packet loop
            return result  # reads on from the next frame and reports what it finds
        if chunk.batch.base < 0 or not _known(chunk):
            return result              # damaged file or unknown link type: per packet
        n = len(chunk) if count is None else min(len(chunk), count - result.frames)
        rows = Rows(chunk, n, clock, options)
        shown = np.ones(n, bool)
        if filt is not None:
            shown = display_mask(rows, filt, mask)
            rows.display(shown, clock)
        if lines is not None:
            result.per_packet += _print(rows, lines, out, shown)
        if stats:
            feed(rows, stats)
        result.frames += n
        if n:
            result.last_ts = int(rows.ts[n - 1]) if filt is None else clock.prev_disp
            result.linktype = int(rows.linktype[n - 1])
    result.done = True
    return result


def _known(chunk: Any) -> bool:
    """Every link type known (the per-packet loop warns about or refuses others)."""
    from ibwire.capture.linktypes import KNOWN_LINKTYPES
    return all(int(lt) in KNOWN_LINKTYPES for lt in set(chunk.batch.lt.tolist()))


def _print(rows: Any, lines: Any, out: Output, shown: Any) -> int:
    gid, render = lines.plan(rows)
    gid = np.where(shown, gid, -2)            # -2: not displayed
    raw, off = render(gid)
    slow = np.flatnonzero(gid < 0)
    start = 0
    for i in [*slow.tolist(), rows.n]:
        if i > start:
            _write(out, raw[off[start]:off[i]])
        if i < rows.n and gid[i] == -1:
            out.line(lines.per_packet(rows.info(i)))
        start = i + 1
    return int((gid == -1).sum())


def _write(out: Output, raw: Any) -> None:
    """UTF-8 bytes straight to the binary stream under stdout when there is one."""
    buffer = getattr(out.stream, "buffer", None)
    if buffer is None or (getattr(out.stream, "encoding", "") or "").lower() not in (
            "utf-8", "utf8"):
        out.write(raw.tobytes().decode())
        return
    out.stream.flush()
    buffer.write(memoryview(raw))
