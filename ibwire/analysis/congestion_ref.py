"""The congestion and QoS analyses row by row: the reference twins of
`congestion.congestion` and `congestion.qos` (tests compare them on every sample and
on generated congested captures). The rules are in `congestion`'s docstring."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from ibwire.analysis.congestion import _LAST, TIME_COLUMN, finish_flows, packet_marks
from ibwire.analysis.pfc import priorities


def _endpoints(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    src = cols["ip.src"].astype(str)
    dst = cols["ip.dst"].astype(str)
    src = np.where(src != "", src, cols["ipv6.src"].astype(str))
    dst = np.where(dst != "", dst, cols["ipv6.dst"].astype(str))
    slid, dlid = cols["infiniband.lrh.slid"], cols["infiniband.lrh.dlid"]
    src = np.where((src == "") & (slid >= 0), np.char.add("LID ", slid.astype(str)), src)
    dst = np.where((dst == "") & (dlid >= 0), np.char.add("LID ", dlid.astype(str)), dst)
    return src, dst


def congestion_per_row(cols: dict[str, np.ndarray], cnp_gap_ns: int | None = None
                       ) -> dict[str, Any]:
    ts = cols[TIME_COLUMN]
    qp = cols["infiniband.bth.destqp"]
    src, dst = _endpoints(cols)
    ce, fecn, becn, cnp, data = packet_marks(cols)
    notify = _notified_qps(cols, src, dst, data)
    flows: dict[tuple[str, str, int], dict[str, Any]] = {}
    marks: dict[tuple[str, str, int], list[tuple[int, int]]] = {}   # (A, B, notified QP)
    cnp_rows: dict[tuple[str, str, int], list[int]] = {}
    for i in np.flatnonzero(data | cnp).tolist():
        key = (str(src[i]), str(dst[i]), int(qp[i]))
        f = flows.setdefault(key, {"src": key[0], "dst": key[1], "dest_qp": key[2],
                                   "packets": 0, "bytes": 0, "ce": 0, "fecn": 0, "becn": 0,
                                   "cnps": 0, "first_mark_ns": None, "first_cnp_ns": None,
                                   "last_cnp_ns": None, "delays": [], "cnp_causes": []})
        t = int(ts[i])
        if cnp[i]:
            f["cnps"] += 1
            f["first_cnp_ns"] = f["first_cnp_ns"] or t
            f["last_cnp_ns"] = t
            cnp_rows.setdefault(key, []).append(i)
            continue
        f["packets"] += 1
        f["bytes"] += int(cols["frame.len"][i])
        f["ce"] += int(ce[i])
        f["fecn"] += int(fecn[i])
        f["becn"] += int(becn[i])
        if ce[i] or fecn[i]:
            f["first_mark_ns"] = f["first_mark_ns"] or t
            mark = (t, int(cols["frame.number"][i]))
            marks.setdefault((key[0], key[1], notify.get(i, -1)), []).append(mark)
    for key, rows in cnp_rows.items():
        back = marks.get((key[1], key[0], key[2])) or marks.get((key[1], key[0], -1), [])
        gap = cnp_gap_ns if cnp_gap_ns is not None else _gap_estimate(ts[rows])
        f, prev = flows[key], None
        for i in rows:
            t = int(ts[i])
            k = bisect_right(back, (-1 if prev is None else prev + gap - 1, _LAST))
            if k < len(back) and back[k][0] <= t:
                prev = back[k][0]
                f["delays"].append(t - prev)
                f["cnp_causes"].append([int(cols["frame.number"][i]), back[k][1]])
    return {"flows": finish_flows(list(flows.values())),
            "ce_marks": int(ce.sum()), "fecn": int((fecn & data).sum()),
            "becn": int((becn & data).sum()), "cnps": int(cnp.sum())}


def _gap_estimate(cnp_ts: np.ndarray) -> int:
    """The rate limiter's interval, from CNP spacing (0: every mark answered)."""
    return int(np.diff(cnp_ts).min()) if cnp_ts.shape[0] > 1 else 0


def _notified_qps(cols: dict[str, np.ndarray], src: np.ndarray, dst: np.ndarray,
                  data: np.ndarray) -> dict[int, int]:
    """Row -> the QP a CNP for this packet would go to (where it can be told)."""
    qp, psn = cols["infiniband.bth.destqp"], cols["infiniband.bth.psn"]
    srcqp, aeth = cols["infiniband.deth.srcqp"], cols["infiniband.aeth.syndrome"]
    last_req: dict[tuple[str, str, int], int] = {}      # (A, B, PSN) -> QP at B
    peer: dict[tuple[str, str, int], int] = {}          # (A, B, QP at B) -> QP at A
    for i in np.flatnonzero(data).tolist():
        a, b = str(src[i]), str(dst[i])
        if aeth[i] >= 0:
            qb = last_req.get((b, a, int(psn[i])))
            if qb is not None:
                peer[(b, a, qb)] = int(qp[i])
        elif srcqp[i] < 0:
            last_req[(a, b, int(psn[i]))] = int(qp[i])
    out = {}
    for i in np.flatnonzero(data).tolist():
        if srcqp[i] >= 0:
            out[i] = int(srcqp[i])
        else:
            q = peer.get((str(src[i]), str(dst[i]), int(qp[i])))
            if q is not None:
                out[i] = q
    return out


def qos_per_row(cols: dict[str, np.ndarray], prio_map: str = "auto") -> dict[str, list[dict]]:
    """`congestion.qos`, one mask per (direction, value)."""
    from ibwire.analysis.credits import directions

    mac = cols["eth.src"].astype(str)
    side = np.where(mac != "", mac, np.char.add("interface ", directions(cols).astype(str)))
    nbytes = cols["frame.len"].astype(np.int64)
    out: dict[str, list[dict]] = {}
    for name, col in (("sl", cols["infiniband.lrh.sl"]), ("vl", cols["infiniband.lrh.vl"]),
                      ("p_key", cols["infiniband.bth.p_key"]),
                      ("priority", priorities(cols, prio_map))):
        col = col.astype(np.int64)
        rows = []
        for who in sorted(set(side.tolist())):
            m = (side == who) & (col >= 0)
            for v in np.unique(col[m]).tolist():
                k = m & (col == v)
                rows.append({"from": who, name: v, "packets": int(k.sum()),
                             "bytes": int(nbytes[k].sum())})
        out[name] = rows
    return out
