"""One read of each capture feeds every analysis the report shows.

The frames are decoded once (with `ibwire stats`' reader and its progress bar);
each packet goes to the column builders of the RC engine (`rc_input`) and of the
credit/PFC/congestion analyses (`credit_input`) and to the `ibwire stats`
collectors (summary, opcodes, MADs, expert items). The analyses then run on those
columns with the same functions `ibwire rc -T json` and `ibwire credits -T json`
use, so the report and those documents cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ibwire.analysis.rc import RcResult, analyze
from ibwire.analysis.rc_report import _EXPERT as RC_EXPERT
from ibwire.analysis.rc_report import document, expert_items
from ibwire.capture import CaptureError
from ibwire.cli.reader import InputError, decode_options, packets
from ibwire.cli.stats.expert import Expert
from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
from ibwire.cli.stats.summary import Summary
from ibwire.report.chunks import Chunked
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

    @property
    def crc_errors(self) -> int:
        return sum(c["bad"] for c in self.summary.crc.values())

    @property
    def has_mads(self) -> bool:
        return bool(self.mads.counts)


def read_capture(path: str, progress: bool = True) -> Capture:
    """Decode `path` once and run the RC and link analyses on what was read. A file
    that breaks part-way keeps what came before (the problem is in `.error`)."""
    from ibwire.analysis.link_report import link_report

    summary, ops, mads, expert = Summary(source=path), OpcodeHistogram(), MadHistogram(), \
        Expert()
    builders = Chunked()
    problem = None
    try:
        for info in packets(path, decode_options([]), progress=progress):
            pkt = info.pkt
            assert pkt is not None
            builders.add(Indexed(pkt))
            for st in (summary, ops, mads, expert):
                st.add(info, pkt)
    except (CaptureError, InputError) as exc:
        problem = str(exc)
    rc_cols, cols = builders.finish()
    res = analyze(rc_cols)
    cap = Capture(path, summary, ops, mads, expert, res, document(res, path), cols,
                  link_report(cols, file=path), problem)
    _add_rc_expert(cap)
    return cap


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
