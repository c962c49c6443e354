"""Throughput of the RC engine on large in-memory columns (for tools/bench.py).

`tiled_columns` repeats a small generated capture (with loss, NAKs and go-back-N)
end to end, each copy's PSNs and times shifted past the previous copy's, so the
result is a few long connections of any length; `engine_rate` times the engine.
"""

from __future__ import annotations

import time

import numpy as np


def base_columns(seed: int = 1) -> dict[str, np.ndarray]:
    """A small generated RC capture with faults, as engine columns."""
    import tempfile
    from pathlib import Path

    from ibwire.analysis.rc_input import rc_columns
    from ibwire.gen import scenario, simulate

    cfg = scenario("rc_loss", seed=seed, connections=4, messages=200)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "base.pcap")
        simulate(cfg).write(path, cfg.fmt, truth=False)
        return rc_columns(path)


def tiled_columns(n_packets: int, base: dict[str, np.ndarray] | None = None
                  ) -> dict[str, np.ndarray]:
    base = base_columns() if base is None else base
    n = len(base["frame.number"])
    reps = -(-n_packets // n)
    psn = base["infiniband.bth.psn"].astype(np.int64)
    ts = base["frame.time_ns"].astype(np.int64)
    has = psn >= 0
    # Shift each copy past the previous one: PSNs by more than any stream's extent.
    span = int(psn[has].max() - psn[has].min()) + 1 if has.any() else 1
    span = span if span < 1 << 22 else 1 << 12
    k = np.repeat(np.arange(reps, dtype=np.int64), n)[:n_packets]
    out: dict[str, np.ndarray] = {}
    for name, col in base.items():
        if name == "ibwire.endpoints":
            out[name] = col
            continue
        out[name] = np.tile(col, reps)[:n_packets]
    p = out["infiniband.bth.psn"].astype(np.int64)
    out["infiniband.bth.psn"] = np.where(p >= 0, (p + k * span) & 0xFFFFFF, -1).astype(np.int32)
    dur = int(ts.max() - ts.min()) + 1000
    out["frame.time_ns"] = np.tile(ts, reps)[:n_packets] + k * dur
    out["frame.number"] = np.arange(1, n_packets + 1, dtype=np.int64)
    return out


def engine_rate(cols: dict[str, np.ndarray], repeat: int = 2) -> dict[str, float]:
    """Packets per second: the whole `analyze` (pairing, unwrap, occurrence sort,
    kernel, RTT, episodes) and the kernel pass alone. Best of `repeat`."""
    from ibwire.analysis import rc as A

    n = len(cols["frame.number"])
    A.analyze({k: v[:1000] for k, v in cols.items()} | {"ibwire.endpoints":
                                                        cols["ibwire.endpoints"]})  # compile
    best_all = best_kernel = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        A.analyze(cols)
        best_all = min(best_all, time.perf_counter() - t0)
        best_kernel = min(best_kernel, A.LAST_KERNEL_SECONDS)
    return {"packets": n, "analyze_pps": n / best_all, "kernel_pps": n / best_kernel}
