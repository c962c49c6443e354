"""Accuracy sweeps of the RC engine against the generator's ground truth (issue #13).

    python tools/rc_sweep.py wide 359                     # 400 random draws, master seed 359
    python tools/rc_sweep.py wide 359 --draws 50 --jobs 2
    python tools/rc_sweep.py scenario rc_reorder --seeds 1000-1149
    python tools/rc_sweep.py params 359 17                # draw 17's generator arguments (JSON)

`wide` draws generator parameters at random over the space `tests/test_rc_wider.py`
samples, with reordering and duplication always on (the hard case); every draw is
reproducible from (master, index). `scenario` runs one named scenario over a seed
range. Each capture is analysed and compared frame for frame with the tap's-eye
truth, with the test suite's own comparison (`tests/rc_helpers.py`), so a sweep and
the tests can never disagree on what "exact" means.

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


def draw_params(master: int, index: int) -> tuple[int, dict[str, Any]]:
    """Generator seed and arguments of draw `index` of sweep `master`."""
    rng = random.Random(master * 1_000_003 + index)
    seed = rng.randrange(100_000)
    kw = {k: rng.choice(v) for k, v in SPACE.items()}
    kw["messages"] = 20
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
    w.add_argument("master", type=int, help="master seed: names the sweep")
    w.add_argument("--draws", type=int, default=400, help="number of draws (default 400)")
    w.add_argument("--first", type=int, default=0, help="index of the first draw (default 0)")
    s = sub.add_parser("scenario", help="one named scenario over a range of seeds")
    s.add_argument("name", help="scenario name, e.g. rc_reorder")
    s.add_argument("--seeds", required=True, help="seed range LO-HI (inclusive)")
    for p in (w, s):
        p.add_argument("--jobs", type=int, default=2,
                       help="worker processes (default 2; 1 runs in this process)")
    p = sub.add_parser("params", help="print one draw's seed and generator arguments")
    p.add_argument("master", type=int, help="master seed of the sweep")
    p.add_argument("index", type=int, help="index of the draw")
    a = ap.parse_args(argv)
    if a.cmd == "params":
        seed, kw = draw_params(a.master, a.index)
        print(json.dumps({"seed": seed, "name": "rc_clean", **kw}))
        return 0
    if a.cmd == "wide":
        idx = range(a.first, a.first + a.draws)
        draws = [draw_params(a.master, i) for i in idx]
        labels = [f"draw {i} seed {sd}" for i, (sd, _) in zip(idx, draws)]
        return _run(labels, [("rc_clean", sd, kw) for sd, kw in draws], a.jobs)
    seeds = _seeds(a.seeds)
    return _run([f"{a.name} {sd}" for sd in seeds], [(a.name, sd, {}) for sd in seeds], a.jobs)


if __name__ == "__main__":
    sys.exit(main())
