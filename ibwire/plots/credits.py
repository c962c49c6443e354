"""Credits over time per direction and VL, credit stalls shaded (`ibwire plot --credits`).

Needs matplotlib (`pip install ibwire[plot]`); drawn with the Agg backend, no display.
"""

from __future__ import annotations

import os

from ibwire.analysis.credit_input import credit_columns
from ibwire.analysis.link_report import LinkOptions, timeline

FORMATS = ("png", "svg")


def plot_credits(path: str, out: str, fmt: str, opts: LinkOptions | None = None) -> list[str]:
    """Plot the capture at `path` into `out` (`.png`/`.svg` added when missing);
    returns the files written. A capture without link packets gives a figure
    that says so."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = timeline(credit_columns(path), opts)
    if not out.endswith("." + fmt):
        out = f"{out}.{fmt}"
    n = max(len(series), 1)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.2 * n + 0.6), sharex=True, squeeze=False)
    if not series:
        ax = axes[0][0]
        ax.text(0.5, 0.5, "no link flow-control packets: no per-VL credits",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    else:
        t0 = min(int(s["t_ns"][0]) for s in series.values() if s["t_ns"].size)
        for ax, ((d, vl), s) in zip((a[0] for a in axes), sorted(series.items())):
            t = (s["t_ns"] - t0) / 1e3
            ax.step(t, s["credits"], where="post", lw=1, label="credits available")
            unc = s["uncertain"] == 1
            if unc.any():
                ax.plot(t[unc], s["credits"][unc], "x", ms=3, color="tab:orange",
                        label="uncertain (packets missing from capture)")
            for i, (a, b) in enumerate(s["stalls"]):
                ax.axvspan((a - t0) / 1e3, (b - t0) / 1e3, color="tab:red", alpha=0.25,
                           lw=0, label="credit stall" if i == 0 else None)
            ax.axhline(0, color="grey", lw=0.5)
            ax.set_ylabel(f"dir {d} VL {vl}\nblocks")
            ax.legend(loc="upper right", fontsize=7)
        axes[-1][0].set_xlabel("time since first event (us)")
    fig.suptitle(f"Link credits: {os.path.basename(path)}")
    fig.tight_layout()
    fig.savefig(out, format=fmt)
    plt.close(fig)
    return [out]


__all__ = ["plot_credits", "FORMATS"]
