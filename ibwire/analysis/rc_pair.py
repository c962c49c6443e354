"""Pairing: which request stream and which response stream form one half-connection.

A requester at endpoint X (QP qA) sends requests to endpoint Y with DestQP qB;
the responder answers from Y to X with DestQP qA. A capture shows the two as
separate flows `(src, dst, DestQP)`; the half-connection is the pair. Rules, in
order (docs/rc-analysis.md, "Pairing"):

1. CM: a REQ from X (LocalQPN qx) and the REP from Y (LocalQPN qy) that follows it
   pair X:qx with Y:qy in both directions (IBA §12.6.5, §12.6.8).
2. Endpoints: the request flows X->Y and the response flows Y->X of one endpoint
   pair; when each side has one flow they pair directly.
3. Matching: otherwise each response flow goes to the request flow it fits best:
   first by MSN (the responder's count of completed messages must track the
   request flow's message ends), then by PSN (each response's PSN at or shortly
   before the last request PSN sent before it); when both hosts are requesters the
   reverse pair of the same QP pair adds its fit.

UC and UD flows have no responses: each request flow is its own stream.

A capture merged from several taps (mergecap: one pcapng interface per input)
shows a flow once per tap that saw it: when some flow appears at more than one
pcapng interface, every flow is keyed by its interface too, and pairing stays
within one interface (each tap's view is analysed as its own). Where each flow
appears at one interface only (one tap, or interfaces that code direction), the
interface is no part of the key. The ERF capture interface never is: ibdump's
sample, Endace taps and `ibwire gen` use it for direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from ibwire.analysis.rc_rules import C_LAST, C_READ_REQ, C_REQUEST, C_RESPONSE, OPCLASS
from ibwire.engines import rc_prepass as prepass
from ibwire.engines.rc_prepass import flow_numbers

_SHIFT_TAP, _SHIFT_SRC, _SHIFT_DST = 56, 40, 24
_QP_MASK = (1 << 24) - 1
_EP_MASK = (1 << 16) - 1          # endpoint numbers in a key (also the destination's)
_MAX_TAPS = 1 << 7
_PSN_SAMPLE = 4096
_ACK_WINDOW = 1 << 12
_MIN_PMTU = 256
_PMTUS = (256, 512, 1024, 2048, 4096)
_HEAD_ROWS = 1 << 18


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
    tap: list[int] = field(default_factory=list)         # pcapng interface, -1 = one tap

    def __len__(self) -> int:
        return len(self.req_src)


def _flow_keys(src: np.ndarray, dst: np.ndarray, qp: np.ndarray) -> np.ndarray:
    keys = np.empty(len(src), dtype=np.int64)
    prepass.flow_keys(src, dst, qp, _SHIFT_SRC, _SHIFT_DST, _QP_MASK, keys)
    return keys


def _split(key: int) -> tuple[int, int, int]:
    return (key >> _SHIFT_SRC) & _EP_MASK, (key >> _SHIFT_DST) & _EP_MASK, key & _QP_MASK


def _tap_bits(key: int) -> int:
    return key & ~((1 << _SHIFT_TAP) - 1)


def _taps(cols: dict[str, np.ndarray], keys: np.ndarray,
          transport: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(dense tap index per row, pcapng interface per index) when some flow (of the
    `transport` rows) is seen at more than one interface, else None (one tap, or
    interfaces that only code direction)."""
    code = cols.get("frame.interface_id")
    if code is None or not len(code) or code.min() == code.max():
        return None
    rows = np.flatnonzero(transport)
    seen = code[rows]
    if not len(seen) or seen.min() == seen.max():
        return None
    uniq, dense = np.unique(code, return_inverse=True)
    ends = np.concatenate((cols["ibwire.src"][rows], cols["ibwire.dst"][rows]))
    if len(uniq) > _MAX_TAPS or ends.max(initial=0) > _EP_MASK:
        return None          # cannot be keyed: analysed as one tap
    flows = np.unique(keys[rows])
    both = np.unique(keys[rows] | (dense[rows].astype(np.int64) << _SHIFT_TAP))
    return (dense.astype(np.int64), uniq) if len(both) > len(flows) else None


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


def opclasses(op: np.ndarray) -> np.ndarray:
    """OPCLASS of every row's BTH opcode (0 where there is none)."""
    cls = OPCLASS[op.astype(np.uint8)]
    cls[op < 0] = 0
    return cls


