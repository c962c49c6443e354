"""The table `tools/bench.py` prints (and the targets of issue 12 it checks)."""

from __future__ import annotations

ROWS = (("columns", "ibwire header columns (io,phs input)"), ("fields5", "ibwire 5 field columns"),
        ("verify", "ibwire verify (ICRC+VCRC+LPCRC)"), ("icrc", "ibwire ICRC kernel alone"),
        ("icrc_tables", "ibwire ICRC, slicing-by-16 only"),
        ("vcrc", "ibwire VCRC kernel alone"))
PEERS = ("tshark io,phs", "tshark -T fields (5)", "scapy", "ibwire.read")


def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:9.2f}M" if x >= 1e5 else f"{x:10,.0f}"


def report(results: dict) -> str:
    lines = []
    c = results.get("compile", {})
    lines.append(f"Numba: first run (empty cache) start-up {c.get('first_run_s', 0):.1f} s "
                 "(import + compile of every kernel); with the cache "
                 f"{c.get('cached_run_s', 0):.2f} s")
    lines.append(f"machine: {results['machine']['cpus']} CPUs, load average "
                 f"{results['machine']['load'][0]:.1f} at the start (shared machine: rates "
                 "use CPU time, wall rates beside)")
    checks = []
    for row in results["runs"]:
        lines.append("")
        lines.append(f"{row['file']}: {row['packets']:,} packets, {row['bytes'] / 1e6:,.0f} MB "
                     f"({row['encap']})")
        lines.append(f"  {'path':38s} {'pkt/s CPU':>10s} {'MB/s':>8s} {'pkt/s wall':>10s} "
                     f"{'start-up':>8s} {'RSS MB':>7s}  " + "  ".join(
                         f"x {p[:14]:>14s}" for p in PEERS[:3]))
        peers = row["peers"]
        for mode, label in ROWS:
            r = row["ibwire"].get(mode)
            if r is None:
                continue
            wall = r["n"] / r["loop_wall_s"] if mode in ("columns", "fields5", "verify") \
                else float("nan")
            ratios = "  ".join(
                f"{r['pps'] / peers[p]['pps']:16.1f}" if p in peers else f"{'-':>16s}"
                for p in PEERS[:3])
            lines.append(f"  {label:38s} {_fmt_rate(r['pps'])} {r['bps'] / 1e6:8.0f} "
                         f"{_fmt_rate(wall)} {r['startup_s']:8.2f} {r['rss_mb']:7.0f}  {ratios}")
        for p in PEERS:
            if p not in peers:
                continue
            q = peers[p]
            lines.append(f"  {p + ' (first ' + format(2 * q['prefix'], ',') + ' pkts)':38s} "
                         f"{_fmt_rate(q['pps'])} {'':8s} {_fmt_rate(q['pps_wall'])} "
                         f"{q['startup_s']:8.2f} {q['rss_mb']:7.0f}")
        ib = row["ibwire"]
        if not row.get("big"):  # the large-packet files are for CRC throughput
            if "tshark io,phs" in peers:
                x = ib["columns"]["pps"] / peers["tshark io,phs"]["pps"]
                checks.append((f"{row['file']}: header columns >= 50x tshark io,phs",
                               x >= 50, f"{x:.0f}x"))
            checks.append((f"{row['file']}: header columns >= 10M pkt/s",
                           ib["columns"]["pps"] >= 1e7, f"{ib['columns']['pps'] / 1e6:.1f}M"))
        checks.append((f"{row['file']}: ICRC >= 3 GB/s/core", ib["icrc"]["bps"] >= 3e9,
                       f"{ib['icrc']['bps'] / 1e9:.2f} GB/s"))
        if "vcrc" in ib:
            checks.append((f"{row['file']}: VCRC >= 1 GB/s/core", ib["vcrc"]["bps"] >= 1e9,
                           f"{ib['vcrc']['bps'] / 1e9:.2f} GB/s"))
        rss = max(r["rss_mb"] for r in ib.values())
        checks.append((f"{row['file']}: peak RSS < 500 MB", rss < 500, f"{rss:.0f} MB"))
    lines.append("")
    lines.append("targets (issue 12):")
    lines += [f"  {'met   ' if ok else 'MISSED'} {what}: {val}" for what, ok, val in checks]
    return "\n".join(lines)
