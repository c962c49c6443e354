"""Congestion marks, CNPs and QoS classes from a capture (docs/credits.md §3).

A flow is (source, destination, BTH DestQP), addresses being IP addresses for
RoCEv2 and LIDs natively. A mark is ECN CE (IP) or BTH FECN; a CNP (a BTH opcode
of the CNP transport) goes back to the QP that sent marked packets: for UD the
DETH source QP of the marked packets; for RC the requester QP, learned from
responses (an AETH packet to QP a with the PSN of a request to QP b pairs b with
a). The *cause* of a CNP is the first mark of the flows notifying its QP that the
notification point's rate limiter let through: at least `cnp_gap_ns` after the
previous cause (the limiter's minimum time between CNPs per QP; the capture shifts
both marks by the same delay, so the rule holds at the capture point). Without a
given gap, the smallest spacing of that QP's captured CNPs estimates it. Unpaired
flows fall back to the address pair.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from ibwire.analysis.credit_input import TIME_COLUMN
from ibwire.analysis.pfc import priorities
from ibwire.analysis.text_codes import factorize, merged
from ibwire.constants import ECN_CE
from ibwire.headers.opcodes import OPCODES

CNP_OPCODES = np.array([op.code for op in OPCODES if op.transport == "CNP" and "cnp" in op.headers])
NS = 1_000_000_000
_LAST = 1 << 62            # sorts after every frame number


def _endpoints(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(source code, destination code, labels): IP address, else IPv6 address, else
    "LID n", else ""; equal labels have equal codes. One side at a time, each fallback
    only for the rows still without a label (bounded temporaries on big captures)."""
    index = {"": 0}

    def shared(codes: np.ndarray, texts: list[str]) -> np.ndarray:
        remap = np.array([index.setdefault(t, len(index)) for t in texts] or [0], np.int64)
        return remap[codes] if len(codes) else codes

    ends = []
    for ip, ip6, lid in (("ip.src", "ipv6.src", "infiniband.lrh.slid"),
                         ("ip.dst", "ipv6.dst", "infiniband.lrh.dlid")):
        code = shared(*factorize(cols[ip]))
        rest = np.flatnonzero(code == 0)
        code[rest] = shared(*factorize(cols[ip6][rest]))
        lids = cols[lid]
        rest = rest[(code[rest] == 0) & (lids[rest] >= 0)]
        values, inverse = np.unique(lids[rest].astype(np.int64), return_inverse=True)
        code[rest] = shared(inverse.reshape(-1), [f"LID {v}" for v in values.tolist()])
        ends.append(code)
    return ends[0], ends[1], list(index)


class _Pairs:
    """Dense ids of (source, destination) label-code pairs, both ways round."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, nlabels: int) -> None:
        self.n = max(nlabels, 1)
        self.values = np.unique(np.concatenate([src * self.n + dst, dst * self.n + src]))

    def id(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.values, a * self.n + b)


def _first_per_group(group: np.ndarray, values: np.ndarray, ngroups: int, last: bool = False
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(whether each group has a row, the value of its first (last) row)."""
    has = np.zeros(ngroups, bool)
    out = np.zeros(ngroups, np.int64)
    if len(group):
        g = group[::-1] if last else group
        u, at = np.unique(g, return_index=True)
        has[u] = True
        out[u] = (values[::-1] if last else values)[at]
    return has, out


