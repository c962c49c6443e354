"""Sortable, paginated tables: the rows go into the page as JSON (at most
`MAX_ROWS`, with a note saying where the rest are); the page's script sorts and
pages them. A row may carry a display filter: a click shows its `ibwire dump` command.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from ibwire.report.findings import conn_label, fmt_ns

MAX_ROWS = 2000


@dataclass
class Table:
    id: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    filters: list[str | None]
    file: str = ""
    more: str = ""          # where to find the rows left out

    def html(self) -> str:
        total = len(self.rows)
        data = {"columns": self.columns, "rows": self.rows[:MAX_ROWS],
                "filters": self.filters[:MAX_ROWS]}
        note = ""
        if total > MAX_ROWS:
            note = (f'<p class="note">Showing the first {MAX_ROWS} of {total} rows'
                    f"{'; all of them: ' + html.escape(self.more) if self.more else ''}.</p>")
        payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
        return (f'<div class="tbl" id="{self.id}" data-file="{html.escape(self.file)}">'
                f"<h4>{html.escape(self.title)} ({total})</h4>{note}"
                f'<script type="application/json">{payload}</script></div>')


def _gbps(bps: float | None) -> float | None:
    return None if bps is None else round(bps / 1e9, 4)


def connections(doc: dict[str, Any], tid: str, file: str) -> Table:
    rows, filters = [], []
    for c in doc["connections"]:
        rtt = c["ack_rtt_us"]
        rows.append([c["half_connection"], conn_label(c), c["transport"], c["packets"],
                     c["messages"], c["bytes"], _gbps(c["goodput_bps"]), c["retransmitted_packets"],
                     c["retransmitted_bytes"], c["go_back_n"], sum(c["naks"].values()),
                     c["rnr_naks"], c["duplicate_requests"], c["lost_before_capture"],
                     c["timeouts"], rtt["p50"], rtt["p99"]])
        filters.append(f"infiniband.analysis.connection == {c['connection']}")
    return Table(tid, "Connections", ["half-conn", "requester → responder", "transport",
                 "packets", "messages", "bytes", "goodput Gb/s", "retx pkts", "retx bytes",
                 "go-back-N", "NAKs", "RNR NAKs", "dup", "lost", "timeouts", "RTT p50 µs",
                 "RTT p99 µs"], rows, filters, file, "ibwire rc FILE -T json")


def episodes(doc: dict[str, Any], tid: str, file: str) -> Table:
    rows = [[e["episode"], e["half_connection"], e["reason"], e["trigger_frame"],
             e["first_frame"], e["last_frame"], e["first_psn"], e["last_psn"], e["packets"],
             fmt_ns(e["delay_ns"]), fmt_ns(e["duration_ns"])] for e in doc["episodes"]]
    filters = [f"infiniband.analysis.go_back_n == {e['episode']}" for e in doc["episodes"]]
    return Table(tid, "Go-back-N / retry episodes", ["episode", "half-conn", "reason",
                 "trigger frame", "first frame", "last frame", "first PSN", "last PSN",
                 "packets", "delay", "duration"], rows, filters, file,
                 "ibwire rc FILE -T json")


def expert(counts: dict[tuple[str, str, str, str], int], first: dict[Any, int], tid: str,
           file: str) -> Table:
    order = {"Error": 0, "Warn": 1, "Note": 2, "Chat": 3}
    items = sorted(counts.items(), key=lambda kv: (order.get(kv[0][0], 9), -kv[1]))
    rows = [[sev, group, proto, summary, n, first.get((sev, group, proto, summary))]
            for (sev, group, proto, summary), n in items]
    filters = [f"frame.number == {r[5]}" if r[5] else None for r in rows]
    return Table(tid, "Expert items", ["severity", "group", "protocol", "summary", "count",
                 "first frame"], rows, filters, file, "ibwire stats FILE -z expert")


def opcodes(hist: Any, tid: str, file: str) -> Table:
    total = sum(hist.frames.values()) or 1
    rows = [[code, f"0x{code:02x}", hist.labels[code], n, hist.nbytes[code],
             round(100 * n / total, 2)] for code, n in hist.frames.most_common()]
    filters = [f"infiniband.bth.opcode == {r[0]}" for r in rows]
    return Table(tid, "InfiniBand opcodes", ["opcode", "hex", "name", "frames", "bytes",
                 "%"], rows, filters, file)


def mads(hist: Any, tid: str, file: str) -> Table:
    rows = [[cls, method, attr, n, hist.status[(cls, method, attr)]]
            for (cls, method, attr), n in sorted(hist.counts.items())]
    return Table(tid, "MADs", ["class", "method", "attribute", "count", "status != 0"], rows,
                 [None] * len(rows), file)


def credits_per_vl(doc: dict[str, Any], tid: str, file: str) -> Table:
    rows = [[r["direction"], r["vl"], r["data_packets"], r["blocks_sent"],
             r["updates_received"], r["min_credits"], r["avg_credits"], r["max_credits"],
             r["buffer_blocks_inferred"], r["stall_count"], fmt_ns(r["stall_ns"]),
             r["mismatches"], r["missing_blocks"]] for r in doc["link_credits"]["per_vl"]]
    filters = [f"infiniband.lrh.vl == {r[1]}" for r in rows]
    return Table(tid, "Link credits per direction and VL", ["dir", "VL", "packets", "blocks",
                 "updates", "min", "avg", "max", "buffer", "stalls", "stall time",
                 "mismatches", "missing blocks"], rows, filters, file,
                 "ibwire credits FILE -T json")


def pfc(doc: dict[str, Any], tid: str, file: str) -> Table:
    rows = [[r["port"], r["priority"], r["pauses"], r["xon_ended"], r["expired"],
             fmt_ns(r["paused_ns"]), fmt_ns(r["max_pause_ns"])]
            for r in doc["pfc"]["per_priority"]]
    filters = [f'eth.src == {r[0]} && macc.opcode' for r in rows]
    return Table(tid, "PFC pauses per port and priority", ["paused by", "priority", "pauses",
                 "ended by XON", "expired", "paused", "longest"], rows, filters, file,
                 "ibwire credits FILE -T json")


def flows(doc: dict[str, Any], tid: str, file: str) -> Table:
    marked = [f for f in doc["congestion"]["flows"] if f["ce"] or f["fecn"] or f["becn"]
              or f["cnps"]]
    rows = [[f["src"], f["dst"], f"{f['dest_qp']:#08x}", f["packets"], f["ce"], f["fecn"],
             f["becn"], f["cnps"], fmt_ns(f.get("mark_to_cnp_ns")),
             f.get("cnp_rate_per_s")] for f in marked]
    filters = [f"infiniband.bth.destqp == {f['dest_qp']}" for f in marked]
    return Table(tid, "Congestion-marked flows", ["source", "destination", "dest QP",
                 "packets", "CE", "FECN", "BECN", "CNPs", "mark → CNP", "CNPs/s"], rows,
                 filters, file, "ibwire credits FILE -T json")


def links(fab: dict[str, Any], tid: str, file: str) -> Table:
    rows = [[lk["a"]["guid"], lk["a"]["port"], lk["b"]["guid"], lk["b"]["port"], lk["width"],
             lk["speed"], lk["state"]] for lk in fab["links"]]
    return Table(tid, "Links", ["node A", "port", "node B", "port", "width", "speed",
                 "state"], rows, [None] * len(rows), file, "ibwire fabric FILE -T json")

