"""One document for `ibwire credits`, its `-T json` (docs/schemas/credits.schema.json),
the `-z` statistics and the plot: link credits, PFC, congestion and QoS."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ibwire.analysis.congestion import congestion, qos
from ibwire.analysis.credits import Geometry, analyze_credits
from ibwire.analysis.occupancy import occupancy
from ibwire.analysis.pfc import analyze_pfc

SCHEMA = "ibwire-credits/1"
DEFAULT_ROCE_GBPS = 25.0


@dataclass
class LinkOptions:
    tx_to_tap_ns: int = 0
    tap_to_rx_ns: int = 0
    link_gbps: float | None = None
    storm_ms: float = 1.0
    prio_map: str = "auto"
    cnp_gap_ns: int | None = None


def _aeth_credits(cols: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """End-to-end credits of RC responders (AETH ACKs), per QP the ACKs go to. Credit
    code 31 carries no credit information (e.g. responders without SRQ limits)."""
    syn = cols["infiniband.aeth.syndrome"].astype(np.int64)
    cr = cols["infiniband.aeth.credits"].astype(np.int64)
    qp = cols["infiniband.bth.destqp"]
    ack = (syn >= 0) & ((syn >> 5) & 3 == 0)
    out = []
    for q in np.unique(qp[ack]).tolist():
        m = ack & (qp == q)
        v = cr[m & (cr >= 0)]
        out.append({"dest_qp": q, "acks": int(m.sum()),
                    "no_credit_info": int((m & (cr < 0)).sum()),
                    "min": int(v.min()) if v.size else None,
                    "max": int(v.max()) if v.size else None,
                    "last": int(v[-1]) if v.size else None,
                    "zero_credit_acks": int((v == 0).sum())})
    return out


def link_report(cols: dict[str, np.ndarray], opts: LinkOptions | None = None,
                file: str | None = None) -> dict[str, Any]:
    opts = opts or LinkOptions()
    geo = Geometry(opts.tx_to_tap_ns, opts.tap_to_rx_ns, opts.link_gbps)
    rep = analyze_credits(cols, geo)
    occ = occupancy(cols, rep, geo)
    for key, summary in rep.per_vl.items():
        rows = occ.get(key)
        good = rows[rows[:, 3] == 0] if rows is not None else None
        summary["receiver_max_occupied_at_updates"] = \
            int(good[:, 2].max()) if good is not None and good.shape[0] else None
    pfc = analyze_pfc(cols, opts.link_gbps or DEFAULT_ROCE_GBPS, opts.tap_to_rx_ns,
                      opts.storm_ms, opts.prio_map)
    doc: dict[str, Any] = {
        "schema": SCHEMA, "file": file, "frames": int(cols["frame.number"].shape[0]),
        "options": asdict(opts),
        "link_credits": {
            "link_packets": rep.link_packets, "bad_lpcrc": rep.bad_link_packets,
            "data_packets": rep.data_packets, "vl15_packets": rep.vl15_packets,
            "per_vl": [{"direction": d, "vl": v, **s} for (d, v), s in
                       sorted(rep.per_vl.items())],
            "stalls": rep.stalls,
        },
        "aeth_credits": _aeth_credits(cols),
        "pfc": {
            "pause_frames": pfc.pause_frames,
            "per_priority": [{"port": p, "priority": q, **s} for (p, q), s in
                             sorted(pfc.per_priority.items())],
            "intervals": pfc.intervals, "storms": pfc.storms,
            "flows": [{"port": p, "priority": q, "flows": f} for (p, q), f in
                      sorted(pfc.flows.items())],
        },
        "congestion": congestion(cols, opts.cnp_gap_ns),
        "qos": qos(cols, opts.prio_map),
    }
    return doc


def timeline(cols: dict[str, np.ndarray], opts: LinkOptions | None = None
             ) -> dict[tuple[int, int], dict[str, np.ndarray]]:
    """Credits over time per (direction, VL), for plots: t_ns, credits, uncertain."""
    from ibwire.engines.credits_kernel import UNKNOWN

    opts = opts or LinkOptions()
    rep = analyze_credits(cols, Geometry(opts.tx_to_tap_ns, opts.tap_to_rx_ns,
                                         opts.link_gbps))
    ev = rep.events
    out = {}
    for (d, v) in rep.per_vl:
        m = (ev["grp"] == d * 16 + v) & (ev["avail"] != UNKNOWN)
        out[(d, v)] = {"t_ns": ev["t"][m], "credits": ev["avail"][m],
                       "uncertain": ev["uncertain"][m],
                       "stalls": [(s["start_ns"], s["end_ns"]) for s in rep.stalls
                                  if (s["sender"], s["vl"]) == (d, v)]}
    return out