def packet_marks(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Per-frame masks: ECN CE (IPv4 ECN, else the IPv6 traffic class's ECN bits),
    FECN, BECN, CNP, and data packets (a BTH that is not a CNP)."""
    qp = cols["infiniband.bth.destqp"]
    ecn = cols["ip.dsfield.ecn"].astype(np.int64)
    tclass = cols["ipv6.tclass"].astype(np.int64)
    ecn = np.where(ecn >= 0, ecn, np.where(tclass >= 0, tclass & 3, -1))
    cnp = np.isin(cols["infiniband.bth.opcode"], CNP_OPCODES) & (qp >= 0)
    return (ecn == ECN_CE, cols["infiniband.bth.fecn"] == 1, cols["infiniband.bth.becn"] == 1,
            cnp, (qp >= 0) & ~cnp)


def finish_flows(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each flow's CNP rate and mark-to-CNP delays from its collected `delays`, the
    flows in (src, dst, dest QP) order."""
    for f in flows:
        delays = f.pop("delays")
        if not f["cnps"]:
            del f["cnp_causes"]
            continue
        span = f["last_cnp_ns"] - f["first_cnp_ns"]
        f["cnp_rate_per_s"] = round((f["cnps"] - 1) * NS / span, 3) if span > 0 else None
        f["mark_to_cnp_ns"] = delays[0] if delays else None
        f["mean_mark_to_cnp_ns"] = round(sum(delays) / len(delays), 1) if delays else None
    return sorted(flows, key=lambda f: (f["src"], f["dst"], f["dest_qp"]))


def congestion(cols: dict[str, np.ndarray], cnp_gap_ns: int | None = None) -> dict[str, Any]:
    ts = np.asarray(cols[TIME_COLUMN], np.int64)
    qp = cols["infiniband.bth.destqp"].astype(np.int64)
    src, dst, labels = _endpoints(cols)
    ce, fecn, becn, cnp, data = packet_marks(cols)
    pairs = _Pairs(src[data | cnp], dst[data | cnp], len(labels))
    notify = _notified_qps(cols, src, dst, pairs, data)
    rows = np.flatnonzero(data | cnp)
    pid = pairs.id(src[rows], dst[rows])
    keys, first, fid = np.unique((pid << 32) | qp[rows], return_index=True,
                                 return_inverse=True)
    fid = fid.reshape(-1)
    nf = len(keys)
    is_cnp = cnp[rows]
    is_data = ~is_cnp
    t = ts[rows]

    def count(mask: np.ndarray, weights: np.ndarray | None = None) -> list[int]:
        w = None if weights is None else weights[mask]
        return np.rint(np.bincount(fid[mask], weights=w, minlength=nf)).astype(np.int64).tolist()

    packets, cnps = count(is_data), count(is_cnp)
    nbytes = count(is_data, cols["frame.len"][rows].astype(np.float64))
    n_ce, n_fecn, n_becn = (count(is_data & m[rows]) for m in (ce, fecn, becn))
    mark = is_data & (ce[rows] | fecn[rows])
    # `x = x or t` over a flow's rows: its first non-zero time, else 0 (None: no rows)
    firsts = {}
    for name, m in (("mark", mark), ("cnp", is_cnp)):
        has, _ = _first_per_group(fid[m], t[m], nf)
        nz_has, nz = _first_per_group(fid[m & (t != 0)], t[m & (t != 0)], nf)
        firsts[name] = [int(v) if h else (0 if a else None)
                        for a, h, v in zip(has.tolist(), nz_has.tolist(), nz.tolist())]
    has_cnp, last_cnp = _first_per_group(fid[is_cnp], t[is_cnp], nf, last=True)
    fr = rows[first]
    flows = [{"src": labels[s], "dst": labels[d], "dest_qp": q, "packets": packets[f],
              "bytes": nbytes[f], "ce": n_ce[f], "fecn": n_fecn[f], "becn": n_becn[f],
              "cnps": cnps[f], "first_mark_ns": firsts["mark"][f],
              "first_cnp_ns": firsts["cnp"][f],
              "last_cnp_ns": int(last_cnp[f]) if has_cnp[f] else None,
              "delays": [], "cnp_causes": []}
             for f, (s, d, q) in enumerate(zip(src[fr].tolist(), dst[fr].tolist(),
                                               qp[fr].tolist()))]
    marks = _Marks(pid[mark], notify[rows[mark]], t[mark],
                   cols["frame.number"][rows[mark]].astype(np.int64))
    cp = np.flatnonzero(is_cnp)
    cp = cp[np.argsort(fid[cp], kind="stable")]           # by flow, in capture order
    cuts = np.flatnonzero(np.diff(fid[cp])) + 1
    for group in np.split(cp, cuts) if len(cp) else ():
        f, mine = int(fid[group[0]]), rows[group]
        i0 = int(fr[f])
        rev = int(pairs.id(dst[i0:i0 + 1], src[i0:i0 + 1])[0])
        back = marks.get(rev, int(qp[i0])) or marks.get(rev, -1)
        gap = cnp_gap_ns if cnp_gap_ns is not None else _gap_estimate(ts[mine])
        fl, prev = flows[f], None
        for i, tc in zip(mine.tolist(), ts[mine].tolist()):
            k = bisect_right(back, (-1 if prev is None else prev + gap - 1, _LAST))
            if k < len(back) and back[k][0] <= tc:
                prev = back[k][0]
                fl["delays"].append(tc - prev)
                fl["cnp_causes"].append([int(cols["frame.number"][i]), back[k][1]])
    return {"flows": finish_flows(flows),
            "ce_marks": int(ce.sum()), "fecn": int((fecn & data).sum()),
            "becn": int((becn & data).sum()), "cnps": int(cnp.sum())}


class _Marks:
    """Congestion marks by (pair id, notified QP): (time, frame) in capture order."""

    def __init__(self, pid: np.ndarray, notify: np.ndarray, t: np.ndarray,
                 frame: np.ndarray) -> None:
        key = (pid << 26) | (notify + 1)                 # QPs are 24 bits, -1: none
        self.order = np.argsort(key, kind="stable")
        self.keys = key[self.order]
        self.t, self.frame = t, frame

    def get(self, pid: int, notify: int) -> list[tuple[int, int]]:
        k = (pid << 26) | (notify + 1)
        lo, hi = np.searchsorted(self.keys, [k, k + 1])
        at = self.order[lo:hi]
        return list(zip(self.t[at].tolist(), self.frame[at].tolist()))


def _gap_estimate(cnp_ts: np.ndarray) -> int:
    """The rate limiter's interval, from CNP spacing (0: every mark answered)."""
    return int(np.diff(cnp_ts).min()) if cnp_ts.shape[0] > 1 else 0


def _notified_qps(cols: dict[str, np.ndarray], src: np.ndarray, dst: np.ndarray,
                  pairs: _Pairs, data: np.ndarray) -> np.ndarray:
    """Per row, the QP a CNP for this packet would go to (-1: cannot be told): a UD
    packet's DETH source QP; an RC request's requester QP, learned from responses
    (a response from A to B with PSN p answers B's latest earlier request to A with
    PSN p, sent to QP b: then (B, A, b) -> the response's QP; the latest wins)."""
    qp = cols["infiniband.bth.destqp"].astype(np.int64)
    psn = cols["infiniband.bth.psn"].astype(np.int64) & 0xFFFFFF   # data rows: 24 bits
    srcqp = cols["infiniband.deth.srcqp"].astype(np.int64)
    aeth = cols["infiniband.aeth.syndrome"]
    is_req = data & (aeth < 0) & (srcqp < 0)
    row = np.flatnonzero(is_req | (data & (aeth >= 0)))       # capture order
    is_req = is_req[row]
    # As-of join: each response meets the latest earlier request with its key
    # (requests keyed (A, B, PSN), responses (B, A, PSN)); a stable sort by key keeps
    # capture order within a key.
    a, b = np.where(is_req, src[row], dst[row]), np.where(is_req, dst[row], src[row])
    key = (pairs.id(a, b) << 24) | psn[row]
    del a, b
    order = np.argsort(key, kind="stable")
    key, row, is_req = key[order], row[order], is_req[order]
    del order
    last = np.maximum.accumulate(np.where(is_req, np.arange(len(row)), -1)) \
        if len(row) else np.zeros(0, np.int64)
    hit = ~is_req & (last >= 0)
    hit[hit] = key[last[hit]] == key[hit]
    r_rows, q_rows = row[hit], row[last[hit]]
    del key, row, is_req, last, hit
    # peer[(B, A, b)] = the response's QP, the latest response winning
    pkey = (pairs.id(dst[r_rows], src[r_rows]) << 25) | qp[q_rows]
    by = np.lexsort((r_rows, pkey))
    pkey, pval = pkey[by], qp[r_rows][by]
    end = np.ones(len(pkey), bool)
    end[:-1] = pkey[1:] != pkey[:-1]
    pkey, pval = pkey[end], pval[end]
    out = np.full(len(qp), -1, np.int64)
    rc = np.flatnonzero(data & (srcqp < 0))
    look = (pairs.id(src[rc], dst[rc]) << 25) | qp[rc]
    at = np.minimum(np.searchsorted(pkey, look), max(len(pkey) - 1, 0))
    found = (pkey[at] == look) if len(pkey) else np.zeros(len(rc), bool)
    out[rc[found]] = pval[at[found]]
    ud = data & (srcqp >= 0)
    out[ud] = srcqp[ud]
    return out


def qos(cols: dict[str, np.ndarray], prio_map: str = "auto") -> dict[str, list[dict]]:
    """Packets and bytes per SL, VL, P_Key and Ethernet priority, per link direction
    (the Ethernet source MAC, else the capture interface of the direction)."""
    from ibwire.analysis.credits import directions

    macs, texts = factorize(cols["eth.src"])
    way = directions(cols).astype(np.int64)
    (mac, iface), labels = merged([(macs, texts), (way, [f"interface {d}" for d in
                                                        range(int(way.max(initial=1)) + 1)])])
    empty = labels.index("") if "" in labels else -1
    side = np.where(mac != empty, mac, iface)
    rank = np.empty(len(labels), np.int64)                 # label code -> sorted position
    rank[sorted(range(len(labels)), key=labels.__getitem__)] = np.arange(len(labels))
    by_rank = sorted(labels)
    nbytes = cols["frame.len"].astype(np.float64)
    out: dict[str, list[dict]] = {}
    for name, col in (("sl", cols["infiniband.lrh.sl"]), ("vl", cols["infiniband.lrh.vl"]),
                      ("p_key", cols["infiniband.bth.p_key"]),
                      ("priority", priorities(cols, prio_map))):
        col = col.astype(np.int64)
        ok = col >= 0
        keys, inverse = np.unique((rank[side[ok]] << 32) | col[ok], return_inverse=True)
        inverse = inverse.reshape(-1)
        frames = np.bincount(inverse, minlength=len(keys)).tolist()
        total = np.rint(np.bincount(inverse, weights=nbytes[ok], minlength=len(keys)))
        out[name] = [{"from": by_rank[k >> 32], name: k & 0xFFFFFFFF, "packets": n,
                      "bytes": int(b)} for k, n, b in zip(keys.tolist(), frames,
                                                          total.tolist())]
    return out
