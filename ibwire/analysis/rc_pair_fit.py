"""How well a response flow fits a request flow: the evidence `rc_pair` weighs when
several connections share two endpoints (docs/rc-analysis.md, "Streams and pairing")."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from ibwire.analysis.rc_rules import C_ACK, C_ATOMIC_ACK, C_FIRST, C_LAST, C_READ_REQ, C_READ_RESP

PSN_SAMPLE = 4096              # responses of a flow that matching looks at
ACK_WINDOW = 1 << 12
_MIN_PMTU = 256
_ROW_BITS = 38                 # rows below 2**38 (with a 24-bit PSN above them)
_STEADY_MAX = 16
_PMTUS = (256, 512, 1024, 2048, 4096)
Mask: TypeAlias = "np.ndarray | _LazyMask"   # a boolean per row, indexed by rows


def message_psns(psn: np.ndarray, last: Mask, reads: Mask, dmalen: np.ndarray,
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


def msn_fit(psn: np.ndarray, msn: np.ndarray, last: Mask, reads: Mask,
            dmalen: np.ndarray, resp_rows: np.ndarray, req_rows: np.ndarray) -> int:
    """How many responses carry an MSN that fits these requests: the responder's MSN
    counts the messages completed (IBA 9.7.5.1.1), so MSN minus the number of distinct
    message-ending request PSNs up to the response's PSN is one constant."""
    rows = resp_rows[msn[resp_rows] >= 0]
    if not len(rows) or not len(req_rows) or not last[req_rows].any():
        return 0
    base = int(psn[req_rows[0]])
    rel_ends = message_psns(psn, last, reads, dmalen, req_rows, base)
    rel = (psn[rows].astype(np.int64) - base) % (1 << 24)
    # Only responses inside these requests' PSN span can be theirs: another
    # connection's responses elsewhere in PSN space would all see one count of
    # message ends, and a run of equal MSNs would fit any constant.
    span = int(((psn[req_rows].astype(np.int64) - base) % (1 << 24)).max()) + ACK_WINDOW
    inside = rel <= span
    rows, rel = rows[inside], rel[inside]
    if not len(rows):
        return 0
    k = np.searchsorted(rel_ends, rel, "right")
    _, counts = np.unique(msn[rows].astype(np.int64) - k, return_counts=True)
    return int(counts.max())



def read_spans(reads: np.ndarray, dmalen: np.ndarray) -> np.ndarray:
    """PSNs each of these rows takes: a READ request as many as its responses at the
    smallest PMTU (256), any other row one (IBA 9.7.4.1.5)."""
    spans = np.ones(len(reads), dtype=np.int64)
    read = reads & (dmalen > 0)
    spans[read] = (dmalen[read].astype(np.int64) + _MIN_PMTU - 1) // _MIN_PMTU
    return spans


