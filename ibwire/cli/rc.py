"""`ibwire rc FILE`: the RC sequencing analysis of a capture.

    ibwire rc FILE                      per-connection table and go-back-N episodes
    ibwire rc FILE -T json              one JSON document (docs/schemas/rc.schema.json)
    ibwire rc FILE -w annotated.pcapng  the capture, each finding as a packet comment
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ibwire.cli.output import Output, error, failed

TABLE = (
    # (heading, width, value from a connection entry)
    ("conn", 4, lambda c: c["connection"]),
    ("requester -> responder", 44, lambda c: f"{_tap(c)}{_ep(c['requester'])} -> "
     f"{_ep(c['responder'])}"),
    ("tp", 3, lambda c: c["transport"]),
    ("pkts", 7, lambda c: c["packets"]),
    ("msgs", 6, lambda c: c["messages"]),
    ("bytes", 10, lambda c: c["bytes"]),
    ("goodput", 10, lambda c: _rate(c["goodput_bps"])),
    ("retx", 6, lambda c: c["retransmitted_packets"]),
    ("retx B", 9, lambda c: c["retransmitted_bytes"]),
    ("gbn", 4, lambda c: c["go_back_n"]),
    ("NAK s/i/a/o/d", 13, lambda c: "/".join(str(v) for v in c["naks"].values())),
    ("rnr", 4, lambda c: c["rnr_naks"]),
    ("dup", 4, lambda c: c["duplicate_requests"]),
    ("lost", 5, lambda c: c["lost_before_capture"]),
    ("t/o", 4, lambda c: c["timeouts"]),
    ("rtt p50/p99 us", 16, lambda c: _rtt(c["ack_rtt_us"])),
)


def _tap(c: dict[str, Any]) -> str:
    t = c.get("capture_interface")
    return "" if t is None else f"[if {t}] "


def _ep(side: dict[str, Any]) -> str:
    return f"{side['endpoint']}:{side['qp'] or '?'}"


def _rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.1f}{unit}b/s"
    return f"{bps:.0f}b/s"


def _rtt(r: dict[str, Any]) -> str:
    return "-" if r["p50"] is None else f"{r['p50']:g}/{r['p99']:g}"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("rc", help="RC sequencing analysis: retransmissions, NAKs, RNR, RTT",
                       usage="ibwire rc [options] FILE...")
    p.add_argument("file", help="capture file (pcap, pcapng, ERF, .gz)")
    p.add_argument("more", nargs="*", metavar="FILE", help="more capture points of the same "
                   "fabric: merged by time, each connection compared point against point")
    p.add_argument("-T", dest="fmt", choices=("text", "json"), default="text",
                   help="output: text (table and episode list, default) or json")
    p.add_argument("-w", metavar="OUT", help="write the capture as pcapng with each "
                   "analysed packet's findings as a packet comment (frame.comment)")
    p.add_argument("--episodes", type=int, default=50, metavar="N",
                   help="text output: list at most N episodes (default 50; 0 = none)")
    from ibwire.scale.runner import add_options
    add_options(p)
    return p


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.cli import scaled
    if scaled.wanted(args):
        return scaled.rc(args, out)
    from ibwire.analysis.rc import analyze
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.analysis.rc_report import document
    from ibwire.capture import CaptureError

    try:
        res = analyze(rc_columns(args.file))
    except CaptureError as exc:
        return failed(str(exc))
    doc = document(res, str(args.file))
    if args.w:
        n = annotate(args.file, args.w, res)
        error(f"{args.w}: {n} frames written, findings as packet comments")
    if args.fmt == "json":
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        text(doc, out, args.episodes)
    return 0


def text(doc: dict[str, Any], out: Output, max_episodes: int) -> None:
    out.line("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w, _) in enumerate(TABLE)))
    for c in doc["connections"]:
        out.line("  ".join(str(f(c)).rjust(w) if i else str(f(c)).ljust(w)
                           for i, (_, w, f) in enumerate(TABLE)))
    eps = doc["episodes"]
    if not eps or max_episodes <= 0:
        return
    out.line("")
    out.line(f"Go-back-N / retry episodes ({len(eps)}):")
    out.line(f"{'#':>4} {'conn':>4} {'reason':11} {'trigger':>8} {'frames':>13} "
             f"{'PSNs':>17} {'pkts':>5} {'delay us':>10} {'dur us':>10}")
    for e in eps[:max_episodes]:
        trig = e["trigger_frame"] if e["trigger_frame"] is not None else "-"
        out.line(f"{e['episode']:>4} {e['connection']:>4} {e['reason']:11} {trig:>8} "
                 f"{e['first_frame']:>6}-{e['last_frame']:<6} "
                 f"{e['first_psn']:>8}-{e['last_psn']:<8} {e['packets']:>5} "
                 f"{e['delay_ns'] / 1000:>10.1f} {e['duration_ns'] / 1000:>10.1f}")
    if len(eps) > max_episodes:
        out.line(f"... {len(eps) - max_episodes} more (--episodes N, or -T json)")


def annotate(src: str, dst: str, res: Any) -> int:
    """Copy the capture to pcapng with each analysed packet's findings as a comment."""
    from ibwire.analysis.rc_report import comment, packet_values
    from ibwire.capture import PcapngWriter, open_capture

    ids: dict[tuple[int, int], int] = {}
    with open_capture(src, resync=False) as frames:
        writer = PcapngWriter(dst)
        try:
            for row, frame in enumerate(frames):
                key = (frame.interface, frame.linktype)
                if key not in ids:
                    ids[key] = writer.add_interface(frame.linktype)
                note = comment(packet_values(res, row)) if row < len(res.flags) else ""
                writer.write(frame, interface=ids[key], comment=note or None)
        finally:
            writer.close()
    return writer.count
