"""The fabric view (`ibwire fabric -T json`) drawn: topology and port counters.

Topology layout, for the fat trees and rings fabrics are built as: channel
adapters at the bottom, switches that have adapters ("leaves") above them, other
switches on top; each row in the order of the nodes it connects to. A link is red
when a port at either end has a watched counter rising (errors or congestion).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ibwire.report.sample import pick, spans

MAX_PORTS = 12
TRAFFIC = ("port_xmit_pkts", "port_rcv_pkts")


def _flagged_ends(fab: dict[str, Any]) -> dict[tuple[str, int], list[str]]:
    """(node GUID, port) -> the flags of its counters."""
    out: dict[tuple[str, int], list[str]] = {}
    for c in fab["counters"]:
        if c["flags"] and c["node"]:
            out[(c["node"], c["port"])] = [f"{f['counter']} {f['how']}" for f in c["flags"]]
    return out


def _positions(fab: dict[str, Any]) -> dict[str, tuple[float, float]]:
    nodes = {n["guid"]: n for n in fab["nodes"]}
    peers: dict[str, set[str]] = {g: set() for g in nodes}
    for lk in fab["links"]:
        a, b = lk["a"]["guid"], lk["b"]["guid"]
        if a in peers and b in peers:
            peers[a].add(b)
            peers[b].add(a)
    cas = sorted(g for g, n in nodes.items() if n["type"] != "Switch")
    leaves = sorted(g for g, n in nodes.items() if n["type"] == "Switch"
                    and any(nodes[p]["type"] != "Switch" for p in peers[g]))
    tops = sorted(g for g, n in nodes.items() if n["type"] == "Switch" and g not in leaves)
    # adapters under the leaf they hang from
    cas.sort(key=lambda g: min((leaves.index(p) for p in peers[g] if p in leaves),
                               default=len(leaves)))
    pos = {}
    for y, row in ((0.0, cas), (1.0, leaves), (2.0, tops)):
        for i, g in enumerate(row):
            pos[g] = ((i + 0.5) / max(len(row), 1), y)
    return pos


def topology_figure(fab: dict[str, Any]) -> go.Figure | None:
    if not fab or not fab["nodes"]:
        return None
    pos = _positions(fab)
    bad = _flagged_ends(fab)
    fig = go.Figure()
    for kind, color in (("ok", "#7f7f7f"), ("flagged", "#d62728")):
        xs: list[float | None] = []
        ys: list[float | None] = []
        mx, my, text = [], [], []
        for lk in fab["links"]:
            a, b = lk["a"], lk["b"]
            if a["guid"] not in pos or b["guid"] not in pos:
                continue
            why = bad.get((a["guid"], a["port"]), []) + bad.get((b["guid"], b["port"]), [])
            if (kind == "flagged") != bool(why):
                continue
            (x0, y0), (x1, y1) = pos[a["guid"]], pos[b["guid"]]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
            mx.append((x0 + x1) / 2)
            my.append((y0 + y1) / 2)
            text.append(f"{a['guid']}/{a['port']} – {b['guid']}/{b['port']}<br>"
                        f"{lk['width']} {lk['speed']} {lk['state']}" +
                        ("".join(f"<br>{w}" for w in why)))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip",
                                 line={"color": color, "width": 3 if kind == "flagged" else 1.5},
                                 name=f"links ({kind})", showlegend=bool(mx)))
        fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", text=text, showlegend=False,
                                 marker={"color": color, "size": 6},
                                 hovertemplate="%{text}<extra></extra>"))
    nodes = [n for n in fab["nodes"] if n["guid"] in pos]
    fig.add_trace(go.Scatter(
        x=[pos[n["guid"]][0] for n in nodes], y=[pos[n["guid"]][1] for n in nodes],
        mode="markers+text", name="nodes", text=[n["description"] or n["guid"] for n in nodes],
        textposition="top center", customdata=[n["lid"] for n in nodes],
        meta="infiniband.lrh.slid == {0} || infiniband.lrh.dlid == {0}",
        marker={"size": 16, "symbol": ["square" if n["type"] == "Switch" else "circle"
                                       for n in nodes],
                "color": ["#1f77b4" if n["type"] == "Switch" else "#2ca02c" for n in nodes]},
        hovertemplate="%{text}<br>LID %{customdata}<extra></extra>"))
    fig.update_layout(height=460, margin={"l": 20, "r": 20, "t": 30, "b": 20},
                      xaxis={"visible": False}, yaxis={"visible": False, "range": [-0.4, 2.5]},
                      hovermode="closest", legend={"orientation": "h"})
    return fig


def counters_figure(fab: dict[str, Any]) -> go.Figure | None:
    """One row per port a performance manager read (flagged ports first): traffic
    per second on the left, the watched counters on the right."""
    ports = [p for p in fab["counters"] if p["reads"]] if fab else []
    if not ports:
        return None
    ports.sort(key=lambda p: (not p["flags"], p["lid"] or 0, p["port"]))
    ports = ports[:MAX_PORTS]
    titles = []
    for p in ports:
        who = p["description"] or p["node"] or "?"
        titles += [f"LID {p['lid']} port {p['port']} ({who}): traffic /s",
                   "watched counters" + (" — " + ", ".join(f"{f['counter']} {f['how']}"
                                                          for f in p["flags"])
                                         if p["flags"] else "")]
    fig = make_subplots(rows=len(ports), cols=2, subplot_titles=titles,
                        vertical_spacing=min(0.08, 0.5 / len(ports)))
    for r, p in enumerate(ports, start=1):
        reads = [x for x in p["reads"] if x["values"]]
        reads = [reads[k] for k in pick(np.arange(len(reads))).tolist()]
        for name in TRAFFIC:
            pts = [(x["ts"], x["rate"][name], x["frame"]) for x in reads
                   if x.get("rate") and name in x["rate"]]
            _line(fig, pts, name, r, 1)
        watched = sorted({k for x in reads for k, v in x["values"].items()
                          if v and k not in TRAFFIC and "data" not in k})
        for name in watched:
            _line(fig, [(x["ts"], x["values"].get(name), x["frame"]) for x in reads],
                  name, r, 2)
        if not watched:
            # in paper coordinates: plotly.js draws no axes for a subplot without data
            sp = fig.get_subplot(r, 2)
            fig.add_annotation(text="all zero", showarrow=False, xref="paper", yref="paper",
                               x=sum(sp.xaxis.domain) / 2, y=sum(sp.yaxis.domain) / 2)
        resets = [(x["ts"], x["ts"]) for x in p["reads"] if x["reset"]]
        for c in (1, 2):
            spans(fig, resets, r, c, "grey", 1.0, dash=True)
    fig.update_layout(height=230 * len(ports) + 80, margin={"l": 60, "r": 20, "t": 40,
                      "b": 40}, hovermode="closest", showlegend=False)
    fig.update_xaxes(title_text="capture time (s)", row=len(ports))
    return fig


def _line(fig: go.Figure, pts: list[tuple[Any, Any, Any]], name: str, row: int, col: int
          ) -> None:
    if not pts:
        return
    x, y, f = zip(*pts)
    fig.add_trace(go.Scatter(x=x, y=y, customdata=f, meta="frame.number == {0}", name=name,
                             mode="lines+markers",
                             hovertemplate=f"{name}<br>" + "%{y}<br>frame %{customdata}"
                                           "<extra></extra>"), row=row, col=col)
