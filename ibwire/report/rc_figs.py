"""Per-connection timelines from the RC engine's result: PSN versus time (new
requests, retransmissions, ACKs, NAKs, bad ICRCs; go-back-N episodes shaded) and throughput
over time (new and retransmitted bytes). Points carry their frame number: hover
shows it, a click gives the `ibwire dump -Y` command for it."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import RcResult
from ibwire.report.sample import MAX_SHAPES, ms, pick, spans, time_bins

FRAME = "frame.number == {0}"
RANGE = "frame.number >= {0} && frame.number <= {1}"
EPISODE = "infiniband.analysis.go_back_n == {0}"


def _marks(x: np.ndarray, y: np.ndarray, frames: np.ndarray, name: str, symbol: str,
           color: str, size: int = 5) -> go.Scatter:
    return go.Scatter(x=x, y=y, customdata=frames, mode="markers", name=name, meta=FRAME,
                      marker={"symbol": symbol, "color": color, "size": size},
                      hovertemplate="frame %{customdata}<br>%{x:.6f} ms<br>PSN +%{y}"
                                    f"<extra>{name}</extra>")


def connection_figure(res: RcResult, conn: dict[str, Any], episodes: list[dict[str, Any]],
                      t0: int) -> go.Figure:
    """PSN and throughput over time of one half-connection (`conn` from the rc doc)."""
    h = conn["half_connection"]
    cols = res.cols
    rows = np.flatnonzero(res.streams.hc == h)
    ts, fn = cols["frame.time_ns"][rows], cols["frame.number"][rows]
    cls = R.OPCLASS[np.clip(cols["infiniband.bth.opcode"][rows], 0, 255)]
    flags = res.flags[rows]
    y = res.upsn[rows] - (res.upsn[rows].min() if len(rows) else 0)
    x = ms(ts, t0)
    req = (cls & R.C_REQUEST) != 0
    retx = req & ((flags & R.F_RETX) != 0)
    series = (("sent", req & ~retx, "circle", "#1f77b4", 4),
              ("retransmitted", retx, "x", "#d62728", 7),
              ("ACKed", res.acked[rows] > 0, "line-ew-open", "#2ca02c", 8),
              ("NAK / RNR NAK", (flags & (R.F_NAK | R.F_RNR)) != 0, "triangle-down",
               "#000000", 9),
              ("bad ICRC", (flags & R.F_BAD_ICRC) != 0, "circle-open", "#9467bd", 11))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28],
                        vertical_spacing=0.06)
    for name, mask, symbol, color, size in series:
        k = pick(np.flatnonzero(mask))
        if not len(k) and name == "bad ICRC":
            continue
        fig.add_trace(_marks(x[k], y[k], fn[k], name, symbol, color, size), row=1, col=1)
    mine = [e for e in episodes if e["half_connection"] == h]
    _episodes(fig, mine, res, t0)
    pay = cols["ibwire.payload_len"][rows].astype(np.float64)
    if len(rows):
        for name, mask, color in (("new bytes", req & ~retx, "#1f77b4"),
                                  ("retransmitted bytes", retx, "#d62728")):
            c, sums, rng, width = time_bins(ts[mask], pay[mask], fn[mask], int(ts.min()),
                                            int(ts.max()))
            off = (int(ts.min()) - t0) / 1e6
            fig.add_trace(go.Bar(x=c + off, y=sums * 8 / width / 1e9, customdata=rng,
                                 meta=RANGE, name=name, marker_color=color,
                                 hovertemplate="frames %{customdata[0]}-%{customdata[1]}"
                                               "<br>%{y:.3g} Gb/s<extra>" + name +
                                               "</extra>"), row=2, col=1)
    fig.update_layout(barmode="stack", height=520, margin={"l": 60, "r": 20, "t": 30,
                      "b": 40}, legend={"orientation": "h", "y": 1.08},
                      hovermode="closest")
    fig.update_yaxes(title_text="PSN (relative)", row=1, col=1)
    fig.update_yaxes(title_text="payload Gb/s", row=2, col=1)
    fig.update_xaxes(title_text="ms since the first packet", row=2, col=1)
    return fig


def _episodes(fig: go.Figure, eps: list[dict[str, Any]], res: RcResult, t0: int) -> None:
    """Shade each episode from its cause to its last resend; a marker on its first
    resend (beside the NAK that caused it; hover: reason, click: the dump command
    for the whole episode)."""
    if not eps:
        return
    shown = eps[:MAX_SHAPES]
    spans(fig, [((e["start_ns"] - t0) / 1e6, (e["start_ns"] + max(e["duration_ns"], 1) - t0)
                 / 1e6) for e in shown], 1, 1, "orange")
    rows = np.asarray([e["first_frame"] - 1 for e in shown])
    hc = res.streams.hc == shown[0]["half_connection"]
    base = res.upsn[hc].min() if hc.any() else 0
    fig.add_trace(go.Scatter(
        x=(res.cols["frame.time_ns"][rows] - t0) / 1e6, y=res.upsn[rows] - base,
        customdata=[e["episode"] for e in shown], meta=EPISODE, mode="markers",
        name="go-back-N episode", marker={"symbol": "diamond", "color": "orange", "size": 10},
        text=[f"{e['reason']}, {e['packets']} packets, frames {e['first_frame']}-"
              f"{e['last_frame']}" for e in shown],
        hovertemplate="episode %{customdata}: %{text}<extra></extra>"), row=1, col=1)


def figure_order(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Connections with a sequence to follow (not UD-only: management and datagrams
    have no PSN stream worth a picture), the most troubled first."""
    seq = [c for c in doc["connections"] if set(c["transport"].split("/")) - {"UD", "?"}]
    return sorted(seq, key=lambda c: (-c["go_back_n"], -c["retransmitted_packets"],
                                      -c["packets"]))
