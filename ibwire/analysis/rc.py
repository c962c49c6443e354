"""RC sequencing analysis: columns in, per-packet findings and per-connection tables out.

`analyze(cols)` pairs the streams (`rc_pair`), unwraps PSNs and runs the kernel
(`ibwire.engines.rc_kernel`), then derives what needs whole-capture views with
numpy: which earlier frame a retransmission repeats, ACK round-trip times
(Karn's rule: only PSNs sent once), the episode list and per-connection totals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc_pair import Streams, pair_streams
from ibwire.engines import rc_kernel as K

_KEY_SHIFT, _KEY_OFF = 44, 1 << 30
DEFAULT_PMTU = 4096
PERCENTILES = (50, 90, 99)
CM_START_WINDOW = 1 << 16
LAST_KERNEL_SECONDS = 0.0     # duration of the last kernel pass (tools/bench.py)     # a CM starting PSN further back than this is not this stream's


@dataclass
class RcResult:
    cols: dict[str, np.ndarray]
    streams: Streams
    upsn: np.ndarray
    flags: np.ndarray
    ref: np.ndarray            # row index of the first transmission repeated, -1
    episode: np.ndarray        # episode index, -1
    trig: np.ndarray           # episode start: row of its cause; -1 = none seen
    acked: np.ndarray          # ACK: PSNs newly acknowledged
    credits: np.ndarray        # ACK: AETH credit code, -1
    msg: np.ndarray            # message index within the half-connection, -1
    gap: np.ndarray            # PSNs skipped before this request
    reason: np.ndarray         # episode start: REASON_*
    rtt_ns: np.ndarray         # ACK/response: time since the request it acknowledges, -1
    counts: np.ndarray         # [half-connection, COUNT_NAMES]
    episodes: list[dict[str, Any]] = field(default_factory=list)

    def frame(self, row: int) -> int:
        return int(self.cols["frame.number"][row])


def _pmtu(cols: dict[str, np.ndarray], cls: np.ndarray, hc: np.ndarray, n_hc: int) -> np.ndarray:
    """Path MTU per half-connection: the largest payload of a packet that is not the
    last of its message (First/Middle), rounded up to a power of two in 256..4096."""
    pay = cols["ibwire.payload_len"]
    full = (hc >= 0) & ((cls & R.C_LAST) == 0) & ((cls & (R.C_REQUEST | R.C_READ_RESP)) != 0)
    best = np.zeros(n_hc, dtype=np.int64)
    np.maximum.at(best, hc[full], pay[full])
    out = np.full(n_hc, DEFAULT_PMTU, dtype=np.int64)
    for h in np.flatnonzero(best):
        out[h] = max(256, 1 << int(best[h] - 1).bit_length())
    return out


def _occurrences(hc: np.ndarray, upsn: np.ndarray, req: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per request row: the first row with its (half-connection, PSN) and the previous one."""
    n = len(hc)
    first = np.arange(n, dtype=np.int64)
    prev = np.arange(n, dtype=np.int64)
    rows = np.flatnonzero(req)
    if len(rows):
        order = rows[np.lexsort((rows, upsn[rows], hc[rows]))]
        same = (hc[order][1:] == hc[order][:-1]) & (upsn[order][1:] == upsn[order][:-1])
        starts = np.concatenate(([True], ~same))
        group = np.cumsum(starts) - 1
        heads = order[starts]
        first[order] = heads[group]
        prev[order[1:][same]] = order[:-1][same]
    return first, prev


def _keys(hc: np.ndarray, upsn: np.ndarray) -> np.ndarray:
    return (hc.astype(np.int64) << _KEY_SHIFT) | (upsn - K._BASE + _KEY_OFF)


def _rtt_candidates(hc: np.ndarray, upsn: np.ndarray, ts: np.ndarray, req: np.ndarray,
                    resp: np.ndarray) -> np.ndarray:
    """Per response row: its time minus that of the request with its PSN, when that
    PSN was sent exactly once before it (Karn's rule: a resent PSN is ambiguous)."""
    out = np.full(len(hc), -1, dtype=np.int64)
    rows = np.flatnonzero(req)
    keys = _keys(hc[rows], upsn[rows])
    order = np.argsort(keys, kind="stable")
    skeys, srows = keys[order], rows[order]
    acks = np.flatnonzero(resp)
    ak = _keys(hc[acks], upsn[acks])
    lo = np.searchsorted(skeys, ak, "left")
    # Exactly one copy before the response (later copies do not make it ambiguous).
    n_before = np.searchsorted(skeys, ak, "right") - lo
    first = srows[np.minimum(lo, len(srows) - 1)] if len(srows) else lo
    second = srows[np.minimum(lo + 1, len(srows) - 1)] if len(srows) else lo
    ok = (n_before >= 1) & (first < acks) & ((n_before == 1) | (second > acks))
    out[acks[ok]] = ts[acks[ok]] - ts[first[ok]]
    return out


