"""Shared helpers of the RC engine tests: generate a capture with its truth, analyse it,
and compare the engine's findings with the generator's ground truth."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tool_loader import load_tool

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import RcResult, analyze
from ibwire.analysis.rc_input import rc_columns
from ibwire.gen import scenario, simulate

# The generator parameters the scenario tests keep fixed, and the values the wider
# property test (test_rc_wider.py) and the accuracy sweep (tools/rc_sweep.py) draw
# them from: each key a `generate` argument.
WIDER_SPACE: dict[str, tuple[Any, ...]] = {
    "ops": ({"send": 2, "write": 2, "read": 2},
            {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
            {"write_imm": 1, "send_imm": 1, "send": 1}, {"read": 1}),
    "sizes": ((0, 64, 200, 256, 700, 1024, 1500), (4096, 9000, 20000), (1, 2, 8)),
    "loss": (0.0, 0.02, 0.05), "loss_before_tap": (0.0, 0.3, 1.0), "rnr": (0.0, 0.04),
    "corrupt": (0.0, 0.02), "encap": ("roce2", "roce1", "ib", "ib-grh"),
    "connections": (1, 2, 3), "ack_every": (1, 2, 4), "credits": ("count", "unlimited"),
    "pmtu": (256, 1024, 4096), "tx_depth": (2, 8, 16), "rnr_timer": (1, 6, 12),
    "cm": (False, True)}


def generate(tmp: Path, name: str, seed: int, **kw: Any) -> tuple[Path, dict[str, Any]]:
    cfg = scenario(name, seed=seed, **kw)
    out = tmp / f"{name}_{seed}.{'erf' if cfg.fmt == 'erf' else cfg.fmt}"
    tpath = simulate(cfg).write(str(out), cfg.fmt, truth=True)
    return out, json.loads(Path(tpath).read_text())


def frames(res: RcResult, flag: int) -> set[int]:
    return {int(f) for f in res.cols["frame.number"][(res.flags & flag) != 0]}


def truth_sets(t: dict[str, Any]) -> dict[str, set[int]]:
    """The truth as the tap can know it (ibwire/gen/truth.py, "What the tap can know")."""
    def seen(key: str, field: str = "frame") -> set[int]:
        return {e[field] for e in t[key] if e.get(field) is not None}
    return {"retransmission": {e["frame"] for e in t["retransmissions"]
                               if e["frame"] is not None and e["tap_visible"]},
            "nak": seen("naks"), "rnr": seen("rnr_naks"),
            "rnr_retry": seen("rnr_naks", "tap_retry_frame")}


def engine_sets(res: RcResult) -> dict[str, set[int]]:
    return {"retransmission": frames(res, R.F_RETX), "nak": frames(res, R.F_NAK),
            "rnr": frames(res, R.F_RNR), "rnr_retry": frames(res, R.F_RNR_RETRY)}


def check_exact(t: dict[str, Any], res: RcResult,
                diff: dict[str, tuple[set[int], set[int]]]) -> list[str]:
    """Exact equality with the tap's-eye truth, except frames the engine flags
    `ambiguous`; each of those must be one of the things it may be (a resend, or a
    late or network-duplicated copy). Returns the differences left."""
    amb = frames(res, R.F_AMBIGUOUS)
    copies = {e["frame"] for e in t["events"] if e["kind"] in ("reorder", "duplicate")}
    left = [f"ambiguous {f} is neither a resend nor a late/duplicated copy"
            for f in sorted(amb - truth_sets(t)["retransmission"] - copies)]
    for kind, (extra, missing) in diff.items():
        left += [f"{kind}: extra {f}" for f in sorted(extra - amb)]
        left += [f"{kind}: missing {f}" for f in sorted(missing - amb)]
    return left


def episode_diff(t: dict[str, Any], res: RcResult) -> list[str]:
    """For each resend both the truth and the engine see (not flagged ambiguous): the
    engine's episode has the truth's reason, and the same cause frame when the truth
    names one. Returns the differences."""
    fn = res.cols["frame.number"]
    row_of = {int(f): r for r, f in enumerate(fn)}
    amb = frames(res, R.F_AMBIGUOUS)
    starts = _starts(res)
    left = []
    for e in t["retransmissions"]:
        f = e["frame"]
        if f is None or not e["tap_visible"] or f in amb or f not in row_of:
            continue
        r = row_of[f]
        if not res.flags[r] & R.F_RETX or res.episode[r] < 0:
            continue
        start = starts[int(res.episode[r])]
        why = R.REASON_NAMES[int(res.reason[start])]
        t_row = int(res.trig[start])
        cause = int(fn[t_row]) if t_row >= 0 else None
        if why != e["reason"] or (e.get("trigger_frame") is not None and
                                  e["reason"] != "timeout" and cause != e["trigger_frame"]):
            left.append(f"resend {f}: {why} at {cause}, truth {e['reason']} at "
                        f"{e.get('trigger_frame')}")
    return left


def compare(path: Path, t: dict[str, Any]) -> tuple[RcResult, dict[str, tuple[set[int], set[int]]]]:
    res = analyze(rc_columns(path))
    ours, truth = engine_sets(res), truth_sets(t)
    return res, {k: (ours[k] - truth[k], truth[k] - ours[k]) for k in ours}


def exact(tmp: Path, seed: int, name: str = "rc_reorder", **kw: Any
          ) -> tuple[dict[str, Any], RcResult]:
    """Generate a capture, analyse it and check it equals the tap's-eye truth frame
    for frame: (truth, result)."""
    path, truth = generate(tmp, name, seed, **kw)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []
    return truth, res


def _starts(res: RcResult) -> dict[int, int]:
    """Each episode's start row: its restart's (flagged `go_back_n`), else its first
    row. (A resend of the restart may come before it at the tap,
    `rc_post.overtaken_starts`.)"""
    out = {int(e): r for r, e in reversed(list(enumerate(res.episode))) if e >= 0}
    for r in reversed((res.flags & R.F_EPISODE).nonzero()[0].tolist()):
        out[int(res.episode[r])] = r
    return out


def flags_of(res: RcResult, frame: int) -> set[str]:
    """The engine's flag names on a frame (1-based)."""
    return set(R.flag_names(int(res.flags[frame - 1])))


