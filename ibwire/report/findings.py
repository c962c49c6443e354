"""The headline: what the capture holds and what went wrong, in plain words.

Every number comes from the analysis documents (`ibwire rc -T json`,
`ibwire credits -T json`, `ibwire fabric -T json`) or the `ibwire stats` summary;
this module only picks and words them. A finding has a severity (for order), a
sentence and the anchor of the section that shows it in detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ibwire.cli.output import duration
from ibwire.report.collect import Capture

NAK_WORDS = {"psn_seq_err": "PSN sequence NAKs", "invalid_request": "invalid-request NAKs",
             "remote_access": "remote-access NAKs", "remote_operational":
             "remote-operational NAKs", "invalid_rd": "invalid-RD NAKs"}
REASON_WORDS = {"nak_seq": "PSN sequence NAKs", "timeout": "timeouts",
                "implied_nak": "implied NAKs", "none": "unknown causes"}


@dataclass
class Finding:
    score: float          # larger first
    text: str
    anchor: str


def anchor(cap_index: int, kind: str, key: object = "") -> str:
    return f"f{cap_index}-{kind}{'-' + str(key) if key != '' else ''}"


def plural(n: int, words: str) -> str:
    """`2 PSNs lost`, `1 PSN lost`: the first plural word loses its s when n is 1."""
    if n == 1:
        parts = words.split(" ")
        k = next((i for i, w in enumerate(parts) if w.endswith("s")), None)
        if k is not None:
            parts[k] = parts[k][:-1]
        words = " ".join(parts)
    return f"{n} {words}"


def fmt_ns(ns: float | None) -> str:
    return duration(ns)


def fmt_us(us: float | None) -> str:
    return "-" if us is None else fmt_ns(us * 1000)


def headline(cap: Capture) -> dict[str, Any]:
    """The capture's own numbers (what `ibwire stats` prints in its summary)."""
    s = cap.summary
    return {"packets": s.frames, "bytes": s.nbytes, "span_ns": s.last_rel,
            "first_ns": s.first_ns, "crc_errors": cap.crc_errors, "malformed": s.malformed}


def rc_totals(doc: dict[str, Any]) -> dict[str, int]:
    """Totals over the connections of an `ibwire rc -T json` document."""
    keys = ("packets", "bytes", "retransmitted_packets", "retransmitted_bytes", "go_back_n",
            "rnr_naks", "timeouts", "duplicate_requests", "lost_before_capture")
    out = {k: sum(c[k] for c in doc["connections"]) for k in keys}
    out["connections"] = len(doc["connections"])
    out["episodes"] = len(doc["episodes"])
    out["naks"] = sum(sum(c["naks"].values()) for c in doc["connections"])
    return out


def conn_label(c: dict[str, Any]) -> str:
    req, resp = c["requester"], c["responder"]
    if req["qp"] and resp["qp"]:
        return f"QP {req['qp']} → {resp['qp']}"
    return f"{req['endpoint']}:{req['qp'] or '?'} → {resp['endpoint']}:{resp['qp'] or '?'}"


def _rc(i: int, cap: Capture) -> list[Finding]:
    out = []
    reasons: dict[int, dict[str, int]] = {}
    for e in cap.rc_doc["episodes"]:
        r = reasons.setdefault(e["half_connection"], {})
        r[e["reason"]] = r.get(e["reason"], 0) + 1
    for c in cap.rc_doc["connections"]:
        h = c["half_connection"]
        parts = []
        mine = reasons.get(h, {})
        if c["go_back_n"]:
            why = ", ".join(plural(n, REASON_WORDS.get(k, k)) for k, n in
                            sorted(mine.items(), key=lambda kv: -kv[1]) if k != "rnr")
            parts.append(plural(c["go_back_n"], "go-back-N episodes") + (f" after {why}" if why
                                                                          else ""))
        if mine.get("rnr"):
            parts.append(plural(mine["rnr"], "resend episodes after RNR NAKs"))
        if c["retransmitted_packets"]:
            pct = 100 * c["retransmitted_bytes"] / c["bytes"] if c["bytes"] else 0
            parts.append(plural(c["retransmitted_packets"], "retransmitted packets") +
                         f", {pct:.1f} % of bytes")
        naks = {k: v for k, v in c["naks"].items() if v}
        if naks and not c["go_back_n"]:
            parts.append(", ".join(plural(v, NAK_WORDS.get(k, k)) for k, v in naks.items()))
        for key, words in (("rnr_naks", "RNR NAKs"), ("lost_before_capture",
                           "PSNs lost before the capture point"), ("lost_after_capture",
                           "packets lost after the capture point"), ("bad_icrc",
                           "packets with a bad ICRC")):
            if c[key]:
                parts.append(plural(c[key], words))
        if not parts:
            continue
        rtt = c["ack_rtt_us"]
        if rtt["p99"] is not None:
            parts.append(f"ACK RTT p99 {fmt_us(rtt['p99'])}")
        score = c["retransmitted_packets"] + 10 * c["go_back_n"] + c["rnr_naks"] + \
            5 * (c["lost_before_capture"] + c["lost_after_capture"] + c["bad_icrc"])
        out.append(Finding(score, f"{conn_label(c)}: " + "; ".join(parts),
                           anchor(i, "conn", h)))
    return out