def before(rows: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """The rows up to the last sampled response: what those responses can answer."""
    return rows[:np.searchsorted(rows, sample[-1])] if len(sample) else rows[:0]


def same_sport(sport: np.ndarray | None, req_rows: np.ndarray, resp_rows: np.ndarray) -> bool:
    """Both flows carry one RoCEv2 UDP source port: Linux derives it from the flow
    label, and with none set from `rdma_calc_flow_label(lqpn, rqpn)`, which is the
    same for both ends of a QP pair. (Other stacks hash one QPN: then no flows match.)"""
    if sport is None or not len(req_rows) or not len(resp_rows):
        return False
    p = int(sport[req_rows[0]])
    return p > 0 and p == int(sport[resp_rows[0]])



def answered(psn: np.ndarray, resp_rows: np.ndarray, req_rows: np.ndarray,
             reads: Mask, dmalen: np.ndarray) -> tuple[int, int]:
    """How many of these responses could answer these requests: a response's PSN is at
    or a little before (within ACK_WINDOW) the last PSN the last request sent before
    it takes (`read_spans`: a READ's PSNs at the smallest PMTU). Streams that start
    at the same PSN differ in when they send what. With it, how closely they track:
    the count times ACK_WINDOW less the distances (0 <= closeness < count x window)."""
    if not len(req_rows) or not len(resp_rows):
        return 0, 0
    last = np.searchsorted(req_rows, resp_rows) - 1
    ok = last >= 0
    prev = req_rows[last[ok]]
    spans = read_spans(reads[prev], dmalen[prev])
    d = (psn[resp_rows[ok]].astype(np.int64) - psn[prev] - spans + 1 + (1 << 23)) \
        % (1 << 24) - (1 << 23)
    ok = (d <= 0) & (d > -ACK_WINDOW)
    return int(ok.sum()), int(ok.sum()) * ACK_WINDOW - int(-d[ok].sum())


class _LazyMask:
    """`(cls & bit) != 0`, computed for the rows asked only."""

    def __init__(self, cls: np.ndarray, bit: int) -> None:
        self.cls, self.bit = cls, bit

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        return (self.cls[rows] & self.bit) != 0


class Evidence:
    """What ties one request flow to one response flow (rows from the start of the
    capture: `req_of[i]`, `resp_of[j]`), as levels weighed in order
    (docs/rc-analysis.md, "Streams and pairing")."""

    def __init__(self, cols: dict[str, np.ndarray], cls: np.ndarray, req_of: dict,
                 resp_of: dict) -> None:
        self.psn, self.msn = cols["infiniband.bth.psn"], cols["infiniband.aeth.msn"]
        self.cls, self.sport = cls, cols.get("udp.srcport")
        # Masks for the rows asked only: the columns can hold tens of millions.
        self.last = _LazyMask(cls, C_LAST)
        self.reads = _LazyMask(cls, C_READ_REQ)
        self.time = cols.get("frame.time_ns")
        dmalen = cols.get("infiniband.reth.dmalen")
        self.dmalen = np.full(len(cls), -1, dtype=np.int64) if dmalen is None else dmalen
        self.req_of, self.resp_of = req_of, resp_of
        self._keys: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def half(self, i: int, j: int) -> tuple[tuple[int, int, int], int]:
        """((one UDP source port, responses that fit, steady delay), PSN closeness)
        of request flow i with response flow j. The responses that fit are counted
        twice over, by MSN and by PSN tracking: each is the protocol's own count,
        and either alone is noise between connections sent alike (a request the
        tap missed shifts every later MSN; lockstep flows track each other)."""
        rrows = self.resp_of[j]
        rq = before(self.req_of[i], rrows)
        count, near = answered(self.psn, rrows, rq, self.reads, self.dmalen)
        fit = msn_fit(self.psn, self.msn, self.last, self.reads, self.dmalen, rrows, rq)
        port = int(same_sport(self.sport, self.req_of[i], rrows))
        return (port, fit + count, self.steady(i, j)), near

    def steady(self, i: int, j: int) -> int:
        """How steady the delay from a request to the response that carries its PSN
        is. A responder answers one round trip from the tap plus its turnaround after
        the request passed the tap, about the same each time while nothing is queued
        before the answer; another connection's requests, sent alike, drift against
        it. 0 unless at least half the responses carry a PSN the flow sent before
        them and the delays' median absolute deviation is below an eighth of their
        median; else how many times it halves below that eighth (up to
        _STEADY_MAX; 0 ns: all).
        Only responses that carry a request's PSN count (`answers`: ACKs, atomic
        ACKs, a READ's first response)."""
        rrows = self.resp_of[j]
        c = self.cls[rrows]
        rrows = rrows[((c & (C_ACK | C_ATOMIC_ACK)) != 0)
                      | (((c & C_READ_RESP) != 0) & ((c & C_FIRST) != 0))]
        if self.time is None or len(rrows) < 2:
            return 0
        keys, rows = self._sorted(i)
        # The last copy of the response's PSN the flow sent before the response.
        want = (self.psn[rrows].astype(np.int64) << _ROW_BITS) | rrows
        k = np.searchsorted(keys, want) - 1
        ok = k >= 0
        ok[ok] = (keys[k[ok]] >> _ROW_BITS) == (want[ok] >> _ROW_BITS)
        if ok.sum() < 2 or 2 * ok.sum() < len(rrows):
            return 0
        delay = self.time[rrows[ok]] - self.time[rows[k[ok]]]
        med = float(np.median(delay))
        mad = float(np.median(np.abs(delay - med)))
        if mad == 0:
            return _STEADY_MAX if med > 0 else 0
        ratio = med / (8 * mad)
        return min(int(np.floor(np.log2(ratio))) + 1, _STEADY_MAX) if ratio > 1 else 0

    def _sorted(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Request flow i's rows sorted by (PSN, row), with their keys (cached)."""
        got = self._keys.get(i)
        if got is None:
            rows = self.req_of[i]
            keys = (self.psn[rows].astype(np.int64) << _ROW_BITS) | rows
            order = np.argsort(keys, kind="stable")
            got = self._keys[i] = (keys[order], rows[order])
        return got
