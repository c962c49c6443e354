"""`ibwire credits FILE`: link credits per direction and VL, PFC pauses, congestion
marks and CNPs, QoS classes (rules: docs/credits.md; JSON: docs/schemas/)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import ibwire.analysis.credit_fields  # noqa: F401 - registers the per-frame analysis fields
from ibwire.analysis.credit_input import credit_columns
from ibwire.analysis.link_report import LinkOptions, link_report
from ibwire.analysis.pfc import parse_prio_map
from ibwire.capture.frame import CaptureError
from ibwire.cli.output import Output, duration, failed

USAGE = "ibwire credits [options] FILE"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("credits", help="link credits, PFC pauses, congestion and QoS",
                       usage=USAGE, description=__doc__)
    p.add_argument("file", help="capture file (pcap, pcapng, ERF, gzip)")
    p.add_argument("-T", dest="format", choices=("text", "json"), default="text",
                   help="output format (json: docs/schemas/credits.schema.json)")
    p.add_argument("--stalls", action="store_true", help="list every credit stall interval")
    p.add_argument("--pauses", action="store_true", help="list every PFC pause interval")
    p.add_argument("--link-gbps", type=float, metavar="GBPS",
                   help="link rate: PFC quanta to time (default 25) and, for credits, "
                        "serialisation time when the capture point is in the link")
    p.add_argument("--tx-to-tap-ns", type=int, default=0, metavar="NS",
                   help="propagation from a sender to the capture point (default 0)")
    p.add_argument("--tap-to-rx-ns", type=int, default=0, metavar="NS",
                   help="propagation from the capture point to a receiver (default 0)")
    p.add_argument("--storm-ms", type=float, default=1.0, metavar="MS",
                   help="a priority paused continuously longer than this is a pause storm")
    p.add_argument("--cnp-gap-ns", type=int, metavar="NS",
                   help="the notification point's minimum time between CNPs per QP (its "
                        "rate limiter), to tell which mark each CNP answers; default: the "
                        "smallest spacing of the captured CNPs")
    p.add_argument("--prio-map", type=_prio_map, default="auto", metavar="MAP",
                   help="frame priority: pcp (VLAN PCP), dscp (DSCP>>3), auto (PCP when "
                        "tagged, else DSCP>>3) or a table dscp:26=3,48=6")
    from ibwire.scale.runner import add_options
    add_options(p)


def _prio_map(text: str) -> str:
    try:
        parse_prio_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _t(ns: int | float | None) -> str:
    return duration(ns, ".3f", "us", "")


def _table(out: Output, head: list[str], rows: list[list[Any]]) -> None:
    cells = [head] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for r in cells:
        out.line("  ".join(c.rjust(w) if i else c.ljust(w)
                           for i, (c, w) in enumerate(zip(r, widths))).rstrip())


SECTIONS = ("credits", "pfc", "ecn", "qos")


class Lines:
    """An Output stand-in that keeps the lines (for `-z` statistics)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str, style: str | None = None) -> None:
        self.lines.append(text)


def render(doc: dict[str, Any], out: Output | Lines, stalls: bool = False,
           pauses: bool = False, sections: tuple[str, ...] = SECTIONS) -> None:
    if "credits" in sections:
        _credits(doc, out, stalls)
    if "pfc" in sections:
        _pfc(doc, out, pauses, always="credits" not in sections)
    if "ecn" in sections:
        _ecn(doc, out)
    if "qos" in sections:
        _qos(doc, out)


def _credits(doc: dict[str, Any], out: Output | Lines, stalls: bool) -> None:
    lc = doc["link_credits"]
    out.line("Link-level credits (IBA 7.9; 64-byte blocks, 12-bit counters)")
    if not lc["link_packets"]:
        out.line("  No link flow-control packets in this capture (ERF type 25 records or "
                 "link packets in LINKTYPE 247): per-VL credits, stalls and FCTBS checks "
                 "cannot be reconstructed.")
        ae = doc["aeth_credits"]
        if ae:
            out.line("  What remains: end-to-end credits that RC responders advertise in "
                     "AETH (receive WQEs), per QP the ACKs go to:")
            _table(out, ["  QP", "ACKs", "No credit info", "Min", "Max", "Last",
                         "Zero-credit ACKs"],
                   [[f"  {a['dest_qp']:#08x}", a["acks"], a["no_credit_info"], a["min"],
                     a["max"], a["last"], a["zero_credit_acks"]] for a in ae])
        else:
            out.line("  No AETH end-to-end credits either (no RC acknowledgements).")
    else:
        out.line(f"  {lc['link_packets']} link packets ({lc['bad_lpcrc']} with a bad LPCRC, "
                 f"not used), {lc['data_packets']} data packets, {lc['vl15_packets']} on "
                 "VL15 (not flow controlled)")
        _table(out, ["  Dir", "VL", "Packets", "Blocks", "Updates", "Min", "Avg", "Max",
                     "Buffer", "Max occupied", "Stalls", "Stall time", "Mismatches",
                     "Missing blocks"],
               [[f"  {r['direction']}", r["vl"], r["data_packets"], r["blocks_sent"],
                 r["updates_received"], r["min_credits"], r["avg_credits"], r["max_credits"],
                 r["buffer_blocks_inferred"], r["receiver_max_occupied_at_updates"],
                 r["stall_count"], _t(r["stall_ns"]),
                 r["mismatches"], r["missing_blocks"]] for r in lc["per_vl"]])
        if stalls:
            _table(out, ["  Dir", "VL", "Start", "Duration", "Needed", "Had", "Until frame",
                         "Packet frame", "Uncertain"],
                   [[f"  {s['sender']}", s["vl"], s["start_ns"], _t(s["duration_ns"]),
                     s["blocks_needed"], s["credits_available"], s["released_by_frame"],
                     s["packet_frame"], "yes" if s["uncertain"] else ""]
                    for s in lc["stalls"]])


