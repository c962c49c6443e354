#!/usr/bin/env python3
"""Huge-file benchmark (issue 7): flat memory on a 10M-packet capture, clean SIGINT.

    python tools/bench_hugefile.py                      # 10,000,000 packets
    python tools/bench_hugefile.py --packets 200000     # a quick check
    python tools/bench_hugefile.py --packets 1000000 --keep --dir /var/tmp --json out.json

Steps:
1. Generate the capture, streaming (`ibwire.gen.bulk`: templated RC RoCEv2 traffic
   with correct CRCs; without it, templated packets written with PcapWriter).
2. Run `ibwire stats FILE`, `ibwire dump -q -z expert FILE` and a library loop
   (`open_capture` + `decode`) as subprocesses, sampling each one's RSS and its read
   position in the file (/proc/PID/fdinfo): RSS is reported at 10 %, 50 % and 100 %
   of the file read, and must not grow with the file (growth from 10 % to 100 % at
   most --max-growth MiB). `stats` must count every packet.
3. Run `ibwire stats FILE` again and send SIGINT at --sigint-at of the file: it must
   exit cleanly (status 130, or 0 like tshark; no traceback) with the statistics of
   what it read printed (0 < Packets < total).

Not a unit test: prints a table (and --json), exits 1 when a check fails. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARKS = (10, 50, 100)
LIBRARY_LOOP = """
import sys, ibwire
from ibwire.capture import open_capture
n = bad = 0
for fr in open_capture(sys.argv[1]):
    n += 1
    bad += bool(ibwire.decode(fr.data, fr.linktype).problems)
print(f"Packets: {n}\\nMalformed packets: {bad}")
"""


def generate(path: Path, packets: int) -> dict:
    t0 = time.perf_counter()
    try:
        from ibwire.gen.bulk import BulkConfig, bulk_write
    except ImportError:
        _templated(path, packets)
        how = "templated (PcapWriter)"
    else:
        bulk_write(str(path), BulkConfig(packets=packets))
        how = "ibwire.gen.bulk"
    return {"generator": how, "seconds": time.perf_counter() - t0,
            "bytes": path.stat().st_size}


def _templated(path: Path, packets: int) -> None:
    """RoCEv2 RC WRITE Only packets with the PSN patched (the ICRC is left stale)."""
    from ibwire import ETHERNET, IPV4, RETH, UDP, encode
    from ibwire.capture import PcapWriter
    from ibwire.headers import BTH

    tpl = bytearray(encode(ETHERNET(), IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(),
                           BTH(opcode=0x0A, destqp=0x11), RETH(dmalen=64), payload=bytes(64)))
    psn_at = ETHERNET.size + IPV4.size + UDP.size + BTH.by_name["psn"].offset
    with PcapWriter(str(path), 1) as w:
        for i in range(packets):
            tpl[psn_at:psn_at + 3] = (i & 0xFFFFFF).to_bytes(3, "big")
            w.write(bytes(tpl), ts_ns=1_700_000_000_000_000_000 + i * 1000)


def _read_pos(pid: int, target: str) -> int | None:
    """The file offset of `target` in process `pid`, from /proc."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                        return int(f.readline().split()[1])
            except OSError:
                continue
    except OSError:
        return None
    return None


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_sampled(cmd: list[str], path: Path, sigint_at: float | None = None) -> dict:
    """Run `cmd`, sampling RSS against the fraction of `path` read."""
    size, target = path.stat().st_size, str(path.resolve())
    out = tempfile.TemporaryFile("w+")
    err = tempfile.TemporaryFile("w+")
    t0 = time.perf_counter()
    # A shell's background job inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: give the child the default handler, as a terminal would.
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    rss: dict[int, float] = {}
    last_rss, sent = 0.0, None
    while proc.poll() is None:
        pos, mem = _read_pos(proc.pid, target), _rss_mib(proc.pid)
        if pos is not None and mem is not None:
            last_rss = mem
            for mark in MARKS:
                if mark not in rss and pos * 100 >= mark * size:
                    rss[mark] = mem
            if sigint_at is not None and sent is None and pos >= sigint_at * size:
                proc.send_signal(signal.SIGINT)
                sent = pos / size
        time.sleep(0.02)
    seconds = time.perf_counter() - t0
    out.seek(0)
    err.seek(0)
    text, errors = out.read(), err.read()
    return {"cmd": " ".join(cmd[-4:]), "status": proc.returncode, "seconds": seconds,
            "rss_mib": {m: rss.get(m, last_rss) for m in MARKS}, "sigint_at": sent,
            "packets": _stat(text, "Packets"), "malformed": _stat(text, "Malformed packets"),
            "stderr": errors.strip()[-500:], "stdout_tail": text[-300:]}