def _reverse(key: int) -> int:
    """The flow key with source and destination swapped (same QP field and tap)."""
    s, d, q = _split(key)
    return _tap_bits(key) | (d << _SHIFT_SRC) | (s << _SHIFT_DST) | q


def _find(keys: np.ndarray, key: int) -> int:
    j = int(np.searchsorted(keys, key))
    return j if j < len(keys) and keys[j] == key else -1


def _message_psns(psn: np.ndarray, last: np.ndarray, reads: np.ndarray, dmalen: np.ndarray,
                  req_rows: np.ndarray, base: int) -> np.ndarray:
    """PSNs (relative to `base`) of the message-ending requests, each message once. A
    READ resent part-way asks for the rest from a later PSN (IBA 9.7.4.1.5): it is
    a resend (below a PSN sent before it), and its DMA length plus its PSN times the
    path's PMTU equals an earlier READ's: no new message."""
    rel_all = (psn[req_rows].astype(np.int64) - base) % (1 << 24)
    is_end = last[req_rows]
    rel = rel_all[is_end]
    below = np.zeros(len(rel_all), dtype=np.bool_)
    below[1:] = rel_all[1:] < np.maximum.accumulate(rel_all)[:-1]
    cand = np.flatnonzero((reads[req_rows] & (dmalen[req_rows] > 0))[is_end])
    if len(cand) > 1:
        ln = dmalen[req_rows][is_end][cand]
        again = np.zeros(len(cand), dtype=np.bool_)
        for pmtu in _PMTUS:
            _, first = np.unique(ln + rel[cand] * pmtu, return_index=True)
            seen = np.ones(len(cand), dtype=np.bool_)
            seen[first] = False
            again |= seen
        rel = np.delete(rel, cand[again & below[is_end][cand]])
    return np.unique(rel)


def _msn_fit(psn: np.ndarray, msn: np.ndarray, last: np.ndarray, reads: np.ndarray,
             dmalen: np.ndarray, resp_rows: np.ndarray, req_rows: np.ndarray) -> int:
    """How many responses carry an MSN that fits these requests: the responder's MSN
    counts the messages completed (IBA 9.7.5.1.1), so MSN minus the number of distinct
    message-ending request PSNs up to the response's PSN is one constant."""
    rows = resp_rows[msn[resp_rows] >= 0]
    if not len(rows) or not len(req_rows) or not last[req_rows].any():
        return 0
    base = int(psn[req_rows[0]])
    rel_ends = _message_psns(psn, last, reads, dmalen, req_rows, base)
    rel = (psn[rows].astype(np.int64) - base) % (1 << 24)
    # Only responses inside these requests' PSN span can be theirs: another
    # connection's responses elsewhere in PSN space would all see one count of
    # message ends, and a run of equal MSNs would fit any constant.
    span = int(((psn[req_rows].astype(np.int64) - base) % (1 << 24)).max()) + _ACK_WINDOW
    inside = rel <= span
    rows, rel = rows[inside], rel[inside]
    if not len(rows):
        return 0
    k = np.searchsorted(rel_ends, rel, "right")
    _, counts = np.unique(msn[rows].astype(np.int64) - k, return_counts=True)
    return int(counts.max())


class _RowsOf(dict):
    """Flow index -> its rows (computed once per flow), at most `limit` of them."""

    def __init__(self, rows: np.ndarray, inv: np.ndarray, limit: int | None = None) -> None:
        super().__init__()
        self.rows, self.inv, self.limit = rows, inv, limit

    def __missing__(self, flow: int) -> np.ndarray:
        got = self.rows[self.inv == flow][:self.limit]
        self[flow] = got
        return got


def _head(req_rows: np.ndarray, resp_rows: np.ndarray) -> int:
    """The row where matching stops looking: after _HEAD_ROWS transport rows."""
    n = len(req_rows) + len(resp_rows)
    if n <= _HEAD_ROWS:
        return 1 << 62
    both = np.concatenate((req_rows[:_HEAD_ROWS], resp_rows[:_HEAD_ROWS]))
    return int(np.partition(both, _HEAD_ROWS - 1)[_HEAD_ROWS - 1]) + 1


def _read_spans(reads: np.ndarray, dmalen: np.ndarray) -> np.ndarray:
    """PSNs each of these rows takes: a READ request as many as its responses at the
    smallest PMTU (256), any other row one (IBA 9.7.4.1.5)."""
    spans = np.ones(len(reads), dtype=np.int64)
    read = reads & (dmalen > 0)
    spans[read] = (dmalen[read].astype(np.int64) + _MIN_PMTU - 1) // _MIN_PMTU
    return spans