def _pfc(doc: dict[str, Any], out: Output | Lines, pauses: bool, always: bool) -> None:
    pfc = doc["pfc"]
    if not pfc["pause_frames"] and always:
        out.line("Priority flow control: no PAUSE or PFC frames")
    if pfc["pause_frames"]:
        out.line("")
        out.line(f"Priority flow control: {pfc['pause_frames']} PAUSE/PFC frames "
                 f"(quanta at {doc['options']['link_gbps'] or 25.0} Gb/s)")
        _table(out, ["  Paused by", "Prio", "Pauses", "XON", "Expired", "Paused", "Longest"],
               [[f"  {r['port']}", r["priority"], r["pauses"], r["xon_ended"], r["expired"],
                 _t(r["paused_ns"]), _t(r["max_pause_ns"])] for r in pfc["per_priority"]])
        for s in pfc["storms"]:
            out.line(f"  STORM: {s['port']} priority {s['priority']} paused {_t(s['duration_ns'])}"
                     f" continuously ({s['pauses']} pauses)")
        for f in pfc["flows"]:
            names = ", ".join(f"{x['src']}->{x['dst']} QP {x['dest_qp']:#08x} ({x['packets']})"
                              for x in f["flows"]) or "none"
            out.line(f"  Flows on priority {f['priority']} paused by {f['port']}: {names}")
        if pauses:
            _table(out, ["  Paused by", "Prio", "Start", "Duration", "Ended by", "Frames"],
                   [[f"  {i['port']}", i["priority"], i["start_ns"], _t(i["duration_ns"]),
                     i["ended_by"], f"{i['start_frame']}-{i['end_frame'] or ''}"]
                    for i in pfc["intervals"]])


def _ecn(doc: dict[str, Any], out: Output | Lines) -> None:
    cg = doc["congestion"]
    out.line("")
    out.line(f"Congestion: {cg['ce_marks']} ECN CE marks, {cg['fecn']} FECN, {cg['becn']} "
             f"BECN, {cg['cnps']} CNPs")
    marked = [f for f in cg["flows"] if f["ce"] or f["fecn"] or f["becn"] or f["cnps"]]
    if marked:
        _table(out, ["  Flow", "Packets", "CE", "FECN", "BECN", "CNPs", "Mark->CNP",
                     "CNP rate/s"],
               [[f"  {f['src']}->{f['dst']} QP {f['dest_qp']:#08x}", f["packets"], f["ce"],
                 f["fecn"], f["becn"], f["cnps"], _t(f.get("mark_to_cnp_ns")),
                 f.get("cnp_rate_per_s")] for f in marked])


def _qos(doc: dict[str, Any], out: Output | Lines) -> None:
    out.line("")
    out.line("QoS (packets / bytes)")
    for key, label in (("sl", "SL"), ("vl", "VL"), ("p_key", "P_Key"),
                       ("priority", "Priority")):
        for r in doc["qos"][key]:
            v = f"{r[key]:#06x}" if key == "p_key" else r[key]
            out.line(f"  {label:<8} {v!s:>6}  from {r['from']}: {r['packets']} / {r['bytes']}")


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.cli import scaled
    from ibwire.scale import runner
    opts = LinkOptions(args.tx_to_tap_ns, args.tap_to_rx_ns, args.link_gbps, args.storm_ms,
                       args.prio_map, args.cnp_gap_ns)
    try:
        if runner.parallel(args):
            cols = scaled.credit_columns(args)
        else:
            cols = credit_columns(args.file)
    except (CaptureError, OSError) as exc:
        return failed(f"{args.file}: {exc}")
    doc = link_report(cols, opts, file=args.file)
    if args.format == "json":
        out.line(json.dumps(doc, indent=1))
    else:
        render(doc, out, args.stalls, args.pauses)
    return 0
