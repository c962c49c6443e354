"""The sections of one capture: summary cards, connections (table, timelines,
episodes), link (credits, PFC, ECN/CNP), expert items, opcodes and MADs."""

from __future__ import annotations

import time

from ibwire.report import link_figs, rc_figs
from ibwire.report import tables as T
from ibwire.report.collect import Capture
from ibwire.report.findings import anchor, conn_label, fmt_ns, headline, rc_totals
from ibwire.report.markup import Plots, card, esc, note, section

MAX_CONN_FIGS = 8


def summary_cards(i: int, cap: Capture) -> str:
    h, t = headline(cap), rc_totals(cap.rc_doc)
    cg, pfc = cap.credits_doc["congestion"], cap.credits_doc["pfc"]
    stalls = sum(r["stall_count"] for r in cap.credits_doc["link_credits"]["per_vl"])
    k = f"f{i}."
    cards = [card("capture span", h["span_ns"], k + "span_ns", shown=fmt_ns(h["span_ns"])),
             card("packets", h["packets"], k + "packets"),
             card("bytes", h["bytes"], k + "bytes"),
             card("CRC errors", h["crc_errors"], k + "crc_errors", bad=h["crc_errors"] > 0),
             card("malformed frames", h["malformed"], k + "malformed", bad=h["malformed"] > 0),
             card("RC/UC/UD connections", t["connections"], k + "rc.connections"),
             card("retransmitted packets", t["retransmitted_packets"],
                  k + "rc.retransmitted_packets", bad=t["retransmitted_packets"] > 0),
             card("go-back-N episodes", t["go_back_n"], k + "rc.go_back_n",
                  bad=t["go_back_n"] > 0),
             card("NAKs", t["naks"], k + "rc.naks", bad=t["naks"] > 0),
             card("RNR NAKs", t["rnr_naks"], k + "rc.rnr_naks", bad=t["rnr_naks"] > 0),
             card("credit stalls", stalls, k + "credits.stalls", bad=stalls > 0),
             card("PFC pause frames", pfc["pause_frames"], k + "credits.pause_frames",
                  bad=pfc["pause_frames"] > 0),
             card("ECN CE marks", cg["ce_marks"], k + "credits.ce_marks"),
             card("CNPs", cg["cnps"], k + "credits.cnps")]
    return '<div class="cards">' + "".join(cards) + "</div>"


def capture_sections(i: int, cap: Capture, plots: Plots, t0: int) -> str:
    f = cap.path
    h = headline(cap)
    first = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime((h["first_ns"] or 0) / 1e9))
    text = (f"{h['packets']} packets, {h['bytes']} bytes from {first} over "
            f"{fmt_ns(h['span_ns'])}. Every number here is also in `ibwire rc {f} -T json`, "
            f"`ibwire credits {f} -T json` and `ibwire stats {f}`.")
    parts = [section(anchor(i, "summary"), f"Capture {f}", note(text) +
                     (note(f"Read stopped early: {cap.error}") if cap.error else ""))]
    parts.append(_connections(i, cap, plots, t0))
    parts.append(_link(i, cap, plots, t0))
    body = note("Decoder and RC engine items; the credit analysis' own (FCTBS gaps, sends "
                f"without credits, frames sent while paused): ibwire stats {f} -z expert")
    body += T.expert(cap.expert.counts, cap.expert.first, anchor(i, "expert-t"), f).html()
    body += T.opcodes(cap.opcodes, anchor(i, "opcodes"), f).html()
    if cap.has_mads:
        body += T.mads(cap.mads, anchor(i, "mads"), f).html()
    parts.append(section(anchor(i, "expert"), "Expert items, opcodes, MADs", body))
    return "".join(parts)


def _connections(i: int, cap: Capture, plots: Plots, t0: int) -> str:
    doc, f = cap.rc_doc, cap.path
    if not doc["connections"]:
        return section(anchor(i, "rc"), "Connections", note("No RC, UC or UD traffic."))
    body = T.connections(doc, anchor(i, "conns"), f).html()
    order = rc_figs.figure_order(doc)
    for c in order[:MAX_CONN_FIGS]:
        h = c["half_connection"]
        fig = rc_figs.connection_figure(cap.rc, c, doc["episodes"], t0)
        body += f'<h3 id="{anchor(i, "conn", h)}">{esc(conn_label(c))} ' \
                f'({esc(c["transport"])}, {c["packets"]} packets)</h3>'
        body += plots.div(fig, anchor(i, "psn", h), f, "PSN over time (shaded: go-back-N "
                          "episodes) and throughput; click a point for its dump command")
    if len(order) > MAX_CONN_FIGS:
        body += note(f"Timelines of the {MAX_CONN_FIGS} most troubled connections; the "
                     f"other {len(order) - MAX_CONN_FIGS} are in the table.")
    body += T.episodes(doc, anchor(i, "episodes"), f).html()
    return section(anchor(i, "rc"), "Connections (ibwire rc)", body)


# (anchor kind, heading, figure, table, caption, note when there is nothing to show)
LINK_PARTS = (
    ("credits", "Link credits",
     lambda cap, t0: link_figs.credits_figure(cap.credit_cols, t0)
     if cap.credits_doc["link_credits"]["link_packets"] else None,
     T.credits_per_vl, "Credits available per direction and VL (64-byte blocks); red: "
     "credit stalls", "No link flow-control packets: per-VL credits cannot be reconstructed."),
    ("pfc", "Priority flow control", lambda cap, t0: link_figs.pfc_figure(cap.credits_doc, t0),
     T.pfc, "Pauses per port and priority (red: pause storm)", "No PAUSE or PFC frames."),
    ("ecn", "ECN marks and CNPs", lambda cap, t0: link_figs.ecn_figure(cap.credit_cols, t0),
     T.flows, "Congestion signals (ECN CE, FECN, BECN, CNPs) per time bin",
     "No ECN CE marks, FECN/BECN or CNPs."),
)


def _link(i: int, cap: Capture, plots: Plots, t0: int) -> str:
    body = ""
    for kind, heading, figure, table, caption, empty in LINK_PARTS:
        body += f'<h3 id="{anchor(i, kind)}">{esc(heading)}</h3>'
        fig = figure(cap, t0)
        if fig is None:
            body += note(empty)
            continue
        body += plots.div(fig, anchor(i, kind + "-p"), cap.path, caption)
        body += table(cap.credits_doc, anchor(i, kind + "-t"), cap.path).html()
    return section(anchor(i, "link"), "Link: credits, PFC, congestion (ibwire credits)", body)