def reordered(truth: dict[str, Any], frame: int) -> bool:
    """Whether the generator's network held this frame back past later ones."""
    return frame in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}


def start_of(res: RcResult, frame: int) -> tuple[str, int | None]:
    """Reason and cause frame of the episode the frame belongs to."""
    row = _starts(res)[int(res.episode[frame - 1])]
    t = int(res.trig[row])
    return R.REASON_NAMES[int(res.reason[row])], (
        int(res.cols["frame.number"][t]) if t >= 0 else None)


def draw(tmp: Path, seed: int, frame: int, kind: str, **kw: Any
         ) -> tuple[dict[str, Any], RcResult, dict[str, tuple[set[int], set[int]]]]:
    """A wide draw whose truth has a `kind` event (the network's doing) at `frame`,
    analysed: (truth, result, differences)."""
    path, truth = generate(tmp, "rc_clean", seed, **kw)
    assert frame in {e["frame"] for e in truth["events"] if e["kind"] == kind}
    res, diff = compare(path, truth)
    return truth, res, diff


@cache
def sweep_tool() -> ModuleType:
    """The accuracy sweep tool (`tools/rc_sweep.py`), whose draws (seed, parameters)
    the pinned tests name."""
    return load_tool("rc_sweep")


Drawn = tuple[dict[str, Any], RcResult, dict[str, tuple[set[int], set[int]]]]


def wide_draw(tmp: Path, master: int, n: int) -> Drawn:
    """Draw n of the sweep tool's wide master `master`, analysed: (truth, result,
    differences)."""
    return _analysed(tmp, *sweep_tool().draw_params(master, n))


def extended_draw(tmp: Path, master: int, n: int) -> Drawn:
    """Draw n of the sweep tool's extended master `master`, analysed."""
    return _analysed(tmp, *sweep_tool().extended_params(master, n))


def _analysed(tmp: Path, seed: int, params: dict[str, Any]) -> Drawn:
    path, truth = generate(tmp, "rc_clean", seed, **params)
    res, diff = compare(path, truth)
    return truth, res, diff


def ts_ns(res: RcResult, frame: int) -> int:
    """A frame's capture time stamp (ns; frames 1-based)."""
    return int(res.cols["frame.time_ns"][frame - 1])
