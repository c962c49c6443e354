#!/usr/bin/env python3
"""Generation rate of `ibwire gen`: the bulk writer (default 10 million packets) and
the full simulator.

    python tools/bench_gen.py                        # 10M RoCEv2 + 10M native, to /tmp
    python tools/bench_gen.py --packets 2000000 --encap ib --out /dev/null
    python tools/bench_gen.py --sim                  # the event-driven simulator too

The first call compiles (or loads from Numba's cache) the kernel; a 1000-packet
warm-up run keeps that out of the measurement. Rates are wall clock, including
writing the file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ibwire.gen import scenario, simulate  # noqa: E402
from ibwire.gen.bulk import BulkConfig, bulk_write  # noqa: E402


def bench_bulk(encap: str, packets: int, out: str, msg_pkts: int) -> None:
    bulk_write(os.devnull, BulkConfig(encap=encap, packets=1000))        # warm-up
    t0 = time.perf_counter()
    s = bulk_write(out, BulkConfig(encap=encap, packets=packets, msg_pkts=msg_pkts))
    dt = time.perf_counter() - t0
    size = s["bytes"]
    print(f"bulk {encap:8} {packets:>11,} packets  {dt:6.2f} s  {packets / dt:>12,.0f} "
          f"packets/s  {size / dt / 1e6:7.1f} MB/s  -> {out} ({size / 1e6:,.0f} MB)")


def bench_sim(encap: str, packets: int) -> None:
    t0 = time.perf_counter()
    r = simulate(scenario("rc_loss", encap=encap, packets=packets, loss=0.01))
    dt = time.perf_counter() - t0
    n = len(r.frames)
    print(f"sim  {encap:8} {n:>11,} frames   {dt:6.2f} s  {n / dt:>12,.0f} frames/s "
          f"(simulation with 1% loss, in memory)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=10_000_000)
    ap.add_argument("--encap", action="append", help="roce2, roce2-v6, roce1, ib, ib-grh "
                    "(repeatable; default roce2 and ib)")
    ap.add_argument("--msg-pkts", type=int, default=1, help="PSNs per message")
    ap.add_argument("--out", default=None, help="output file (default /tmp/bench_<encap>.pcap, "
                    "removed afterwards; /dev/null measures generation alone)")
    ap.add_argument("--keep", action="store_true", help="keep the output files")
    ap.add_argument("--sim", action="store_true", help="also time the simulator (20k packets)")
    args = ap.parse_args()
    for encap in args.encap or ["roce2", "ib"]:
        out = args.out or f"/tmp/bench_{encap}.pcap"
        bench_bulk(encap, args.packets, out, args.msg_pkts)
        if not args.keep and args.out is None:
            os.remove(out)
        if args.sim:
            bench_sim(encap, 20_000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
