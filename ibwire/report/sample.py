"""Bounded plots: every figure has at most a fixed number of points, whatever the
capture's size (a 10M-packet capture draws as fast as a small one)."""

from __future__ import annotations

import numpy as np

MAX_POINTS = 2000        # per trace
TIME_BINS = 200          # rate plots
MAX_SHAPES = 300         # shaded intervals per figure


def pick(idx: np.ndarray, limit: int | None = None) -> np.ndarray:
    """At most `limit` (default MAX_POINTS) of `idx`, evenly spread, first and last kept."""
    limit = limit or MAX_POINTS
    if len(idx) <= limit:
        return idx
    return idx[np.linspace(0, len(idx) - 1, limit).round().astype(np.int64)]


def time_bins(t_ns: np.ndarray, weights: np.ndarray, frames: np.ndarray, t0: int, t1: int,
              nbins: int = TIME_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Sum `weights` into `nbins` equal time bins over [t0, t1]: (bin centre in ms
    since t0, sums, [first frame, last frame] of each bin, bin width in s)."""
    width = max(t1 - t0, 1) / nbins
    k = np.clip(((t_ns - t0) / width).astype(np.int64), 0, nbins - 1)
    sums = np.bincount(k, weights=weights, minlength=nbins)
    lo = np.full(nbins, -1, np.int64)
    hi = np.full(nbins, -1, np.int64)
    if len(k):
        order = np.argsort(k, kind="stable")
        ks, fs = k[order], frames[order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        ends = np.r_[starts[1:], len(ks)] - 1
        lo[ks[starts]] = fs[starts]
        hi[ks[ends]] = fs[ends]
    centres = (np.arange(nbins) + 0.5) * width / 1e6
    return centres, sums, np.stack([lo, hi], axis=1), width / 1e9


def ms(t_ns: np.ndarray | int, t0: int) -> np.ndarray:
    """Capture time (ns) to milliseconds since the capture's first packet."""
    return (np.asarray(t_ns, dtype=np.int64) - t0) / 1e6


def spans(fig: object, intervals: list[tuple[float, float]], row: int, col: int, color: str,
          opacity: float = 0.25, dash: bool = False) -> None:
    """Shade x intervals (ms) of one subplot over its full height (a line where
    x0 == x1 and `dash`), at most MAX_SHAPES. One layout update for all of them:
    plotly's add_vrect re-validates every shape per call (quadratic)."""
    sp = fig.get_subplot(row, col)  # type: ignore[attr-defined]
    xref = sp.xaxis.plotly_name.replace("axis", "")
    yref = sp.yaxis.plotly_name.replace("axis", "") + " domain"
    new = [{"type": "line" if dash else "rect", "xref": xref, "yref": yref, "x0": a, "x1": b,
            "y0": 0, "y1": 1, "fillcolor": color, "opacity": opacity,
            "line": {"width": 1, "dash": "dash", "color": color} if dash else {"width": 0},
            "layer": "below"} for a, b in intervals[:MAX_SHAPES]]
    fig.update_layout(shapes=list(fig.layout.shapes) + new)  # type: ignore[attr-defined]
