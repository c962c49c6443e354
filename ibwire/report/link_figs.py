"""Link-level timelines from the credit, PFC and congestion analyses: credits per
direction and VL (stalls shaded), PFC pauses per port and priority, ECN marks and
CNPs over time. Each returns None when the capture has nothing of the kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ibwire.analysis.congestion import CNP_OPCODES
from ibwire.analysis.credit_input import TIME_COLUMN
from ibwire.analysis.link_report import LinkOptions, timeline
from ibwire.constants import ECN_CE
from ibwire.report.findings import fmt_ns
from ibwire.report.sample import ms, pick, spans, time_bins

FRAME = "frame.number == {0}"
RANGE = "frame.number >= {0} && frame.number <= {1}"
MAX_ROWS = 8             # subplots per figure
LAYOUT = {"margin": {"l": 60, "r": 20, "t": 30, "b": 40}, "hovermode": "closest",
          "legend": {"orientation": "h", "y": 1.1}}


def credits_figure(cols: dict[str, np.ndarray], t0: int, opts: LinkOptions | None = None
                   ) -> go.Figure | None:
    series = [kv for kv in sorted(timeline(cols, opts).items()) if len(kv[1]["t_ns"])]
    series = series[:MAX_ROWS]
    if not series:
        return None
    fn = cols["frame.number"]
    ts = cols[TIME_COLUMN]
    fig = make_subplots(rows=len(series), cols=1, shared_xaxes=True,
                        subplot_titles=[f"direction {d} VL {v}" for (d, v), _ in series])
    for r, ((_d, _v), s) in enumerate(series, start=1):
        k = pick(np.arange(len(s["t_ns"])))
        t = s["t_ns"][k]
        # the frame of each credit event: the last frame at or before its time
        frames = fn[np.clip(np.searchsorted(ts, t, side="right") - 1, 0, len(fn) - 1)]
        fig.add_trace(go.Scatter(x=ms(t, t0), y=s["credits"][k], customdata=frames, meta=FRAME,
                                 mode="lines", line_shape="hv", name="credits available",
                                 showlegend=r == 1, line={"color": "#1f77b4"},
                                 hovertemplate="frame %{customdata}<br>%{y} blocks"
                                               "<extra></extra>"), row=r, col=1)
        spans(fig, [((a - t0) / 1e6, (b - t0) / 1e6) for a, b in s["stalls"]], r, 1, "red")
        fig.update_yaxes(title_text="blocks", row=r, col=1)
    fig.update_xaxes(title_text="ms since the first packet", row=len(series), col=1)
    fig.update_layout(height=170 * len(series) + 120, **LAYOUT)
    return fig


def pfc_figure(doc: dict[str, Any], t0: int) -> go.Figure | None:
    """Each pause as a bar on its (port, priority) row."""
    ivs = doc["pfc"]["intervals"]
    if not ivs:
        return None
    shown = [ivs[i] for i in pick(np.arange(len(ivs))).tolist()]
    rows = [f"{iv['port']} prio {iv['priority']}" for iv in shown]
    storms = {(s["port"], s["priority"]) for s in doc["pfc"]["storms"]}
    fig = go.Figure(go.Bar(
        base=[(iv["start_ns"] - t0) / 1e6 for iv in shown],
        x=[max(iv["duration_ns"], 1) / 1e6 for iv in shown], y=rows, orientation="h",
        customdata=[[iv["start_frame"], iv["end_frame"] or iv["start_frame"]] for iv in shown],
        meta=RANGE, name="paused",
        marker_color=["#d62728" if (iv["port"], iv["priority"]) in storms else "#ff7f0e"
                      for iv in shown],
        text=[f"{iv['duration_ns'] / 1e3:.1f} µs, ended by {iv['ended_by']}" for iv in shown],
        textposition="inside", insidetextanchor="middle",
        hovertemplate="frames %{customdata[0]}-%{customdata[1]}<br>%{text}<extra></extra>"))
    fig.update_layout(height=120 + 40 * len(set(rows)), xaxis_title="ms since the first packet",
                      **LAYOUT)
    return fig


def _marks(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Boolean rows of each kind of congestion signal (as `congestion()` counts them)."""
    ecn = cols["ip.dsfield.ecn"].astype(np.int64)
    tclass = cols["ipv6.tclass"].astype(np.int64)
    ecn = np.where(ecn >= 0, ecn, np.where(tclass >= 0, tclass & 3, -1))
    qp = cols["infiniband.bth.destqp"]
    cnp = np.isin(cols["infiniband.bth.opcode"], CNP_OPCODES) & (qp >= 0)
    data = (qp >= 0) & ~cnp
    return {"ECN CE": ecn == ECN_CE, "FECN": (cols["infiniband.bth.fecn"] == 1) & data,
            "BECN": (cols["infiniband.bth.becn"] == 1) & data, "CNP": cnp}


def ecn_figure(cols: dict[str, np.ndarray], t0: int) -> go.Figure | None:
    marks = {k: m for k, m in _marks(cols).items() if m.any()}
    if not marks:
        return None
    ts, fn = cols[TIME_COLUMN], cols["frame.number"]
    t1 = int(ts.max())
    fig = go.Figure()
    for name, m in marks.items():
        c, sums, rng, width = time_bins(ts[m], np.ones(int(m.sum())), fn[m], t0, t1)
        keep = sums > 0
        fig.add_trace(go.Bar(x=c[keep], y=sums[keep], customdata=rng[keep], meta=RANGE,
                             name=name, hovertemplate="frames %{customdata[0]}-"
                             "%{customdata[1]}<br>%{y:.0f} in " + fmt_ns(width * 1e9) +
                             "<extra>" + name + "</extra>"))
    fig.update_layout(height=320, xaxis_title="ms since the first packet", barmode="group",
                      yaxis_title=f"per {fmt_ns(width * 1e9)}", **LAYOUT)
    return fig
