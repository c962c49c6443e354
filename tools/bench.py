#!/usr/bin/env python3
"""Benchmark: ibwire against tshark and Scapy on the same capture, in one run.

    python tools/bench.py CAPTURE [--repeat 3] [--fields]
    python tools/bench.py --rc 10000000      # RC engine on in-memory columns

Measures packets per second for
  * ibwire: read + decode every packet (CRCs checked), library loop;
  * ibwire dump -T fields (the CLI, in a subprocess), when --fields;
  * tshark -T fields -e infiniband.bth.psn (subprocess; skipped if absent);
  * Scapy rdpcap + full dissection with ibwire's generated layers.
and prints the ratios. Speed claims in notes come from this script, never from
unit tests. Best of --repeat runs for each.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

FIELDS = ["-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn",
          "-e", "infiniband.bth.destqp", "-e", "infiniband.invariant.crc"]


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_ibwire(path: Path) -> int:
    import ibwire
    from ibwire.capture import open_capture

    n = 0
    with open_capture(path) as frames:
        for frame in frames:
            ibwire.decode(frame.data, frame.linktype, frame=frame)
            n += 1
    return n


def bench_scapy(path: Path) -> None:
    from scapy.utils import PcapReader

    import ibwire.dissectors  # noqa: F401 - binds the InfiniBand layers

    for pkt in PcapReader(str(path)):
        pkt.layers()


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bench_rc(n: int, repeat: int) -> None:
    from ibwire.engines.rc_bench import engine_rate, tiled_columns

    r = engine_rate(tiled_columns(n), repeat)
    print(f"RC engine, {r['packets']:,} packets in memory, best of {repeat}: "
          f"analyze {r['analyze_pps']:,.0f} pkt/s, kernel pass {r['kernel_pps']:,.0f} pkt/s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", type=Path, nargs="?")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fields", action="store_true", help="also time `ibwire dump -T fields`")
    ap.add_argument("--rc", type=int, metavar="N", help="time the RC engine (ibwire rc) on "
                    "N packets of in-memory columns (a generated capture with loss, tiled)")
    args = ap.parse_args()
    if args.rc:
        bench_rc(args.rc, args.repeat)
    if args.capture is None:
        return 0
    n = bench_ibwire(args.capture)
    rows: list[tuple[str, float]] = [
        ("ibwire decode (library)", _best(lambda: bench_ibwire(args.capture), args.repeat))]
    if args.fields and shutil.which("ibwire"):
        rows.append(("ibwire dump -T fields", _best(lambda: _run(
            ["ibwire", "dump", "-r", str(args.capture), "-T", "fields", *FIELDS]), args.repeat)))
    if shutil.which("tshark"):
        rows.append(("tshark -T fields", _best(lambda: _run(
            ["tshark", "-r", str(args.capture), "-T", "fields", *FIELDS]), args.repeat)))
    try:
        rows.append(("scapy + ibwire layers", _best(lambda: bench_scapy(args.capture),
                                                   args.repeat)))
    except ImportError as exc:
        print(f"scapy layers unavailable: {exc}", file=sys.stderr)
    base = rows[0][1]
    print(f"{args.capture.name}: {n} packets, best of {args.repeat}")
    for name, secs in rows:
        print(f"  {name:26s} {secs:8.3f} s  {n / secs:12,.0f} pkt/s  "
              f"time vs ibwire library {secs / base:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