def _link(i: int, cap: Capture) -> list[Finding]:
    doc, out = cap.credits_doc, []
    for r in doc["link_credits"]["per_vl"]:
        if r["stall_count"]:
            out.append(Finding(20 + r["stall_count"], f"Link direction {r['direction']} VL "
                               f"{r['vl']}: {r['stall_count']} credit stalls, "
                               f"{fmt_ns(r['stall_ns'])} without credits",
                               anchor(i, "credits")))
        if r["mismatches"]:
            out.append(Finding(15, f"Link direction {r['direction']} VL {r['vl']}: "
                               f"{r['mismatches']} FCTBS mismatches ({r['missing_blocks']} "
                               "blocks missing from the capture)", anchor(i, "credits")))
    for r in doc["pfc"]["per_priority"]:
        storms = [s for s in doc["pfc"]["storms"] if (s["port"], s["priority"]) ==
                  (r["port"], r["priority"])]
        text = (f"PFC: {r['port']} paused priority {r['priority']} {r['pauses']} times, "
                f"{fmt_ns(r['paused_ns'])} in all, longest {fmt_ns(r['max_pause_ns'])}")
        if storms:
            text += f"; {len(storms)} pause storm(s)"
        out.append(Finding(30 + 100 * len(storms) + r["pauses"], text, anchor(i, "pfc")))
    cg = doc["congestion"]
    if cg["ce_marks"] or cg["fecn"] or cg["becn"] or cg["cnps"]:
        flows = sum(1 for f in cg["flows"] if f["ce"] or f["fecn"] or f["cnps"])
        out.append(Finding(10 + cg["cnps"], f"Congestion: {cg['ce_marks']} ECN CE marks, "
                           f"{cg['fecn']} FECN, {cg['becn']} BECN, {cg['cnps']} CNPs on "
                           f"{flows} flow(s)", anchor(i, "ecn")))
    return out


def _capture(i: int, cap: Capture) -> list[Finding]:
    out = []
    if cap.crc_errors:
        out.append(Finding(1000 + cap.crc_errors, f"{cap.crc_errors} packets with a bad "
                           "CRC (the receiver drops them)", anchor(i, "expert")))
    if cap.summary.malformed:
        out.append(Finding(900 + cap.summary.malformed, f"{cap.summary.malformed} malformed "
                           "frames", anchor(i, "expert")))
    if cap.error:
        out.append(Finding(2000, f"The file could not be read to its end: {cap.error}",
                           anchor(i, "summary")))
    return out


def fabric_findings(fab: dict[str, Any] | None) -> list[Finding]:
    if not fab:
        return []
    out = []
    for port in fab["counters"]:
        for f in port["flags"]:
            who = port["description"] or port["node"] or "?"
            out.append(Finding(50, f"Port LID {port['lid']}/{port['port']} ({who}): "
                               f"{f['counter']} {f['how']}", "fabric-counters"))
    for text in fab["errors"]:
        out.append(Finding(2000, f"Fabric view: {text}", "fabric"))
    return out


def findings(caps: list[Capture], fab: dict[str, Any] | None) -> list[Finding]:
    """Every finding, most serious first."""
    out = fabric_findings(fab)
    for i, cap in enumerate(caps):
        out += _capture(i, cap) + _rc(i, cap) + _link(i, cap)
    return sorted(out, key=lambda f: -f.score)
