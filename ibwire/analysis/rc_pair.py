"""Pairing: which request stream and which response stream form one half-connection.

A requester at endpoint X (QP qA) sends requests to endpoint Y with DestQP qB;
the responder answers from Y to X with DestQP qA. A capture shows the two as
separate flows `(src, dst, DestQP)`; the half-connection is the pair. Rules, in
order (docs/rc-analysis.md, "Pairing"):

1. CM: a REQ from X (LocalQPN qx) and the REP from Y (LocalQPN qy) that follows it
   pair X:qx with Y:qy in both directions (IBA §12.6.5, §12.6.8).
2. Endpoints: the request flows X->Y and the response flows Y->X of one endpoint
   pair; when each side has one flow they pair directly.
3. PSN matching: otherwise each response flow goes to the request flow holding
   most of its PSNs (responses carry the PSN of the request they answer).

UC and UD flows have no responses: each request flow is its own stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ibwire.analysis.rc_rules import C_REQUEST, C_RESPONSE, OPCLASS
from ibwire.engines import rc_prepass as prepass

_SHIFT_SRC, _SHIFT_DST = 40, 24
_QP_MASK = (1 << 24) - 1
_TABLE_BITS = 20
_PSN_SAMPLE = 4096
_MAX_FLOWS = 1 << (_TABLE_BITS - 1)


@dataclass
class Streams:
    """Half-connections of a capture and each row's membership."""

    hc: np.ndarray                 # int32 per row: half-connection index, -1 = not transport
    req_src: list[int] = field(default_factory=list)     # requester endpoint
    req_dst: list[int] = field(default_factory=list)     # responder endpoint
    resp_qp: list[int] = field(default_factory=list)     # responder QPN (requests' DestQP)
    req_qp: list[int] = field(default_factory=list)      # requester QPN (responses' DestQP)
    start_psn: list[tuple[int, ...]] = field(default_factory=list)  # CM candidates
    connection: list[int] = field(default_factory=list)  # both directions share one id

    def __len__(self) -> int:
        return len(self.req_src)


def _flow_keys(src: np.ndarray, dst: np.ndarray, qp: np.ndarray) -> np.ndarray:
    return ((src.astype(np.int64) << _SHIFT_SRC) | (dst.astype(np.int64) << _SHIFT_DST)
            | (qp.astype(np.int64) & _QP_MASK))


def _split(key: int) -> tuple[int, int, int]:
    return key >> _SHIFT_SRC, (key >> _SHIFT_DST) & 0xFFFF, key & _QP_MASK


def cm_pairs(cols: dict[str, np.ndarray]) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """(endpoint, QPN) -> (peer endpoint, peer QPN, its own CM starting PSN, the peer's)
    from CM REQ/REP MADs."""
    req_qp, rep_qp = cols["infiniband.cm.req.localqpn"], cols["infiniband.cm.rep.localqpn"]
    rows = np.flatnonzero((req_qp >= 0) | (rep_qp >= 0))
    src, dst = cols["ibwire.src"], cols["ibwire.dst"]
    req_psn, rep_psn = cols["infiniband.cm.req.startpsn"], cols["infiniband.cm.rep.startpsn"]
    open_reqs: dict[tuple[int, int], tuple[int, int]] = {}
    out: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for i in rows:
        if req_qp[i] >= 0:
            open_reqs[(int(src[i]), int(dst[i]))] = (int(req_qp[i]), int(req_psn[i]))
        else:
            got = open_reqs.pop((int(dst[i]), int(src[i])), None)
            if got is None:
                continue
            x, y = int(dst[i]), int(src[i])
            qx, psn_x = got
            qy, psn_y = int(rep_qp[i]), int(rep_psn[i])
            # Which side's requests start at which PSN differs between readings of
            # §12.7 (and between stacks): keep both, the engine picks the one that
            # precedes the first request seen.
            out[(x, qx)] = (y, qy, psn_x, psn_y)
            out[(y, qy)] = (x, qx, psn_y, psn_x)
    return out


def unique_inverse(keys: np.ndarray, use_numba: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) in one hashing pass (flows are few)."""
    ids = np.empty(len(keys), dtype=np.int64)
    uniq = np.empty(min(len(keys), _MAX_FLOWS), dtype=np.int64)
    run = prepass.flow_ids if use_numba else prepass.flow_ids_py
    n = run(keys, np.ones(len(keys), dtype=np.bool_), _TABLE_BITS, ids, uniq)
    if n < 0:
        return np.unique(keys, return_inverse=True)
    uniq = uniq[:n]
    order = np.argsort(uniq)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return uniq[order], rank[ids]


def opclasses(op: np.ndarray) -> np.ndarray:
    """OPCLASS of every row's BTH opcode (0 where there is none)."""
    cls = OPCLASS[op.astype(np.uint8)]
    cls[op < 0] = 0
    return cls


