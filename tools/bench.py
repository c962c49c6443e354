#!/usr/bin/env python3
"""Benchmark: ibwire's bulk engines against tshark and Scapy on the same files, one run.

    python tools/bench.py                       # 1M and 10M packets, RoCEv2 pcap + native ERF
    python tools/bench.py --sizes 200k --peer-packets 50000 --json out.json
    python tools/bench.py --sizes 0 --engines 10M  # only the RC and credit engines
    python tools/bench.py --scale 2000000       # --jobs scaling: 1 and 2 Dask workers

Captures are generated once with the Numba bulk writer (`ibwire.gen.bulk`) into a
cache directory (default ~/.cache/ibwire-bench, never the repository) and reused:
RoCEv2 in pcap (Ethernet) and native InfiniBand in a native ERF file.

Every measurement runs in its own child process; the parent takes its CPU time and
peak RSS from wait4(). Rates are *marginal*, start-up excluded, and use CPU time
(user + system; the machine may be shared, wall time is printed beside it):
  * ibwire paths time their loop inside the child after importing and compiling
    (or loading the compiled kernels from the cache) on a small file; start-up is
    that import + warm-up time;
  * peers (tshark -q -z io,phs; tshark -T fields with 5 fields; Scapy PcapReader with
    ibwire's layers, dissecting every packet) run on the first P and 2P packets
    (`-c`) and the difference is used. They run on a prefix of the big files (tshark
    on 10M packets takes many minutes): the table says which.
The first-run Numba compile time is measured with an empty cache directory; a
second run with the filled cache shows what later runs pay.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIELDS5 = ["frame.len", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
           "infiniband.bth.p_key"]
TSHARK = ["tshark", "--disable-protocol", "tftp", "--disable-protocol", "rpcordma", "-n"]
WARM = 2000  # packets of the warm-up file


# -- children -----------------------------------------------------------------------
def child(mode: str, path: str, count: int) -> dict:
    """Run one measurement in this (child) process; return its numbers."""
    sys.path.insert(0, str(REPO))
    t0 = time.perf_counter()
    if mode in ("gen", "genbig"):  # here, so that the parent stays small (RSS)
        return {k: str(v) for k, v in captures(Path(path), count, mode == "genbig").items()}
    if mode == "scapy":
        import ibwire.dissectors  # noqa: F401 - binds the InfiniBand layers
        from scapy.utils import PcapReader
        n = nbytes = 0
        for pkt in PcapReader(path):
            pkt.layers()
            n += 1
            nbytes += len(pkt)
            if n >= count:
                break
        return {"n": n, "bytes": nbytes}
    if mode == "decode":
        import ibwire
        n = nbytes = 0
        for pkt in ibwire.read(path):
            n += 1
            nbytes += len(pkt.data)
            if n >= count:
                break
        return {"n": n, "bytes": nbytes}
    if mode == "rc":  # the RC engine on `count` packets of in-memory columns
        from ibwire.engines.rc_bench import engine_rate, tiled_columns
        r = engine_rate(tiled_columns(count), 3)
        return {"n": r["packets"], "pps": r["analyze_pps"], "kernel_pps": r["kernel_pps"]}
    if mode == "credits":  # the credit replay on `count` frames of in-memory columns
        from ibwire.analysis.credit_bench import credit_replay_rate
        r = credit_replay_rate(count, 3)
        return {"n": r["frames"], "pps": r["pkts_per_s"], "first_run_s": r["first_run_s"]}
    if mode == "compile":  # import, then every kernel on both kinds of file
        from ibwire.engines.columns import iter_chunks
        for p in os.environ["IBWIRE_BENCH_WARM"].split(os.pathsep):
            for _ in iter_chunks(p):
                pass
        return {"startup_s": time.perf_counter() - t0}
    import numpy as np

    from ibwire.engines import tables as T
    from ibwire.engines.columns import iter_chunks
    from ibwire.engines.crc_kernels import HAVE_LIB, ICRC, VCRC, check_crcs, crc_arrays
    from ibwire.engines.place import N_INFO, place
    from ibwire.engines.scan import batches

    def loop(p: str) -> tuple[int, int, float]:
        n = nbytes = 0
        spent = 0.0
        if mode in ("icrc", "icrc_tables", "vcrc"):
            which = VCRC if mode == "vcrc" else ICRC
            tables = T.kernel_tables()
            for b in batches(p):
                lo = np.empty((T.N_LAYERS, len(b)), np.int32)
                info = np.empty((N_INFO, len(b)), np.int32)
                place(b.buf, b.doff, b.cap, b.lt, lo, info, *tables)
                out = crc_arrays(len(b))
                c0 = time.process_time()
                check_crcs(b.buf, b.doff, lo, info, T.CRC_TMPL, T.CRC_TMPL_LEN, T.CRC32_T,
                           T.CRC16_T, *out, which, HAVE_LIB and mode == "icrc")
                spent += time.process_time() - c0
                n += len(b)
                nbytes += int(b.cap.sum())
            return n, nbytes, spent
        fields = {"columns": ["frame.len"] + [f"ibwire.offset.{x}" for x in T.LAYER_NAMES],
                  "fields5": FIELDS5, "verify": ["frame.number",
                                                 "infiniband.invariant.crc.status",
                                                 "infiniband.variant.crc.status",
                                                 "infiniband_link.lpcrc.status"]}[mode]
        c0 = time.process_time()
        for ch in iter_chunks(p, fields):
            n += len(ch)
            nbytes += int(ch.batch.cap.sum())
        return n, nbytes, time.process_time() - c0

    for warm in os.environ["IBWIRE_BENCH_WARM"].split(os.pathsep):
        loop(warm)  # loads (or compiles) every kernel the measured loop uses
    t1 = time.perf_counter()
    c1 = time.process_time()
    n, nbytes, spent = loop(path)
    return {"n": n, "bytes": nbytes, "startup_s": t1 - t0, "loop_wall_s": time.perf_counter() - t1,
            "loop_cpu_s": spent if mode in ("icrc", "icrc_tables", "vcrc")
            else time.process_time() - c1}


def run_child(args: list[str], env: dict | None = None) -> dict:
    """A child process: its JSON (if any), wall time, CPU time and peak RSS."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    out = proc.stdout.read() if proc.stdout else b""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    res = {"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
           "rss_mb": ru.ru_maxrss / 1024, "exit": proc.returncode}
    if args[0] == sys.executable and proc.returncode == 0:
        res.update(json.loads(out.decode().strip().splitlines()[-1]))
    return res


