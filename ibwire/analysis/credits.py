"""Link-level credits from a capture: per direction and VL (rules: docs/credits.md).

    rep = analyze_credits(credit_columns("link.pcap"))
    rep.per_vl[(0, 1)]["stall_count"]       # direction 0 (ERF interface 0), VL 1

Frames become events of the sender they concern (`credits_kernel`): a data packet
is a SEND of its sender, a flow-control packet is a SYNC of its own sender and a
LIMIT of the opposite one. Event times are in the sender's clock: a capture point
`tx_to_tap_ns` after the sender and `tap_to_rx_ns` before the receiver, on a link of
`link_gbps` (serialisation), so a SEND starts at ts - tx_to_tap - serialisation and
a LIMIT lands at ts + tap_to_rx. All zero (the default) reads timestamps as taken
at the sender's port, which is what an HCA-side capture (ibdump) gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ibwire.analysis.credit_input import TIME_COLUMN
from ibwire.crc import CrcStatus
from ibwire.engines.credits_events import MGMT_VL, build
from ibwire.engines.credits_kernel import (
    EV_INIT,
    EV_LIMIT,
    EV_SEND,
    EV_SYNC,
    NO_SYNC,
    UNKNOWN,
    run,
)
from ibwire.headers.link import LINK

LPCRC_BAD = int(CrcStatus.BAD)


@dataclass
class Geometry:
    tx_to_tap_ns: int = 0
    tap_to_rx_ns: int = 0
    link_gbps: float | None = None

    def ser_ns(self, nbytes: np.ndarray) -> np.ndarray:
        if not self.link_gbps:
            return np.zeros(nbytes.shape, np.int64)
        return np.maximum(1, (nbytes * 8 / self.link_gbps).astype(np.int64))


@dataclass
class CreditReport:
    events: dict[str, np.ndarray]            # sorted events and the kernel's outputs
    stalls: list[dict[str, Any]]
    per_vl: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    link_packets: int = 0
    bad_link_packets: int = 0
    vl15_packets: int = 0
    data_packets: int = 0

    @property
    def has_link_packets(self) -> bool:
        return self.link_packets > 0


def directions(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Link direction of each frame: the ERF capture interface, else the pcapng one."""
    cap = cols["erf.flags.cap"].astype(np.int64)
    return np.where(cap >= 0, cap, np.maximum(cols["frame.interface_id"], 0)) & 1


def build_events(cols: dict[str, np.ndarray], geo: Geometry, python: bool = False
                 ) -> dict[str, np.ndarray]:
    """Frames to sorted credit events (`ibwire.engines.credits_events`)."""
    n = int(cols[TIME_COLUMN].shape[0])
    c = {k: np.ascontiguousarray(cols[k]) for k in (
        TIME_COLUMN, "erf.flags.cap", "frame.interface_id", "infiniband.lrh.pktlen",
        "infiniband.lrh.vl", "infiniband_link.op", "infiniband_link.vl",
        "infiniband_link.fctbs", "infiniband_link.fccl", "infiniband_link.lpcrc.status")}
    ev = {"frame": np.empty(2 * n, np.int64), "sender": np.empty(2 * n, np.int64),
          "vl": np.empty(2 * n, np.int64), "etype": np.empty(2 * n, np.int8),
          "t": np.empty(2 * n, np.int64), "val": np.empty(2 * n, np.int64)}
    fn = build.py_func if python else build
    m = fn(*c.values(), LINK.size, geo.tx_to_tap_ns, geo.tap_to_rx_ns,
           float(geo.link_gbps or 0.0), ev["frame"], ev["sender"], ev["vl"], ev["etype"],
           ev["t"], ev["val"])
    ev = {k: v[:m] for k, v in ev.items()}
    ev["grp"] = (ev["sender"] * 16 + ev["vl"]).astype(np.int32)
    return ev