def pair_streams(cols: dict[str, np.ndarray], cls: np.ndarray | None = None) -> Streams:
    op = cols["infiniband.bth.opcode"]
    cls = opclasses(op) if cls is None else cls
    keys = _flow_keys(cols["ibwire.src"], cols["ibwire.dst"], cols["infiniband.bth.destqp"])
    psn = cols["infiniband.bth.psn"]
    is_req, is_resp = (cls & C_REQUEST) != 0, (cls & C_RESPONSE) != 0
    req_keys, req_inv = unique_inverse(keys[is_req])
    resp_keys, resp_inv = unique_inverse(keys[is_resp])
    cm = cm_pairs(cols)
    partner: dict[int, int] = {}              # request flow -> response flow
    taken: set[int] = set()
    by_pair: dict[tuple[int, int], list[int]] = {}
    for j, k in enumerate(resp_keys.tolist()):
        s, d, _ = _split(k)
        by_pair.setdefault((d, s), []).append(j)
    reqs_by_pair: dict[tuple[int, int], list[int]] = {}
    for i, k in enumerate(req_keys.tolist()):
        s, d, qb = _split(k)
        reqs_by_pair.setdefault((s, d), []).append(i)
        peer = cm.get((d, qb))
        if peer is not None and peer[0] == s:
            want = (int(d) << _SHIFT_SRC) | (int(s) << _SHIFT_DST) | peer[1]
            j = int(np.searchsorted(resp_keys, want))
            if j < len(resp_keys) and resp_keys[j] == want and j not in taken:
                partner[i], _ = j, taken.add(j)
    req_psns = psn[is_req]
    resp_psns = psn[is_resp]
    sample = _PSN_SAMPLE
    for pair, reqs in reqs_by_pair.items():
        free_r = [i for i in reqs if i not in partner]
        free_p = [j for j in by_pair.get(pair, []) if j not in taken]
        if len(free_r) == 1 and len(free_p) == 1:
            partner[free_r[0]] = free_p[0]
            taken.add(free_p[0])
            continue
        scores = []
        for j in free_p:
            # The streams' first PSNs decide: responses answer requests near them.
            rp = resp_psns[np.flatnonzero(resp_inv == j)[:sample]]
            for i in free_r:
                hit = np.isin(rp, req_psns[np.flatnonzero(req_inv == i)[:sample * 8]]).sum()
                if hit:
                    scores.append((-int(hit), i, j))
        for _, i, j in sorted(scores):
            if i not in partner and j not in taken:
                partner[i] = j
                taken.add(j)
    st = Streams(hc=np.full(len(op), -1, dtype=np.int32))
    req_hc = np.empty(len(req_keys), dtype=np.int32)
    resp_hc = np.full(len(resp_keys), -1, dtype=np.int32)
    for i, k in enumerate(req_keys.tolist()):
        s, d, qb = _split(k)
        j = partner.get(i)
        qa = _split(int(resp_keys[j]))[2] if j is not None else -1
        req_hc[i] = len(st)
        if j is not None:
            resp_hc[j] = len(st)
        start = cm.get((s, qa), (0, 0))[2:] if qa >= 0 else ()
        _append(st, s, d, qb, qa, start)
    for j, k in enumerate(resp_keys.tolist()):
        if resp_hc[j] < 0:
            s, d, qa = _split(k)
            resp_hc[j] = len(st)
            _append(st, d, s, -1, qa, ())
    st.hc[is_req] = req_hc[req_inv]
    st.hc[is_resp] = resp_hc[resp_inv]
    _connections(st)
    return st


def _append(st: Streams, s: int, d: int, qb: int, qa: int, start: tuple[int, ...]) -> None:
    st.req_src.append(s)
    st.req_dst.append(d)
    st.resp_qp.append(qb)
    st.req_qp.append(qa)
    st.start_psn.append(start)


def _connections(st: Streams) -> None:
    """Both half-connections of one QP pair (X:qA <-> Y:qB) share a connection id."""
    ids: dict[tuple, int] = {}
    for h in range(len(st)):
        a = (st.req_src[h], st.req_qp[h])
        b = (st.req_dst[h], st.resp_qp[h])
        key = (min(a, b), max(a, b)) if -1 not in (a[1], b[1]) else ("hc", h)
        st.connection.append(ids.setdefault(key, len(ids)))
