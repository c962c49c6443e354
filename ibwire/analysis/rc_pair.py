"""Pairing: which request stream and which response stream form one half-connection.

A requester at endpoint X (QP qA) sends requests to endpoint Y with DestQP qB;
the responder answers from Y to X with DestQP qA. A capture shows the two as
separate flows `(src, dst, DestQP)`; the half-connection is the pair. Rules, in
order (docs/rc-analysis.md, "Streams and pairing"):

1. CM: a REQ from X (LocalQPN qx) and the REP from Y (LocalQPN qy) that follows it
   pair X:qx with Y:qy in both directions (IBA §12.6.5, §12.6.8).
2. Endpoints: the request flows X->Y and the response flows Y->X of one endpoint
   pair; when each side has one flow they pair directly.
3. Matching: otherwise QPs of X are matched with QPs of Y, both halves of a QP
   pair at once (an RC QP has one peer), on the evidence of `rc_pair_fit`: one
   UDP source port, then the responses that fit by MSN (the responder's count of
   completed messages must track the request flow's message ends) and by PSN
   (each response's PSN at or shortly before the last request PSN sent before
   it), then a steady delay from request to response, then PSN closeness.

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

from ibwire.analysis.rc_pair_fit import PSN_SAMPLE, Evidence
from ibwire.analysis.rc_rules import C_RELIABLE, C_REQUEST, C_RESPONSE, OPCLASS
from ibwire.engines import rc_prepass as prepass
from ibwire.engines.rc_prepass import flow_numbers

_SHIFT_TAP, _SHIFT_SRC, _SHIFT_DST = 56, 40, 24
_QP_MASK = (1 << 24) - 1
_EP_MASK = (1 << 16) - 1          # endpoint numbers in a key (also the destination's)
_MAX_TAPS = 1 << 7
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


def _find(keys: np.ndarray, key: int) -> int:
    j = int(np.searchsorted(keys, key))
    return j if j < len(keys) and keys[j] == key else -1


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


def _assign(levels: list[np.ndarray], near: np.ndarray) -> list[tuple[int, int]]:
    """Rows to columns (a QP of one endpoint to a QP of the other), each at most once,
    maximising the sums of the evidence `levels` in order (each non-negative), then
    the closeness's: one peer per QP, so a QP that fits two is given to the one the
    others leave. Pairs with no evidence stay apart."""
    have = near > 0
    for lv in levels:
        have |= lv > 0
    if not have.any():
        return []
    # Lexicographic by one float: each level scaled above the most the next can sum
    # to over one assignment, the closeness as a fraction below one step of the last
    # (exact while the levels' product stays far below 2**53: a few dozen flows).
    n = min(near.shape)
    score = np.zeros(near.shape, dtype=np.float64)
    for lv in levels:
        score = score * (float(lv.max()) * n + 1) + lv
    top = float(max(int(near.max()), 1)) * (n + 1)
    rows, cols = linear_sum_assignment(score + near / top, maximize=True)
    return [(int(a), int(b)) for a, b in zip(rows, cols, strict=True) if have[a, b]]


def pair_streams(cols: dict[str, np.ndarray], cls: np.ndarray | None = None) -> Streams:
    op = cols["infiniband.bth.opcode"]
    cls = opclasses(op) if cls is None else cls
    keys = _flow_keys(cols["ibwire.src"], cols["ibwire.dst"], cols["infiniband.bth.destqp"])
    is_req, is_resp = (cls & C_REQUEST) != 0, (cls & C_RESPONSE) != 0
    taps = _taps(cols, keys, is_req | is_resp)
    if taps is not None:
        keys |= taps[0] << _SHIFT_TAP
    req_keys, req_rank, req_ids = flow_numbers(keys, is_req)
    resp_keys, resp_rank, resp_ids = flow_numbers(keys, is_resp)
    cm = cm_pairs(cols)
    partner: dict[int, int] = {}              # request flow -> response flow
    taken: set[int] = set()
    for i, k in enumerate(req_keys.tolist()):
        s, d, qb = _split(k)
        peer = cm.get((d, qb))
        if peer is not None and peer[0] == s:
            want = _tap_bits(k) | (int(d) << _SHIFT_SRC) | (int(s) << _SHIFT_DST) | peer[1]
            j = _find(resp_keys, want)
            if j >= 0 and j not in taken:
                partner[i], _ = j, taken.add(j)
    req_rows, resp_rows = np.flatnonzero(is_req), np.flatnonzero(is_resp)
    # Matching looks at the start of the capture only (bounded work on big files).
    head = _head(req_rows, resp_rows)
    nq, npr = np.searchsorted(req_rows, head), np.searchsorted(resp_rows, head)
    req_of = _RowsOf(req_rows[:nq], req_rank[req_ids[req_rows[:nq]]])
    resp_of = _RowsOf(resp_rows[:npr], resp_rank[resp_ids[resp_rows[:npr]]], PSN_SAMPLE)
    # Free flows by ordered endpoint pair (X, Y): requests X->Y by DestQP (a QP of Y),
    # responses Y->X by DestQP (a QP of X). Only RC and XRC requests are answered:
    # a UD or UC flow (by its first request seen) never pairs with responses.
    reqs: dict[tuple[int, int, int], dict[int, int]] = {}
    resps: dict[tuple[int, int, int], dict[int, int]] = {}
    for i, k in enumerate(req_keys.tolist()):
        first = req_of[i][:1]
        if i not in partner and not (len(first) and cls[first[0]] & C_RELIABLE == 0):
            s, d, q = _split(k)
            reqs.setdefault((s, d, _tap_bits(k)), {})[q] = i
    for j, k in enumerate(resp_keys.tolist()):
        if j not in taken:
            s, d, q = _split(k)
            resps.setdefault((d, s, _tap_bits(k)), {})[q] = j
    ev = Evidence(cols, cls, req_of, resp_of)
    done: set[tuple[int, int, int]] = set()
    for x, y, tap in sorted(reqs):
        if (y, x, tap) in done:
            continue
        done.add((x, y, tap))
        fwd = (reqs[(x, y, tap)], resps.get((x, y, tap), {}))
        rev = (reqs.get((y, x, tap), {}), resps.get((y, x, tap), {}))
        partner.update(_qp_pairs(fwd, rev, ev))
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


def _qp_pairs(fwd: tuple[dict[int, int], dict[int, int]],
              rev: tuple[dict[int, int], dict[int, int]], ev: Evidence) -> dict[int, int]:
    """Request flow -> response flow between endpoints X and Y. An RC QP is
    connected to one remote QP and exchanges messages with it alone, so the two
    halves of a QP pair, X's requests with Y's responses and Y's requests with X's
    responses, are decided together, on the sum of their evidence. `fwd`: the X->Y
    request flows by DestQP (a QP of Y), the Y->X response flows by DestQP (a QP of
    X); `rev`: the Y->X request flows (by X's QP) and the X->Y response flows (by
    Y's QP)."""
    (f_req, f_resp), (r_req, r_resp) = fwd, rev
    out: dict[int, int] = {}
    taken: set[int] = set()
    used_x: set[int] = set()
    used_y: set[int] = set()

    def join(qx: int, qy: int) -> None:
        for i, j in ((f_req.get(qy), f_resp.get(qx)), (r_req.get(qx), r_resp.get(qy))):
            if i is not None and j is not None and i not in out and j not in taken:
                out[i] = j
                taken.add(j)
        used_x.add(qx)
        used_y.add(qy)

    # A direction with one request flow and one response flow pairs them directly.
    direct = []
    if len(f_req) == 1 and len(f_resp) == 1:
        direct.append((next(iter(f_resp)), next(iter(f_req))))
    if len(r_req) == 1 and len(r_resp) == 1:
        direct.append((next(iter(r_req)), next(iter(r_resp))))
    for qx, qy in direct:
        join(qx, qy)
    ys = sorted((set(f_req) | set(r_resp)) - used_y)
    xs = sorted((set(f_resp) | set(r_req)) - used_x)
    levels = np.zeros((3, len(ys), len(xs)), dtype=np.int64)
    near = np.zeros((len(ys), len(xs)), dtype=np.int64)
    for a, qy in enumerate(ys):
        for b, qx in enumerate(xs):
            for i, j in ((f_req.get(qy), f_resp.get(qx)), (r_req.get(qx), r_resp.get(qy))):
                if i is not None and j is not None:
                    lv, n = ev.half(i, j)
                    levels[:, a, b] += lv
                    near[a, b] += n
    for a, b in _assign(list(levels), near):
        join(xs[b], ys[a])
    return out


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
