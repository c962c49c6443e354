"""Speed of the credit replay over columns, for `tools/bench.py`.

    from ibwire.analysis.credit_bench import credit_replay_rate
    credit_replay_rate(1_000_000)     # {'frames': ..., 'pkts_per_s': ..., ...}

The columns are a generated link-credit capture repeated (time shifted) to the
requested size; the timed part is frames -> events -> replay (both kernels), best
of `repeat` runs after one warm-up (which also loads the compiled kernels).
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np

from ibwire.analysis.credit_input import TIME_COLUMN, credit_columns
from ibwire.analysis.credits import Geometry, build_events
from ibwire.engines.credits_kernel import run


def sample_columns(n_frames: int, seed: int = 1) -> dict[str, np.ndarray]:
    from ibwire.gen.config import scenario
    from ibwire.gen.sim import simulate

    path = os.path.join(tempfile.mkdtemp(prefix="ibwire-credits-"), "c.pcap")
    simulate(scenario("link_credits", seed=seed, messages=80)).write(path, truth=False)
    base = credit_columns(path)
    os.unlink(path)
    n = int(base["frame.number"].shape[0])
    k = max(1, -(-n_frames // n))
    span = int(base[TIME_COLUMN][-1] - base[TIME_COLUMN][0]) + 10_000
    out = {}
    for name, v in base.items():
        if name == TIME_COLUMN:
            out[name] = (v[None, :] + (np.arange(k, dtype=np.int64) * span)[:, None]).ravel()
        elif name == "frame.number":
            out[name] = np.arange(1, n * k + 1, dtype=np.int64)
        else:
            out[name] = np.tile(v, k)
        out[name] = out[name][:n_frames]
    return out


def credit_replay_rate(n_frames: int = 1_000_000, repeat: int = 3) -> dict[str, Any]:
    cols = sample_columns(n_frames)
    n = int(cols["frame.number"].shape[0])

    def once() -> float:
        t0 = time.perf_counter()
        ev = build_events(cols, Geometry())
        run(ev["grp"], ev["etype"], ev["t"], ev["val"])
        return time.perf_counter() - t0

    t0 = time.perf_counter()
    once()
    warm = time.perf_counter() - t0
    best = min(once() for _ in range(repeat))
    return {"frames": n, "best_s": round(best, 4), "pkts_per_s": round(n / best),
            "first_run_s": round(warm, 4)}
