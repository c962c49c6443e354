#!/usr/bin/env python3
"""Benchmark: `ibwire report` on large captures (issue 17: bounded time and memory).

    python tools/bench_html_report.py                    # 1M and 10M packets
    python tools/bench_html_report.py --sizes 200k,1M --also-json

Captures come from the Numba bulk writer (`ibwire gen --engine bulk`: clean RC
traffic, RoCEv2 pcap), generated once into a cache directory (default
~/.cache/ibwire-bench, never the repository). Each command runs in its own child
process: wall time, CPU time (user + system) and peak RSS from wait4(), and the RSS
sampled every 0.2 s, printed at each quarter of the run (flat = bounded memory).
`--also-json` runs `ibwire rc -T json` and `ibwire credits -T json` beside it: the
report should cost about what its analyses cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _size(text: str) -> int:
    text = text.lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * mult)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(argv: list[str]) -> dict:
    """One child: wall and CPU seconds, peak RSS, RSS samples over time."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    samples: list[tuple[float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            samples.append((time.perf_counter() - t0, _rss_mb(proc.pid)))
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    err = proc.stderr.read() if proc.stderr else b""
    _, status, ru = os.wait4(proc.pid, 0)
    done.set()
    th.join()
    wall = time.perf_counter() - t0
    quarters = []
    for q in (0.25, 0.5, 0.75, 1.0):
        got = [r for t, r in samples if t <= q * wall]
        quarters.append(max(got) if got else 0.0)
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
            "quarters": quarters, "exit": os.waitstatus_to_exitcode(status),
            "stderr": err.decode(errors="replace")[-400:]}


def capture(cache: Path, n: int) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"report_roce2_{n}.pcap"
    if not path.exists():
        tmp = cache / f"report_roce2_{n}.tmp.pcap"
        subprocess.run([sys.executable, "-m", "ibwire.cli.main", "gen", "--packets", str(n),
                        "--engine", "bulk", "--no-truth", "-q", "-o", str(tmp)], check=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
        os.replace(tmp, path)
    return path


def frames_of(path: Path) -> int:
    sys.path.insert(0, str(REPO))
    from ibwire.engines.scan import batches
    return sum(len(b) for b in batches(path))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--sizes", default="1M,10M", help="request packets (default 1M,10M)")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "IBWIRE_BENCH_CACHE", Path.home() / ".cache" / "ibwire-bench")))
    ap.add_argument("--also-json", action="store_true",
                    help="also time `ibwire rc -T json` and `ibwire credits -T json`")
    args = ap.parse_args()
    ib = [sys.executable, "-m", "ibwire.cli.main"]
    print(f"{'capture':28s} {'frames':>11s} {'command':24s} {'wall s':>8s} {'CPU s':>8s} "
          f"{'peak RSS MB':>11s}  RSS MB at 25/50/75/100 % of the run", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for size in [_size(s) for s in args.sizes.split(",")]:
            path = capture(args.cache, size)
            frames = frames_of(path)
            cmds = {"ibwire report": [*ib, "report", str(path), "-o",
                                      os.path.join(tmp, "r.html"), "--no-progress"]}
            if args.also_json:
                cmds["ibwire rc -T json"] = [*ib, "rc", str(path), "-T", "json"]
                cmds["ibwire credits -T json"] = [*ib, "credits", str(path), "-T", "json"]
            for label, argv in cmds.items():
                r = run(argv)
                q = "/".join(f"{x:.0f}" for x in r["quarters"])
                print(f"{path.name:28s} {frames:11,d} {label:24s} {r['wall_s']:8.1f} "
                      f"{r['cpu_s']:8.1f} {r['rss_mb']:11.0f}  {q}"
                      + (f"  EXIT {r['exit']}: {r['stderr']}" if r["exit"] else ""),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