def _episodes(res: RcResult) -> list[dict[str, Any]]:
    rows = np.flatnonzero(res.episode >= 0)
    out: list[dict[str, Any]] = []
    if not len(rows):
        return out
    ts, fn, raw = res.cols["frame.time_ns"], res.cols["frame.number"], res.cols["infiniband.bth.psn"]
    ep = res.episode[rows]
    order = np.argsort(ep, kind="stable")
    rows, ep = rows[order], ep[order]
    bounds = np.flatnonzero(np.diff(ep)) + 1
    for grp in np.split(rows, bounds):
        start, last = int(grp[0]), int(grp[-1])
        h = int(res.streams.hc[start])
        t = int(res.trig[start])
        hi = grp[np.argmax(res.upsn[grp])]
        out.append({
            "episode": int(res.episode[start]), "connection": res.streams.connection[h],
            "half_connection": h, "reason": R.REASON_NAMES[int(res.reason[start])],
            "trigger_frame": int(fn[t]) if t >= 0 else None,
            "first_frame": int(fn[start]), "last_frame": int(fn[last]),
            "first_psn": int(raw[start]), "last_psn": int(raw[hi]), "packets": len(grp),
            "start_ns": int(ts[t] if t >= 0 else ts[start]),
            "duration_ns": int(ts[last] - (ts[t] if t >= 0 else ts[start])),
            "delay_ns": _delay(res, start, t),
        })
    return out


def _delay(res: RcResult, start: int, trig: int) -> int:
    """Time from the previous copy (or the cause) to the first resend: for a timeout
    episode this is the requester's retransmission timeout as seen on the wire."""
    ts = res.cols["frame.time_ns"]
    if trig >= 0:
        return int(ts[start] - ts[trig])
    ref = int(res.ref[start])
    return int(ts[start] - ts[ref]) if ref >= 0 else -1


def _start_psns(st: Streams, req: np.ndarray, psn: np.ndarray, upsn: np.ndarray) -> np.ndarray:
    """Unwrapped first PSN per half-connection from CM: the candidate at or shortly
    before the first request seen (PSNs before that were lost before the tap)."""
    out = np.full(len(st), -1, dtype=np.int64)
    rows = np.flatnonzero(req)
    first = {}
    for r, h in zip(rows[::-1].tolist(), st.hc[rows][::-1].tolist()):
        first[h] = r
    for h, cands in enumerate(st.start_psn):
        r = first.get(h)
        if r is None:
            continue
        back = [R.psn_diff(int(psn[r]), p) for p in cands]
        ok = [b for b in back if 0 <= b < CM_START_WINDOW]
        if ok:
            out[h] = upsn[r] - min(ok)
    return out


def analyze(cols: dict[str, np.ndarray], *, use_numba: bool = True) -> RcResult:
    """Run the RC engine over a capture's columns (`rc_input.rc_columns`)."""
    streams = pair_streams(cols)
    hc = streams.hc
    n, n_hc = len(hc), len(streams)
    op = cols["infiniband.bth.opcode"]
    cls = np.where(op >= 0, R.OPCLASS[np.clip(op, 0, 255)], 0).astype(np.int32)
    unwrap, run = (K.unwrap_psns, K.rc_pass) if use_numba else (K.unwrap_psns_py, K.rc_pass_py)
    upsn = np.empty(n, dtype=np.int64)
    psn = cols["infiniband.bth.psn"].astype(np.int64)
    unwrap(hc, psn, n_hc, upsn)
    req = (hc >= 0) & ((cls & R.C_REQUEST) != 0)
    ts = cols["frame.time_ns"].astype(np.int64)
    rtt = _rtt_candidates(hc, upsn, ts, req, (hc >= 0) & ((cls & R.C_RESPONSE) != 0))
    start_u = _start_psns(streams, req, psn, upsn)
    first, prev = _occurrences(hc, upsn, req)
    res = RcResult(
        cols=cols, streams=streams, upsn=upsn, flags=np.zeros(n, np.int32),
        ref=np.full(n, -1, np.int64), episode=np.full(n, -1, np.int32),
        trig=np.full(n, -1, np.int64), acked=np.zeros(n, np.int64),
        credits=np.full(n, -1, np.int16), msg=np.full(n, -1, np.int32),
        gap=np.zeros(n, np.int64), reason=np.zeros(n, np.int8),
        rtt_ns=np.full(n, -1, np.int64),
        counts=np.zeros((n_hc, len(R.COUNT_NAMES)), np.int64))
    global LAST_KERNEL_SECONDS
    t0 = time.perf_counter()
    run(hc, cls, upsn, cols["infiniband.aeth.syndrome"].astype(np.int64),
        cols["infiniband.reth.dmalen"].astype(np.int64),
        cols["ibwire.payload_len"].astype(np.int64),
        cols["infiniband.invariant.crc.status"].astype(np.int64), first, prev,
        _pmtu(cols, cls, hc, n_hc), start_u, ts, rtt, res.flags, res.ref, res.episode, res.trig,
        res.acked, res.credits, res.msg, res.gap, res.reason, res.counts)
    LAST_KERNEL_SECONDS = time.perf_counter() - t0
    res.rtt_ns = np.where(res.acked > 0, rtt, -1)
    res.episodes = _episodes(res)
    return res
