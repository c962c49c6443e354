"""Priority Flow Control and PAUSE from a capture (rules: docs/credits.md §2).

    rep = analyze_pfc(credit_columns("roce.pcap"), link_gbps=25.0)
    rep.intervals           # one dict per pause of one priority of one port

A MAC Control frame from port X pauses, on X's peer, every enabled priority for
quanta x 512 bit times from when it lands (`tap_to_rx_ns` after the capture
timestamp); a later frame for the same priority replaces the deadline (quanta 0 =
XON ends the pause at once). PAUSE (opcode 0x0001) acts on all eight priorities.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ibwire.analysis.credit_input import TIME_COLUMN
from ibwire.constants import MACC_OP_PAUSE, MACC_OP_PFC
from ibwire.headers.carriers import PFC_PRIORITIES, pause_ns

PRIO_MAPS = ("auto", "pcp", "dscp")


@dataclass
class PfcReport:
    frames: int = 0
    pause_frames: int = 0
    intervals: list[dict[str, Any]] = field(default_factory=list)
    storms: list[dict[str, Any]] = field(default_factory=list)
    per_priority: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    flows: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)


def parse_prio_map(text: str) -> dict[int, int] | None:
    """`dscp:26=3,48=6` -> {26: 3, 48: 6}; the named maps -> None. ValueError if bad."""
    if text in PRIO_MAPS:
        return None
    head, _, body = text.partition(":")
    table = {}
    for part in body.split(",") if head == "dscp" and body else ():
        k, _, v = part.partition("=")
        try:
            dscp, prio = int(k, 0), int(v, 0)
        except ValueError:
            raise ValueError(f"bad DSCP mapping entry {part!r}") from None
        if not (0 <= dscp < 64 and 0 <= prio < PFC_PRIORITIES):
            raise ValueError(f"DSCP 0..63 to priority 0..7, not {part!r}")
        table[dscp] = prio
    if not table:
        raise ValueError(f"priority map must be {', '.join(PRIO_MAPS)} or dscp:D=P[,D=P...]")
    return table


def priorities(cols: dict[str, np.ndarray], prio_map: str = "auto") -> np.ndarray:
    """The 802.1p priority of each frame: VLAN PCP, or DSCP >> 3 (8-class mapping), or
    an explicit DSCP table (`dscp:26=3,48=6`; other DSCPs map by DSCP >> 3)."""
    table = parse_prio_map(prio_map)
    pcp = cols["vlan.priority"].astype(np.int64)
    dscp = cols["ip.dsfield.dscp"].astype(np.int64)
    tclass = cols["ipv6.tclass"].astype(np.int64)
    dscp = np.where(dscp >= 0, dscp, np.where(tclass >= 0, tclass >> 2, -1))
    by_dscp = np.where(dscp >= 0, dscp >> 3, -1)
    if table is not None:
        lut = np.arange(64, dtype=np.int64) >> 3
        for k, v in table.items():
            lut[k] = v
        return np.where(dscp >= 0, lut[np.maximum(dscp, 0)], -1)
    if prio_map == "pcp":
        return pcp
    if prio_map == "dscp":
        return by_dscp
    return np.where(pcp >= 0, pcp, by_dscp)


def pause_events(cols: dict[str, np.ndarray]) -> list[tuple[int, str, int, int]]:
    """(frame index, sender MAC, priority, quanta) for each priority a frame names."""
    out = []
    op = cols["macc.opcode"]
    for i in np.flatnonzero((op == MACC_OP_PFC) | (op == MACC_OP_PAUSE)).tolist():
        src = str(cols["eth.src"][i])
        if op[i] == MACC_OP_PAUSE:
            q = int(cols["macc.pause_time"][i])
            out.extend((i, src, p, q) for p in range(PFC_PRIORITIES))
            continue
        enbv = int(cols["macc.cbfc.enbv"][i])
        for p in range(PFC_PRIORITIES):
            if enbv >> p & 1:
                out.append((i, src, p, int(cols[f"macc.cbfc.pause_time.c{p}"][i])))
    return out


def pause_intervals(events: list[tuple[int, int, str, int, int]], link_gbps: float
                    ) -> list[dict[str, Any]]:
    """Intervals from (time, frame, sender, priority, quanta) in time order."""
    open_: dict[tuple[str, int], dict[str, Any]] = {}
    done: list[dict[str, Any]] = []

    def close(key: tuple[str, int], at: int, xon: bool, frame: int | None) -> None:
        iv = open_.pop(key)
        iv.update(end_ns=at, duration_ns=at - iv["start_ns"], ended_by="xon" if xon else
                  "expired", end_frame=frame)
        done.append(iv)

    for t, frame, src, prio, q in events:
        key = (src, prio)
        iv = open_.get(key)
        if iv is not None and t >= iv["deadline_ns"]:
            close(key, iv["deadline_ns"], False, None)
            iv = None
        if iv is not None:
            if q == 0:
                close(key, t, True, frame + 1)
            else:
                iv["deadline_ns"] = t + pause_ns(q, link_gbps)
                iv["refreshes"] += 1
        elif q > 0:
            open_[key] = {"port": src, "priority": prio, "start_ns": t,
                          "deadline_ns": t + pause_ns(q, link_gbps), "start_frame": frame + 1,
                          "quanta": q, "refreshes": 0}
    for key in list(open_):
        close(key, open_[key]["deadline_ns"], False, None)
    done.sort(key=lambda iv: (iv["start_ns"], iv["port"], iv["priority"]))
    for iv in done:
        iv.pop("deadline_ns", None)
    return done


def storms(intervals: list[dict[str, Any]], threshold_ns: int) -> list[dict[str, Any]]:
    """Chains of back-to-back pauses of one priority lasting longer than the threshold."""
    by_key: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for iv in intervals:
        by_key[(iv["port"], iv["priority"])].append(iv)
    out = []
    for (port, prio), ivs in sorted(by_key.items()):
        start, end, n = None, None, 0
        for iv in ivs + [None]:
            if iv is not None and end is not None and iv["start_ns"] <= end:
                end, n = max(end, iv["end_ns"]), n + 1
                continue
            if start is not None and end - start > threshold_ns:
                out.append({"port": port, "priority": prio, "start_ns": start, "end_ns": end,
                            "duration_ns": end - start, "pauses": n})
            if iv is not None:
                start, end, n = iv["start_ns"], iv["end_ns"], 1
    return out


def analyze_pfc(cols: dict[str, np.ndarray], link_gbps: float = 25.0,
                tap_to_rx_ns: int = 0, storm_ms: float = 1.0,
                prio_map: str = "auto") -> PfcReport:
    ts = cols[TIME_COLUMN]
    evs = pause_events(cols)
    timed = sorted((int(ts[i]) + tap_to_rx_ns, i, src, p, q) for i, src, p, q in evs)
    rep = PfcReport(frames=int(ts.shape[0]),
                    pause_frames=len({i for i, *_ in evs}))
    rep.intervals = pause_intervals(timed, link_gbps)
    rep.storms = storms(rep.intervals, int(storm_ms * 1e6))
    for iv in rep.intervals:
        s = rep.per_priority.setdefault((iv["port"], iv["priority"]), {
            "pauses": 0, "xon_ended": 0, "expired": 0, "paused_ns": 0, "max_pause_ns": 0})
        s["pauses"] += 1
        s["xon_ended" if iv["ended_by"] == "xon" else "expired"] += 1
        s["paused_ns"] += iv["duration_ns"]
        s["max_pause_ns"] = max(s["max_pause_ns"], iv["duration_ns"])
    rep.flows = _flows(cols, rep, prio_map)
    return rep


def _flows(cols: dict[str, np.ndarray], rep: PfcReport, prio_map: str
           ) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """RoCE flows the paused port sends on each paused priority (a point-to-point link:
    the paused port is every sender other than the one that sent the pause)."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not rep.per_priority:         # nothing paused: no address column is read
        return out
    prio = priorities(cols, prio_map)
    qp = cols["infiniband.bth.destqp"]
    for port, p in rep.per_priority:
        m = np.flatnonzero((qp >= 0) & (prio == p) & (cols["eth.src"] != port))
        # Only the rows of this port and priority as text (whole columns: GBs at 10M).
        src, src6, dst, dst6 = (cols[name][m].astype(str) for name in
                                ("ip.src", "ipv6.src", "ip.dst", "ipv6.dst"))
        counts: Counter[tuple[str, str, int]] = Counter()
        for k, i in enumerate(m.tolist()):
            counts[(src[k] or src6[k], dst[k] or dst6[k], int(qp[i]))] += 1
        out[(port, p)] = [{"src": a, "dst": b, "dest_qp": q, "packets": n}
                          for (a, b, q), n in sorted(counts.items())]
    return out
