"""Shared helpers of the RC engine tests: generate a capture with its truth, analyse it,
and compare the engine's findings with the generator's ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import RcResult, analyze
from ibwire.analysis.rc_input import rc_columns
from ibwire.gen import scenario, simulate


def generate(tmp: Path, name: str, seed: int, **kw: Any) -> tuple[Path, dict[str, Any]]:
    cfg = scenario(name, seed=seed, **kw)
    out = tmp / f"{name}_{seed}.{'erf' if cfg.fmt == 'erf' else cfg.fmt}"
    tpath = simulate(cfg).write(str(out), cfg.fmt, truth=True)
    return out, json.loads(Path(tpath).read_text())


def frames(res: RcResult, flag: int) -> set[int]:
    return {int(f) for f in res.cols["frame.number"][(res.flags & flag) != 0]}


def truth_sets(t: dict[str, Any]) -> dict[str, set[int]]:
    def seen(key: str, field: str = "frame") -> set[int]:
        return {e[field] for e in t[key] if e.get(field) is not None}
    return {"retransmission": seen("retransmissions"), "nak": seen("naks"),
            "rnr": seen("rnr_naks"), "rnr_retry": seen("rnr_naks", "retry_frame")}


def engine_sets(res: RcResult) -> dict[str, set[int]]:
    return {"retransmission": frames(res, R.F_RETX), "nak": frames(res, R.F_NAK),
            "rnr": frames(res, R.F_RNR), "rnr_retry": frames(res, R.F_RNR_RETRY)}


def explained(t: dict[str, Any], res: RcResult, extra: set[int], missing: set[int]) -> list[str]:
    """The differences the capture point cannot resolve (docs/rc-analysis.md, "Limits"):

    * extra "retransmissions" that are an original delayed before the tap past its own
      resend (truth: a `reorder` event on that frame), or a network duplicate seen
      before the first ACK round trip could be measured (truth: `duplicate` event);
    * a missing one: a resend of a PSN whose every earlier copy was lost before the tap
      (or missed by it) and that no later PSN had passed: on the wire it is new.
    Returns what is left unexplained."""
    reorder = {e["frame"] for e in t["events"] if e["kind"] in ("reorder", "duplicate")}
    left = [f"extra {f}" for f in sorted(extra - reorder)]
    hc, upsn = res.streams.hc, res.upsn
    for f in sorted(missing):
        i = f - 1
        if np.any((hc[:i] == hc[i]) & (upsn[:i] == upsn[i])):
            left.append(f"missing {f}")
    return left


def compare(path: Path, t: dict[str, Any]) -> tuple[RcResult, dict[str, tuple[set[int], set[int]]]]:
    res = analyze(rc_columns(path))
    ours, truth = engine_sets(res), truth_sets(t)
    return res, {k: (ours[k] - truth[k], truth[k] - ours[k]) for k in ours}
