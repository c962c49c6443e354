"""One read of each capture feeds every analysis the report shows.

The bulk engine reads the capture in chunks (`bulk_read`): the `ibwire stats`
collectors (summary, opcodes, MADs, expert items) are fed as `ibwire stats` feeds
them, and the columns of the RC engine and of the credit/PFC/congestion analyses
are built by the code `ibwire rc` and `ibwire credits` use. Where the engine stops
(a damaged file) the per-packet reader reads on, each packet going to the column
builders (`rc_input`, `credit_input`) and the collectors. The analyses then run on
those columns with the same functions `ibwire rc -T json` and `ibwire credits -T
json` use, so the report and those documents cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ibwire.analysis.fabric_mads import Mad
from ibwire.analysis.rc import RcResult, analyze
from ibwire.analysis.rc_report import _EXPERT as RC_EXPERT
from ibwire.analysis.rc_report import document, expert_items
from ibwire.capture import CaptureError
from ibwire.cli.reader import InputError, decode_options, packets
from ibwire.cli.stats.expert import Expert
from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
from ibwire.cli.stats.summary import Summary
from ibwire.report.chunks import Chunked, give_back
from ibwire.report.indexed import Indexed


@dataclass
class Capture:
    """Everything the report knows about one capture file."""

    path: str
    summary: Summary
    opcodes: OpcodeHistogram
    mads: MadHistogram
    expert: Expert
    rc: RcResult
    rc_doc: dict[str, Any]
    credit_cols: dict[str, np.ndarray]
    credits_doc: dict[str, Any]
    error: str | None = None
    # The bulk read's MADs and MADs rejected for a bad CRC (`fabric_mads.checked_mad`);
    # None when the file was read per packet (the fabric view then reads it itself).
    fabric_mads: tuple[list[Mad], list[tuple[int, int, str]]] | None = None

    @property
    def crc_errors(self) -> int:
        return sum(c["bad"] for c in self.summary.crc.values())

    @property
    def has_mads(self) -> bool:
        return bool(self.mads.counts)


def read_capture(path: str, progress: bool = True, source: int = 0) -> Capture:
    """Read `path` once and run the RC and link analyses on what was read. The bulk
    engine reads as far as it can (`bulk_read`), the per-packet reader the rest (a
    damaged file). A file that breaks part-way keeps what came before (the problem
    is in `.error`). `source`: the file's index among the report's captures."""
    from ibwire.report import bulk_read

    summary, ops, mads, expert = Summary(source=path), OpcodeHistogram(), MadHistogram(), \
        Expert()
    stats = [summary, ops, mads, expert]
    builders = Chunked()
    options = decode_options([])
    got = bulk_read.read(path, options, stats, builders, source, progress)
    problem = None
    try:
        for info in () if got.done else packets(path, options, progress=progress,
                                                 skip=got.frames):
            pkt = info.pkt
            assert pkt is not None
            builders.add(Indexed(pkt))
            for st in stats:
                st.add(info, pkt)
    except (CaptureError, InputError) as exc:
        problem = str(exc)
    with _status(progress, f"analysing {path}"):
        rc_cols, cols = builders.finish()
        return analyse(path, stats, rc_cols, cols, problem,
                       (got.mads, got.rejected) if got.done else None)


def analyse(path: str, stats: list[Any], rc_cols: dict[str, np.ndarray],
            cols: dict[str, np.ndarray], problem: str | None = None,
            fabric_mads: tuple[list[Mad], list[tuple[int, int, str]]] | None = None
            ) -> Capture:
    """The RC and link analyses of a capture's columns (read here or, with `--jobs`,
    by the workers: `report.scaled`); `stats`: its fed `ibwire stats` collectors."""
    from ibwire.analysis.link_report import link_report

    summary, ops, mads, expert = stats
    res = analyze(rc_cols)
    give_back()
    cap = Capture(path, summary, ops, mads, expert, res, document(res, path), cols,
                  link_report(cols, file=path), problem, fabric_mads)
    give_back()
    _add_rc_expert(cap)
    _add_credit_expert(cap)
    give_back()
    return cap


def _status(progress: bool, text: str) -> Any:
    """A spinner on a terminal's stderr while the analyses run (the read has its bar)."""
    import contextlib

    from ibwire.cli.output import _stderr_tty
    if not progress or not _stderr_tty():
        return contextlib.nullcontext()
    from rich.console import Console
    return Console(stderr=True).status(text)


def _add_rc_expert(cap: Capture) -> None:
    """The RC engine's expert items, as `ibwire stats -z expert` adds them."""
    res = cap.rc
    fn = res.cols["frame.number"]
    bits = 0
    for bit, *_ in RC_EXPERT:
        bits |= bit
    first = cap.expert.first
    for row in np.flatnonzero(res.flags & bits).tolist():
        for item in expert_items(res, row):
            cap.expert.counts[item] += 1
            first[item] = min(first.get(item, int(fn[row])), int(fn[row]))


def _add_credit_expert(cap: Capture) -> None:
    """The credit analysis' expert items (FCTBS gaps, sends without credits, frames sent
    while paused), as `ibwire stats -z expert` adds them."""
    from ibwire.analysis.credit_fields import credit_fields_of
    from ibwire.analysis.credits_provider import expert_rows

    first = cap.expert.first
    doc = cap.credits_doc            # its congestion flows are `credit_fields`' (defaults)
    for item, rows in expert_rows(credit_fields_of(cap.credit_cols,
                                                   flows=doc["congestion"]["flows"])):
        cap.expert.counts[item] += len(rows)
        first[item] = min(first.get(item, int(rows[0]) + 1), int(rows[0]) + 1)