def _stat(text: str, label: str) -> int | None:
    m = re.search(rf"^\s*{label}:\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--packets", type=int, default=10_000_000)
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--keep", action="store_true", help="keep the generated capture")
    p.add_argument("--reuse", type=Path, help="an existing capture instead of generating")
    p.add_argument("--sigint-at", type=float, default=0.3)
    p.add_argument("--max-growth", type=float, default=16.0, help="MiB, 10%% -> 100%%")
    p.add_argument("--skip", default="", help="comma list of: stats,expert,library,sigint")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    path = args.reuse or args.dir / f"ibwire-huge-{args.packets}.pcap"
    report: dict = {"packets": args.packets, "file": str(path)}
    if not args.reuse:
        report["generate"] = generate(path, args.packets)
        print(f"generated {args.packets} packets, {report['generate']['bytes']} bytes in "
              f"{report['generate']['seconds']:.1f} s ({report['generate']['generator']})")
    ibwire = [sys.executable, "-m", "ibwire.cli.main"]
    runs = {"stats": ibwire + ["stats", str(path)],
            "expert": ibwire + ["dump", "-q", "-z", "expert", str(path)],
            "library": [sys.executable, "-c", LIBRARY_LOOP, str(path)]}
    failures: list[str] = []
    for name, cmd in runs.items():
        if name in skip:
            continue
        r = run_sampled(cmd, path)
        report[name] = r
        growth = r["rss_mib"][100] - r["rss_mib"][10]
        print(f"{name:8} status {r['status']}  {r['seconds']:8.1f} s  "
              f"{args.packets / r['seconds']:9.0f} pkt/s  RSS MiB at 10/50/100 %: "
              + " / ".join(f"{r['rss_mib'][m]:.1f}" for m in MARKS))
        if r["status"] != 0 or "Traceback" in r["stderr"]:
            failures.append(f"{name}: status {r['status']} {r['stderr']}")
        if growth > args.max_growth:
            failures.append(f"{name}: RSS grew {growth:.1f} MiB from 10 % to 100 %")
        if name in ("stats", "library") and r["packets"] != args.packets:
            failures.append(f"{name}: counted {r['packets']} packets of {args.packets}")
    if "sigint" not in skip:
        r = run_sampled(runs["stats"], path, sigint_at=args.sigint_at)
        report["sigint"] = r
        print(f"sigint   status {r['status']}  sent at {100 * (r['sigint_at'] or 0):.0f} % "
              f"of the file; stats printed for {r['packets']} packets; stderr: "
              f"{r['stderr'][:120]!r}")
        if r["status"] not in (0, 130) or "Traceback" in r["stderr"]:
            failures.append(f"sigint: status {r['status']}, stderr {r['stderr'][:300]!r}")
        if not r["packets"] or r["packets"] >= args.packets:
            failures.append(f"sigint: no partial statistics flushed (Packets: {r['packets']})")
    if not args.keep and not args.reuse:
        path.unlink(missing_ok=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    for f in failures:
        print(f"FAIL {f}")
    print("OK" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
