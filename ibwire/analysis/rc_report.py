"""RC analysis results as plain data: the `ibwire rc -T json` document and the
per-packet `infiniband.analysis.*` values.

Schema: docs/schemas/rc.schema.json ("ibwire-rc/1").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import PERCENTILES, RcResult
from ibwire.analysis.rc_fields import PACKET_FIELDS  # noqa: F401 - re-exported
from ibwire.analysis.rc_input import ENDPOINTS
from ibwire.headers.extended import syndrome_part

FORMAT = "ibwire-rc/1"


def _transport(res: RcResult, h: int) -> str:
    rows = np.flatnonzero(res.streams.hc == h)
    op = res.cols["infiniband.bth.opcode"][rows]
    prefixes = set((op[op >= 0] >> 5).tolist())
    names = {0: "RC", 1: "UC", 3: "UD", 5: "XRC"}
    return "/".join(names.get(p, str(p)) for p in sorted(prefixes)) or "?"


def _qp(q: int) -> str | None:
    return f"{q:#08x}" if q >= 0 else None


def rtt_percentiles(res: RcResult, h: int) -> dict[str, float | int | None]:
    v = res.rtt_ns[(res.streams.hc == h) & (res.rtt_ns >= 0)]
    out: dict[str, float | int | None] = {"samples": int(len(v))}
    for p in PERCENTILES:
        out[f"p{p}"] = round(float(np.percentile(v, p)) / 1000, 3) if len(v) else None
    out["max"] = round(float(v.max()) / 1000, 3) if len(v) else None
    return out


def connection(res: RcResult, h: int) -> dict[str, Any]:
    st = res.streams
    names = res.cols[ENDPOINTS]
    k = dict(zip(R.COUNT_NAMES, res.counts[h].tolist()))
    ts = res.cols["frame.time_ns"][st.hc == h]
    span = int(ts.max() - ts.min()) if len(ts) > 1 else 0
    good = k["bytes"] - k["retransmitted_bytes"]
    # Only in a capture merged from several taps (rc_pair: each tap's view apart).
    tap = {"capture_interface": st.tap[h]} if st.tap[h] >= 0 else {}
    return {
        "connection": st.connection[h], "half_connection": h, **tap,
        "transport": _transport(res, h),
        "requester": {"endpoint": str(names[st.req_src[h]]), "qp": _qp(st.req_qp[h])},
        "responder": {"endpoint": str(names[st.req_dst[h]]), "qp": _qp(st.resp_qp[h])},
        "packets": k["packets"], "requests": k["requests"], "responses": k["responses"],
        "messages": k["messages"], "bytes": k["bytes"],
        "goodput_bps": round(good * 8 * 1e9 / span, 1) if span else None,
        "retransmitted_packets": k["retransmitted_packets"],
        "retransmitted_bytes": k["retransmitted_bytes"],
        "go_back_n": k["go_back_n"], "rnr_retries": k["rnr_retries"],
        "naks": {key: k[f"nak_{key}"] for key in R.NAK_KEYS},
        "rnr_naks": k["rnr_naks"], "duplicate_requests": k["duplicate_requests"],
        "lost_before_capture": k["lost_before_capture"],
        "lost_after_capture": k["lost_after_capture"],
        "implied_naks": k["implied_naks"], "timeouts": k["timeouts"],
        "out_of_sequence": k["out_of_sequence"], "network_duplicates": k["network_duplicates"],
        "bad_icrc": k["bad_icrc"], "acks": k["acks"], "duplicate_acks": k["duplicate_acks"],
        "read_response_gaps": k["read_response_gaps"], "uc_gaps": k["uc_gaps"],
        "ack_rtt_us": rtt_percentiles(res, h),
    }


def document(res: RcResult, source: str = "") -> dict[str, Any]:
    """The whole analysis as one JSON-ready document."""
    return {
        "format": FORMAT, "capture": source,
        "connections": [connection(res, h) for h in range(len(res.streams))],
        "episodes": res.episodes,
    }


# -- per-packet values --------------------------------------------------------------------------
# The per-packet field table (PACKET_FIELDS) lives in rc_fields, light to import.

_BOOL_FLAGS = {
    "infiniband.analysis.retransmission": R.F_RETX,
    "infiniband.analysis.episode_start": R.F_EPISODE,
    "infiniband.analysis.lost_after_capture": R.F_LOST_AFTER,
    "infiniband.analysis.duplicate": R.F_DUP,
    "infiniband.analysis.out_of_sequence": R.F_LATE,
    "infiniband.analysis.responder_out_of_sequence": R.F_RESP_OOS,
    "infiniband.analysis.network_duplicate": R.F_COPY,
    "infiniband.analysis.ambiguous": R.F_AMBIGUOUS,
    "infiniband.analysis.rnr": R.F_RNR,
    "infiniband.analysis.rnr_retry": R.F_RNR_RETRY,
    "infiniband.analysis.implied_nak": R.F_IMPLIED,
    "infiniband.analysis.read_response_gap": R.F_RESP_GAP,
    "infiniband.analysis.duplicate_ack": R.F_DUP_ACK,
    "infiniband.analysis.message_end": R.F_MSG_END,
    "infiniband.analysis.bad_icrc": R.F_BAD_ICRC,
}


def packet_values(res: RcResult, row: int) -> dict[str, Any]:
    """`infiniband.analysis.*` values of one row (only those that apply)."""
    h = int(res.streams.hc[row])
    if h < 0:
        return {}
    f = int(res.flags[row])
    fn = res.cols["frame.number"]
    out: dict[str, Any] = {"infiniband.analysis.connection": res.streams.connection[h]}
    for name, bit in _BOOL_FLAGS.items():
        if f & bit:
            out[name] = True
    if res.ref[row] >= 0:
        out["infiniband.analysis.retransmission_of"] = int(fn[res.ref[row]])
    if res.episode[row] >= 0:
        out["infiniband.analysis.go_back_n"] = int(res.episode[row])
        if f & R.F_EPISODE:
            out["infiniband.analysis.episode_reason"] = R.REASON_NAMES[int(res.reason[row])]
            if res.trig[row] >= 0:
                out["infiniband.analysis.episode_trigger"] = int(fn[res.trig[row]])
    if f & (R.F_GAP | R.F_UC_GAP):
        out["infiniband.analysis.psn_gap"] = int(res.gap[row])
    syn = int(res.cols["infiniband.aeth.syndrome"][row])
    if f & R.F_NAK and syn >= 0:
        code = syndrome_part(syn, "error_code")
        out["infiniband.analysis.nak"] = (R.NAK_KEYS[code] if code < len(R.NAK_KEYS)
                                          else f"code_{code}")
    if f & R.F_RNR and syn >= 0:
        timer = syndrome_part(syn, "timer")
        out["infiniband.analysis.rnr_timer_us"] = int(R.RNR_TIMER_NS[timer] // 1000)
    if res.rtt_ns[row] >= 0:
        out["infiniband.analysis.ack_rtt"] = res.rtt_ns[row] / 1e9
    if res.acked[row] > 0:
        out["infiniband.analysis.acked_psns"] = int(res.acked[row])
    if res.credits[row] >= 0:
        out["infiniband.analysis.credits"] = int(R.CREDIT_TABLE[res.credits[row]])
    if res.msg[row] >= 0:
        out["infiniband.analysis.message"] = int(res.msg[row])
    return out


def comment(values: dict[str, Any]) -> str:
    """A short one-line text of a packet's findings (pcapng comments, expert info)."""
    parts = []
    for name, v in values.items():
        short = name.removeprefix("infiniband.analysis.")
        if short in ("connection", "message", "message_end", "credits", "acked_psns",
                     "ack_rtt"):
            continue
        parts.append(short if v is True else f"{short}={v}")
    return "ibwire rc: " + ", ".join(parts) if parts else ""