def analyze_credits(cols: dict[str, np.ndarray], geo: Geometry | None = None,
                    python: bool = False) -> CreditReport:
    """Replay the link's flow control; `python` runs the kernel's plain-Python twin."""
    geo = geo or Geometry()
    ev = build_events(cols, geo, python)
    out = run(ev["grp"], ev["etype"], ev["t"], ev["val"].astype(np.int32), python=python)
    ev.update({k: v for k, v in out.items() if k != "stalls"})
    op = cols["infiniband_link.op"]
    lvl = cols["infiniband.lrh.vl"]
    rep = CreditReport(ev, _stalls(ev, out["stalls"]),
                       link_packets=int((op >= 0).sum()),
                       bad_link_packets=int(((op >= 0) &
                                             (cols["infiniband_link.lpcrc.status"] ==
                                              LPCRC_BAD)).sum()),
                       vl15_packets=int((lvl == MGMT_VL).sum()),
                       data_packets=int(((lvl >= 0) & (lvl != MGMT_VL)).sum()))
    rep.per_vl = _summaries(ev, rep.stalls)
    return rep


def _stalls(ev: dict[str, np.ndarray], rows: np.ndarray) -> list[dict[str, Any]]:
    if not rows.shape[0]:
        return []
    first, last = rows[:, 4], rows[:, 5]
    send_pos = np.flatnonzero(ev["etype"] == EV_SEND)
    k = np.searchsorted(send_pos, last)
    nxt = send_pos[np.minimum(k, max(send_pos.shape[0] - 1, 0))] if send_pos.size else last
    ok = (k < send_pos.shape[0]) & (ev["grp"][nxt] == ev["grp"][last])
    packet = np.where(ok, ev["frame"][nxt] + 1, -1)
    unc = np.cumsum(np.concatenate([[0], ev["uncertain"].astype(np.int64)]))
    uncertain = (unc[last + 1] - unc[first]) > 0
    cols = zip(ev["sender"][first].tolist(), ev["vl"][first].tolist(), rows[:, 0].tolist(),
               rows[:, 1].tolist(), rows[:, 2].tolist(), rows[:, 3].tolist(),
               (ev["frame"][last] + 1).tolist(), packet.tolist(), uncertain.tolist())
    return [{"sender": s, "vl": v, "start_ns": a, "end_ns": b, "duration_ns": b - a,
             "blocks_needed": need, "credits_available": av, "released_by_frame": rel,
             "packet_frame": p if p > 0 else None, "uncertain": u}
            for s, v, a, b, need, av, rel, p, u in cols]


def _summaries(ev: dict[str, np.ndarray], stalls: list[dict[str, Any]]
               ) -> dict[tuple[int, int], dict[str, Any]]:
    res: dict[tuple[int, int], dict[str, Any]] = {}
    for g in np.unique(ev["grp"]).tolist():
        m = ev["grp"] == g
        et, av, miss, val = ev["etype"][m], ev["avail"][m], ev["missing"][m], ev["val"][m]
        known = av[(av != UNKNOWN) & (et != EV_SYNC) & (et != EV_INIT)]
        syncs = (et == EV_SYNC) | (et == EV_INIT)
        checked = (et == EV_SYNC) & (miss != NO_SYNC)
        mine = [s for s in stalls if s["sender"] * 16 + s["vl"] == g]
        res[(g // 16, g % 16)] = {
            "data_packets": int((et == EV_SEND).sum()),
            "blocks_sent": int(val[et == EV_SEND].sum()),
            "updates_received": int((et == EV_LIMIT).sum()),
            "updates_sent": int(syncs.sum()),
            "fctbs_checked": int(checked.sum()),
            "mismatches": int((checked & (miss > 0)).sum()),
            "missing_blocks": int(miss[checked].sum()),
            "min_credits": int(known.min()) if known.size else None,
            "avg_credits": round(float(known.mean()), 3) if known.size else None,
            "max_credits": int(known.max()) if known.size else None,
            "buffer_blocks_inferred": int(known.max()) if known.size else None,
            "stall_count": len(mine),
            "stall_ns": int(sum(s["duration_ns"] for s in mine)),
        }
    return res
