"""Port counters over time, per port (PNG or SVG via matplotlib).

`plot_counters(capture, out, fmt)` draws one row per port that a performance
manager read: traffic (PortXmitPkts / PortRcvPkts per second between reads) on
the left, the counters that matter (PortXmitWait, SymbolErrorCounter,
LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors, PortXmitDiscards) as
values on the right; resets (CounterSelect) are dashed vertical lines. Up to
`PORTS_PER_PAGE` ports per file: `out` itself, then `<stem>-2.<fmt>`, ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ibwire.analysis.fabric import build_fabric
from ibwire.analysis.fabric_json import counters_list
from ibwire.analysis.fabric_perf import WATCH

FORMATS = ("png", "svg")
PORTS_PER_PAGE = 8
TRAFFIC = ("port_xmit_pkts", "port_rcv_pkts")


def _page_paths(out: str, fmt: str, pages: int) -> list[Path]:
    base = Path(out)
    if base.suffix.lower() != f".{fmt}":
        base = base.with_name(base.name + f".{fmt}")
    return [base if i == 0 else base.with_name(f"{base.stem}-{i + 1}{base.suffix}")
            for i in range(pages)]


def _row(ax_rate: Any, ax_err: Any, port: dict[str, Any]) -> None:
    reads = [r for r in port["reads"] if r["values"]]
    t0 = reads[0]["ts"] if reads else 0.0
    for name in TRAFFIC:
        pts = [(r["ts"] - t0, r["rate"][name]) for r in reads
               if r.get("rate") and name in r["rate"]]
        if pts:
            ax_rate.plot(*zip(*pts), marker="o", label=f"{name} /s")
    drawn = False
    for name in WATCH:
        pts = [(r["ts"] - t0, r["values"][name]) for r in reads if name in r["values"]]
        if pts and any(v for _, v in pts):
            ax_err.plot(*zip(*pts), marker="o", label=name)
            drawn = True
    if not drawn:
        ax_err.text(0.5, 0.5, "all zero", ha="center", va="center", transform=ax_err.transAxes)
    for r in port["reads"]:
        if r["reset"]:
            for ax in (ax_rate, ax_err):
                ax.axvline(r["ts"] - t0, linestyle="--", color="grey")
    who = port["description"] or port["node"] or "?"
    ax_rate.set_title(f"LID {port['lid']} port {port['port']} ({who}): traffic", fontsize=9)
    ax_err.set_title("watched counters" + (": " + ", ".join(
        f"{f['counter']} {f['how']}" for f in port["flags"]) if port["flags"] else ""),
        fontsize=9)
    for ax in (ax_rate, ax_err):
        ax.set_xlabel("seconds since first read")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)


def plot_counters(path: str, out: str, fmt: str) -> list[str]:
    """Plot the port counters read in capture `path`; returns the files written
    (none when the capture holds no PortCounters / PortCountersExtended reads)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: choose from {', '.join(FORMATS)}")
    ports = [p for p in counters_list(build_fabric([path])) if p["reads"]]
    if not ports:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pages = [ports[i:i + PORTS_PER_PAGE] for i in range(0, len(ports), PORTS_PER_PAGE)]
    written = []
    for page, target in zip(pages, _page_paths(out, fmt, len(pages))):
        fig, axes = plt.subplots(len(page), 2, figsize=(12, 3 * len(page)), squeeze=False,
                                 sharex="row")
        for (ax_rate, ax_err), port in zip(axes, page):
            _row(ax_rate, ax_err, port)
        fig.tight_layout()
        fig.savefig(target, format=fmt)
        plt.close(fig)
        written.append(str(target))
    return written
