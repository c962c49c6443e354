"""Accuracy sweeps of the RC engine against the generator's ground truth (issue #13).

    python tools/rc_sweep.py wide 359                     # 400 random draws, master seed 359
    python tools/rc_sweep.py wide 359 --draws 50 --jobs 2
    python tools/rc_sweep.py scenario rc_reorder --seeds 1000-1149
    python tools/rc_sweep.py params 359 17                # draw 17's generator arguments (JSON)
    python tools/rc_sweep.py extended 1 --draws 200       # a wider space, see EXTENDED

`wide` draws generator parameters at random over the space `tests/test_rc_wider.py`
samples, with reordering and duplication always on (the hard case); every draw is
reproducible from (master, index). `scenario` runs one named scenario over a seed
range. `extended` draws over a wider space (`EXTENDED`: network delays, link rates,
timers, both sides requesting, capture loss, one start PSN for every QP), to check
the rules off the space they were studied on. Each capture is analysed and compared
frame for frame with the tap's-eye truth, with the test suite's own comparison
(`tests/rc_helpers.py`), so a sweep and the tests can never disagree on what "exact"
means.

Prints one line per capture that is not exact (its differences, and how many of its
resends have an episode cause other than the truth's), then a summary line:

    wrong 12 frames 25 episodes 3 ambiguous 3378 captures 400

`ambiguous` is the number of frames flagged ambiguous over all captures: a rule that
buys exactness by flagging more has a cost, and this is where it shows.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from contextlib import nullcontext
from multiprocessing import Pool
from pathlib import Path
from typing import Any

# This checkout's library and test helpers, also when another is installed.
_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT), str(_ROOT / "tests")]

from rc_helpers import WIDER_SPACE  # noqa: E402 - found through the path above

# The property test's space, with reordering and duplication always on.
SPACE: dict[str, tuple[Any, ...]] = {**WIDER_SPACE, "reorder": (0.01, 0.03),
                                     "duplicate": (0.0, 0.01)}
# `extended`: also the knobs the wide space leaves at their defaults (delays, rates,
# timers, windows, both sides requesting, capture loss, one start PSN for every QP,
# PFC pauses, file formats), each value listed once per weight. Checks that the
# rules hold off the space they were studied on.
EXTENDED: dict[str, tuple[Any, ...]] = {
    **WIDER_SPACE, "reorder": (0.0, 0.01, 0.03), "duplicate": (0.0, 0.01),
    "bidirectional": (False, True), "psn_start": (None, 0xFFFFF8, 0xFFFF80),
    "capture_loss": (0.0, 0.0, 0.01), "reorder_delay_ns": (300, 3000, 30000),
    "rate_gbps": (None, 10.0, 100.0, 200.0), "loss_dir": ("both", "a2b", "b2a"),
    "ack_delay_ns": (300, 2000, 20000), "resp_delay_ns": (50, 400, 3000),
    "max_rd_atomic": (1, 4, 16), "timeout": (8, 14, 18), "ackreq_every": (4, 64),
    "prop_ns": (20, 200, 5000), "udp_sport": ("flow", "qp"), "rq_depth": (None, 4, 64),
    "max_unacked": (16, 128), "fmt": ("pcap", "pcapng", "erf"), "messages": (20, 40),
    "pfc": (False, False, True)}


def draw_params(master: int, index: int) -> tuple[int, dict[str, Any]]:
    """Generator seed and arguments of draw `index` of sweep `master`."""
    rng = random.Random(master * 1_000_003 + index)
    seed = rng.randrange(100_000)
    kw = {k: rng.choice(v) for k, v in SPACE.items()}
    kw["messages"] = 20
    return seed, kw


def extended_params(master: int, index: int) -> tuple[int, dict[str, Any]]:
    """Generator seed and arguments of draw `index` of extended sweep `master`."""
    rng = random.Random(master * 7_000_001 + index)
    seed = rng.randrange(100_000)
    kw = {k: rng.choice(v) for k, v in EXTENDED.items()}
    if kw["encap"] in ("ib", "ib-grh"):
        kw["pfc"] = False       # (PFC is Ethernet's; native links use credits)
    if kw["fmt"] == "erf" and kw["encap"] not in ("ib", "ib-grh"):
        kw["fmt"] = "pcap"      # (the generator writes ERF for native IB only)
    if kw["pfc"]:
        kw["drain_gbps"] = 8.0  # (a receiver slower than the link, so pauses happen)
    return seed, kw


def _check(job: tuple[str, int, dict[str, Any]]) -> tuple[list[str], list[str], int]:
    from rc_helpers import check_exact, compare, episode_diff, frames, generate

    from ibwire.analysis import rc_rules as R
    name, seed, kw = job
    with tempfile.TemporaryDirectory() as tmp:
        path, truth = generate(Path(tmp), name, seed, **kw)
        res, diff = compare(path, truth)
    return check_exact(truth, res, diff), episode_diff(truth, res), len(frames(res, R.F_AMBIGUOUS))


def _run(labels: list[str], jobs: list[tuple[str, int, dict[str, Any]]], procs: int) -> int:
    wrong = nframes = neps = namb = 0
    with Pool(procs) if procs > 1 else nullcontext() as pool:
        results = pool.imap(_check, jobs) if pool else map(_check, jobs)
        for label, (left, eps, amb) in zip(labels, results):
            namb += amb
            if left or eps:
                print(f"{label}: {len(left)} wrong {left} episodes {len(eps)}", flush=True)
            wrong += bool(left)
            nframes += len(left)
            neps += len(eps)
    print(f"wrong {wrong} frames {nframes} episodes {neps} ambiguous {namb} "
          f"captures {len(jobs)}", flush=True)
    return 1 if wrong else 0


def _seeds(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wide", help="random draws over the generator's parameters")
    e = sub.add_parser("extended", help="random draws over a wider space: delays, rates, "
                       "timers, both sides requesting, capture loss, shared start PSNs")
    for q in (w, e):
        q.add_argument("master", type=int, help="master seed: names the sweep")
        q.add_argument("--draws", type=int, default=400 if q is w else 200,
                       help=f"number of draws (default {400 if q is w else 200})")
        q.add_argument("--first", type=int, default=0,
                       help="index of the first draw (default 0)")
    s = sub.add_parser("scenario", help="one named scenario over a range of seeds")
    s.add_argument("name", help="scenario name, e.g. rc_reorder")
    s.add_argument("--seeds", required=True, help="seed range LO-HI (inclusive)")
    for p in (w, e, s):
        p.add_argument("--jobs", type=int, default=2,
                       help="worker processes (default 2; 1 runs in this process)")
    p = sub.add_parser("params", help="print one draw's seed and generator arguments")
    p.add_argument("master", type=int, help="master seed of the sweep")
    p.add_argument("index", type=int, help="index of the draw")
    p.add_argument("--extended", action="store_true", help="a draw of `extended`")
    a = ap.parse_args(argv)
    if a.cmd == "params":
        seed, kw = (extended_params if a.extended else draw_params)(a.master, a.index)
        print(json.dumps({"seed": seed, "name": "rc_clean", **kw}))
        return 0
    if a.cmd in ("wide", "extended"):
        idx = range(a.first, a.first + a.draws)
        pick = draw_params if a.cmd == "wide" else extended_params
        draws = [pick(a.master, i) for i in idx]
        labels = [f"draw {i} seed {sd}" for i, (sd, _) in zip(idx, draws)]
        return _run(labels, [("rc_clean", sd, kw) for sd, kw in draws], a.jobs)
    seeds = _seeds(a.seeds)
    return _run([f"{a.name} {sd}" for sd in seeds], [(a.name, sd, {}) for sd in seeds], a.jobs)


if __name__ == "__main__":
    sys.exit(main())
