#!/usr/bin/env python3
"""Throughput scaling of the chunked RC path (`ibwire rc --jobs N`): packets per
second with 1 worker (this process) and with N Dask worker processes, on the same
generated multi-capture set, in one run (docs/scale-out.md).

    python tools/bench_scale.py --packets 200000 --workers 1,2
    python tools/bench.py --scale 200000          # the same, from the main benchmark

Rates are wall-clock (workers run in other processes): on a shared machine compare
the ratios of one run, not absolute numbers. Cluster start-up is excluded (the
cluster is started, then warmed on a small set, before the clock starts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def capture_set(cache: Path, n: int, points: int = 2) -> list[str]:
    """`points` captures of n/points packets each (bulk writer, 8 connections), reused."""
    sys.path.insert(0, str(REPO))
    from ibwire.gen.bulk import BulkConfig, bulk_write
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for p in range(points):
        path = cache / f"scale_{n}_{p}.pcap"
        if not path.exists():
            bulk_write(str(path) + ".tmp", BulkConfig(encap="roce2", packets=n // points,
                                                      connections=8, seed=p + 1))
            os.replace(str(path) + ".tmp", path)
        out.append(str(path))
    return out


def scale_rows(n: int, workers: list[str], cache: Path, chunk: int = 25_000) -> list[dict]:
    """One row per worker count: packets, seconds, packets/s, speed-up over 1 worker."""
    sys.path.insert(0, str(REPO))
    from ibwire.scale import runner
    paths = capture_set(cache, n)
    warm = capture_set(cache, 2000)
    rows: list[dict] = []
    ref = None
    for w in workers:
        # "1": this process, no Dask; "1d": one Dask worker process (the overhead alone)
        with _client(w) as c:
            runner.rc_document(warm, c, chunk)                # imports, Numba cache
            t0 = time.perf_counter()
            doc = runner.rc_document(paths, c, chunk)
            secs = time.perf_counter() - t0
        packets = sum(x["packets"] for x in doc["connections"])
        ref = ref or secs
        rows.append({"workers": w, "packets": packets, "seconds": round(secs, 3),
                     "pps": round(packets / secs), "speedup": round(ref / secs, 2)})
    return rows


def _client(w: str) -> Any:
    from dask.distributed import Client, LocalCluster

    from ibwire.scale import runner
    if w.endswith("d"):
        cluster = LocalCluster(n_workers=int(w[:-1]), threads_per_worker=1,
                               dashboard_address=None)
        return _Both(cluster, Client(cluster))
    return runner.client(int(w))


class _Both:
    """A LocalCluster and its client, closed together."""

    def __init__(self, cluster: Any, client: Any) -> None:
        self.cluster, self.client = cluster, client

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.cluster.close()


def report(rows: list[dict]) -> str:
    lines = ["chunked RC path (decode + shuffle + RC engine), wall clock:"]
    lines += [f"  {r['workers']:>3} worker(s): {r['packets']:,} packets in {r['seconds']:.2f} s "
              f"= {r['pps']:,} pkt/s  (x{r['speedup']:.2f})" for r in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=200_000, help="packets in all (2 captures)")
    ap.add_argument("--workers", default="1,1d,2", help="worker counts (default 1,1d,2; "
                    "1 = this process, Nd = N Dask workers even for N=1)")
    ap.add_argument("--chunk", type=int, default=25_000, help="frames per decode task")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "IBWIRE_BENCH_CACHE", Path.home() / ".cache" / "ibwire-bench")),
        help="where the generated captures live (default ~/.cache/ibwire-bench)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()
    rows = scale_rows(args.packets, args.workers.split(","), args.cache,
                      args.chunk)
    print(report(rows))
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