# -- expert items (severity, group, protocol, summary), as `-z expert` collects them -------
_EXPERT = (
    (R.F_EPISODE, "Warn", "Sequence", "RC resend episode starts ({reason})"),
    (R.F_RETX, "Note", "Sequence", "RC retransmission"),
    (R.F_GAP, "Warn", "Sequence", "RC PSN gap: {gap} PSN(s) lost before the capture point"),
    (R.F_LOST_AFTER, "Warn", "Sequence", "RC packet lost after the capture point"),
    (R.F_LATE, "Warn", "Sequence", "RC out-of-sequence (late) request"),
    (R.F_DUP, "Note", "Sequence", "RC duplicate request"),
    (R.F_COPY, "Note", "Sequence", "RC network duplicate"),
    (R.F_AMBIGUOUS, "Note", "Sequence",
     "RC resend or late/duplicated copy: the capture point cannot tell"),
    (R.F_IMPLIED, "Warn", "Sequence", "RC implied NAK (response PSN jump)"),
    (R.F_RNR_RETRY, "Note", "Sequence", "RC retry after RNR NAK"),
)


def expert_items(res: RcResult, row: int) -> list[tuple[str, str, str, str]]:
    f = int(res.flags[row])
    out = []
    for bit, severity, group, text in _EXPERT:
        if f & bit:
            out.append((severity, group, "InfiniBand", text.format(
                reason=R.REASON_NAMES[int(res.reason[row])], gap=int(res.gap[row]))))
    return out