def me(mode: str, path: Path, count: int = 0) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(path),
            "--count", str(count)]


# -- captures -------------------------------------------------------------------------
def captures(cache: Path, n: int, big: bool = False) -> dict[str, Path]:
    """RoCEv2 pcap and native-IB ERF of n packets (`big`: 2-4 KB data packets, for CRC
    throughput; otherwise the bulk writer's default mix of small packets)."""
    sys.path.insert(0, str(REPO))
    from ibwire.engines.scan import batches
    from ibwire.gen.bulk import BulkConfig, bulk_write

    cache.mkdir(parents=True, exist_ok=True)
    tag = f"{n}_big" if big else f"{n}"
    shape = {"pmtu": 4096, "last_len": 2048, "msg_pkts": 2} if big else {}
    out = {"roce2": cache / f"roce2_{tag}.pcap", "ib": cache / f"ib_{tag}.erf"}
    if not out["roce2"].exists():
        bulk_write(str(out["roce2"]) + ".tmp", BulkConfig(encap="roce2", packets=n, **shape))
        os.replace(str(out["roce2"]) + ".tmp", out["roce2"])
    if not out["ib"].exists():
        tmp = cache / f"ib_{tag}.pcap.tmp"
        bulk_write(str(tmp), BulkConfig(encap="ib", packets=n, **shape))
        import numpy as np
        with open(str(out["ib"]) + ".tmp", "wb") as f:  # the ERF records, end to end
            for b in batches(tmp):
                start, end = int(b.roff[0]), int(b.doff[-1] + b.cap[-1])
                keep = np.ones(end - start, bool)  # drop the pcap record headers
                keep[((b.roff - start)[:, None] + np.arange(16)).ravel()] = False
                f.write(b.buf[start:end][keep].tobytes())
        tmp.unlink()
        os.replace(str(out["ib"]) + ".tmp", out["ib"])
    return out


def files_of(cache: Path, n: int, big: bool) -> dict[str, Path]:
    """The captures, generated (once) in a child process: the parent's size would
    otherwise count in every later child's peak RSS (Linux keeps it across exec)."""
    r = run_child(me("genbig" if big else "gen", cache, n))
    if r["exit"]:
        raise SystemExit(f"generating {n}-packet captures in {cache} failed")
    return {k: Path(r[k]) for k in ("roce2", "ib")}


def _size(text: str) -> int:
    text = text.lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * mult)