def _before(rows: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """The rows up to the last sampled response: what those responses can answer."""
    return rows[:np.searchsorted(rows, sample[-1])] if len(sample) else rows[:0]


def _same_sport(sport: np.ndarray | None, req_rows: np.ndarray, resp_rows: np.ndarray) -> bool:
    """Both flows carry one RoCEv2 UDP source port: Linux derives it from the flow
    label, and with none set from `rdma_calc_flow_label(lqpn, rqpn)`, which is the
    same for both ends of a QP pair. (Other stacks hash one QPN: then no flows match.)"""
    if sport is None or not len(req_rows) or not len(resp_rows):
        return False
    p = int(sport[req_rows[0]])
    return p > 0 and p == int(sport[resp_rows[0]])


def _assign(fit: np.ndarray, near: np.ndarray) -> list[tuple[int, int]]:
    """Request flow (row) to response flow (column), each at most once, maximising the
    fits' sum, then the closeness's: one response flow per request flow, so a flow that
    fits two is given to the one the others leave. Pairs with no evidence stay apart."""
    have = (fit > 0) | (near > 0)
    if not have.any():
        return []
    # Lexicographic by one float cost: the closeness scaled below one fit step (fits
    # stay below 2**14: the float keeps the closeness to a response's worth).
    top = float(max(int(near.max()), 1)) * (min(fit.shape) + 1)
    score = fit.astype(np.float64) + near.astype(np.float64) / top
    rows, cols = linear_sum_assignment(score, maximize=True)
    return [(int(a), int(b)) for a, b in zip(rows, cols, strict=True) if have[a, b]]


def _answered(psn: np.ndarray, resp_rows: np.ndarray, req_rows: np.ndarray,
              reads: np.ndarray, dmalen: np.ndarray) -> int:
    """How many of these responses could answer these requests: a response's PSN is at
    or a little before (within _ACK_WINDOW) the last PSN the last request sent before
    it takes (`_read_spans`: a READ's PSNs at the smallest PMTU).
    Streams that start at the same PSN differ in when they send what."""
    if not len(req_rows) or not len(resp_rows):
        return 0
    last = np.searchsorted(req_rows, resp_rows) - 1
    ok = last >= 0
    prev = req_rows[last[ok]]
    spans = _read_spans(reads[prev], dmalen[prev])
    d = (psn[resp_rows[ok]].astype(np.int64) - psn[prev] - spans + 1 + (1 << 23)) \
        % (1 << 24) - (1 << 23)
    ok = (d <= 0) & (d > -_ACK_WINDOW)
    # Count the responses that fit; among equal counts, the closer tracking wins.
    return int(ok.sum()) * _ACK_WINDOW * _PSN_SAMPLE - int(-d[ok].sum())


def pair_streams(cols: dict[str, np.ndarray], cls: np.ndarray | None = None) -> Streams:
    op = cols["infiniband.bth.opcode"]
    cls = opclasses(op) if cls is None else cls
    keys = _flow_keys(cols["ibwire.src"], cols["ibwire.dst"], cols["infiniband.bth.destqp"])
    psn = cols["infiniband.bth.psn"]
    is_req, is_resp = (cls & C_REQUEST) != 0, (cls & C_RESPONSE) != 0
    taps = _taps(cols, keys, is_req | is_resp)
    if taps is not None:
        keys |= taps[0] << _SHIFT_TAP
    req_keys, req_rank, req_ids = flow_numbers(keys, is_req)
    resp_keys, resp_rank, resp_ids = flow_numbers(keys, is_resp)
    cm = cm_pairs(cols)
    partner: dict[int, int] = {}              # request flow -> response flow
    taken: set[int] = set()
    by_pair: dict[tuple[int, int, int], list[int]] = {}
    for j, k in enumerate(resp_keys.tolist()):
        s, d, _ = _split(k)
        by_pair.setdefault((d, s, _tap_bits(k)), []).append(j)
    reqs_by_pair: dict[tuple[int, int, int], list[int]] = {}
    for i, k in enumerate(req_keys.tolist()):
        s, d, qb = _split(k)
        reqs_by_pair.setdefault((s, d, _tap_bits(k)), []).append(i)
        peer = cm.get((d, qb))
        if peer is not None and peer[0] == s:
            want = _tap_bits(k) | (int(d) << _SHIFT_SRC) | (int(s) << _SHIFT_DST) | peer[1]
            j = int(np.searchsorted(resp_keys, want))
            if j < len(resp_keys) and resp_keys[j] == want and j not in taken:
                partner[i], _ = j, taken.add(j)
    req_rows, resp_rows = np.flatnonzero(is_req), np.flatnonzero(is_resp)
    msn, last = cols["infiniband.aeth.msn"], (cls & C_LAST) != 0
    reads = (cls & C_READ_REQ) != 0
    dmalen = cols.get("infiniband.reth.dmalen")
    if dmalen is None:
        dmalen = np.full(len(cls), -1, dtype=np.int64)
    sport = cols.get("udp.srcport")
    # Matching looks at the start of the capture only (bounded work on big files).
    head = _head(req_rows, resp_rows)
    nq, npr = np.searchsorted(req_rows, head), np.searchsorted(resp_rows, head)
    req_of = _RowsOf(req_rows[:nq], req_rank[req_ids[req_rows[:nq]]])
    resp_of = _RowsOf(resp_rows[:npr], resp_rank[resp_ids[resp_rows[:npr]]], _PSN_SAMPLE)
    for pair, reqs in reqs_by_pair.items():
        free_r = [i for i in reqs if i not in partner]
        free_p = [j for j in by_pair.get(pair, []) if j not in taken]
        if len(free_r) == 1 and len(free_p) == 1:
            partner[free_r[0]] = free_p[0]
            taken.add(free_p[0])
            continue
        fit = np.zeros((len(free_r), len(free_p)), dtype=np.int64)
        near = np.zeros((len(free_r), len(free_p)), dtype=np.int64)
        for b, j in enumerate(free_p):
            rrows = resp_of[j]
            for a, i in enumerate(free_r):
                rq = _before(req_of[i], rrows)
                near[a, b] = _answered(psn, rrows, rq, reads, dmalen)
                # Both sides requesters: the reverse pair (requests to qA, responses
                # to qB) belongs to the same QP pair and must fit as well.
                ri = _find(req_keys, _reverse(int(resp_keys[j])))
                rj = _find(resp_keys, _reverse(int(req_keys[i])))
                if ri >= 0 and rj >= 0:
                    rr2 = resp_of[rj]
                    near[a, b] += _answered(psn, rr2, _before(req_of[ri], rr2), reads,
                                            dmalen)
                fit[a, b] = _msn_fit(psn, msn, last, reads, dmalen, rrows, rq) + \
                    _same_sport(sport, req_of[i], rrows) * (1 << 13)
        for a, b in _assign(fit, near):
            partner[free_r[a]] = free_p[b]
            taken.add(free_p[b])
    st = Streams(hc=np.empty(len(op), dtype=np.int32))     # (filled by `streams_of`)
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
        _append(st, s, d, qb, qa, start, _tap_of(taps, k))
    for j, k in enumerate(resp_keys.tolist()):
        if resp_hc[j] < 0:
            s, d, qa = _split(k)
            resp_hc[j] = len(st)
            _append(st, d, s, -1, qa, (), _tap_of(taps, k))
    prepass.streams_of(req_ids, resp_ids, req_hc[req_rank], resp_hc[resp_rank], st.hc)
    _connections(st)
    return st


def _tap_of(taps: tuple[np.ndarray, np.ndarray] | None, key: int) -> int:
    return -1 if taps is None else int(taps[1][key >> _SHIFT_TAP])


def _append(st: Streams, s: int, d: int, qb: int, qa: int, start: tuple[int, ...],
            tap: int) -> None:
    st.req_src.append(s)
    st.req_dst.append(d)
    st.resp_qp.append(qb)
    st.req_qp.append(qa)
    st.start_psn.append(start)
    st.tap.append(tap)


def _connections(st: Streams) -> None:
    """Both half-connections of one QP pair (X:qA <-> Y:qB) share a connection id."""
    ids: dict[tuple, int] = {}
    for h in range(len(st)):
        a = (st.req_src[h], st.req_qp[h])
        b = (st.req_dst[h], st.resp_qp[h])
        key = (st.tap[h], min(a, b), max(a, b)) if -1 not in (a[1], b[1]) else ("hc", h)
        st.connection.append(ids.setdefault(key, len(ids)))