# -- the run --------------------------------------------------------------------------
def peer(cmd: list[str], p: int) -> dict:
    """Marginal numbers of a peer from runs on the first p and 2p packets."""
    one, two = run_child(cmd + [str(p)]), run_child(cmd + [str(2 * p)])
    d_cpu = max(two["cpu_s"] - one["cpu_s"], 1e-9)
    d_wall = max(two["wall_s"] - one["wall_s"], 1e-9)
    return {"pps": p / d_cpu, "pps_wall": p / d_wall, "startup_s": max(one["cpu_s"] - d_cpu, 0),
            "rss_mb": two["rss_mb"], "prefix": p, "exit": two["exit"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--sizes", default="1M,10M", help="packet counts (default 1M,10M)")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "IBWIRE_BENCH_CACHE", Path.home() / ".cache" / "ibwire-bench")),
        help="where captures and the Numba cache live (default ~/.cache/ibwire-bench)")
    ap.add_argument("--peer-packets", type=int, default=100_000,
                    help="tshark prefix P (runs on P and 2P packets; default 100000)")
    ap.add_argument("--scapy-packets", type=int, default=10_000,
                    help="Scapy and ibwire.read prefix (default 10000)")
    ap.add_argument("--crc-packets", type=int, default=200_000,
                    help="packets of the large-packet captures for CRC throughput "
                    "(default 200000; 0 = skip)")
    ap.add_argument("--engines", default="10M",
                    help="packets of in-memory columns for the RC and credit engines "
                    "(default 10M; 0 = skip)")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--scale", type=int, metavar="N", help="only the --jobs scaling rows "
                    "(tools/bench_scale.py): N packets with 1 and 2 workers")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.count)))
        return 0
    if args.scale:
        from bench_scale import report as scale_report
        from bench_scale import scale_rows
        print(scale_report(scale_rows(args.scale, ["1", "1d", "2"], args.cache)))
        return 0
    from bench_report import report  # tools/ is on sys.path when run as a script

    numba_cache = args.cache / "numba"
    env = {"NUMBA_CACHE_DIR": str(numba_cache)}
    warm = files_of(args.cache / "warm", WARM, False)
    env_w = {**env, "IBWIRE_BENCH_WARM": os.pathsep.join(map(str, warm.values()))}
    results: dict = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()},
                     "runs": []}
    with tempfile.TemporaryDirectory() as fresh:   # first run: compile everything
        first = run_child(me("compile", warm["ib"]), {**env_w, "NUMBA_CACHE_DIR": fresh})
    run_child(me("compile", warm["ib"]), env_w)      # fills the bench's own cache
    second = run_child(me("compile", warm["ib"]), env_w)
    results["compile"] = {"first_run_s": first.get("startup_s"),
                          "cached_run_s": second.get("startup_s")}
    n_eng = _size(args.engines) if args.engines != "0" else 0
    for mode in ("rc", "credits") if n_eng else ():
        r = run_child(me(mode, warm["ib"], n_eng), env_w)
        results.setdefault("engines", {})[mode] = r
        print(f"{mode} engine, {r.get('n', 0):,} packets in memory: "
              f"{r.get('pps', 0):,.0f} pkt/s, peak RSS {r.get('rss_mb', 0):.0f} MB", flush=True)
    have_tshark = shutil.which("tshark") is not None
    plan = [(_size(s), False) for s in args.sizes.split(",") if _size(s)]
    if args.crc_packets:
        plan.append((args.crc_packets, True))
    for size, big in plan:
        files = files_of(args.cache, size, big)
        for encap, path in files.items():
            row: dict = {"file": path.name, "encap": encap, "packets": size, "big": big,
                         "bytes": path.stat().st_size, "ibwire": {}, "peers": {}}
            for mode in ("columns", "fields5", "verify", "icrc", "icrc_tables", "vcrc"):
                if mode == "vcrc" and encap != "ib":
                    continue
                r = run_child(me(mode, path), env_w)
                r["pps"] = r["n"] / r["loop_cpu_s"]
                r["bps"] = r["bytes"] / r["loop_cpu_s"]
                row["ibwire"][mode] = r
            p = min(args.peer_packets, size // 2)
            if have_tshark:
                row["peers"]["tshark io,phs"] = peer(
                    [*TSHARK, "-r", str(path), "-q", "-z", "io,phs", "-c"], p)
                row["peers"]["tshark -T fields (5)"] = peer(
                    [*TSHARK, "-r", str(path), "-T", "fields",
                     *[x for f in FIELDS5 for x in ("-e", f)], "-c"], p)
            s = min(args.scapy_packets, size // 2)
            if encap == "roce2":
                row["peers"]["scapy"] = peer(me("scapy", path)[:-1], s)
            row["peers"]["ibwire.read"] = peer(me("decode", path)[:-1], s)
            results["runs"].append(row)
            print(f"done: {path.name}", file=sys.stderr)
    text = report(results)
    print(text)
    print(json.dumps(results, indent=1, default=float))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
