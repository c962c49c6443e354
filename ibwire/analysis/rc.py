"""RC sequencing analysis: columns in, per-packet findings and per-connection tables out.

`analyze(cols)` pairs the streams (`rc_pair`), unwraps PSNs and runs the kernel
(`ibwire.engines.rc_kernel`), then derives what needs whole-capture views with
numpy: which earlier frame a retransmission repeats, ACK round-trip times
(Karn's rule: only PSNs sent once), the episode list and per-connection totals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc_pair import Streams, opclasses, pair_streams
from ibwire.analysis.rc_post import overtaken_starts, unseen_causes
from ibwire.analysis.rc_post_doubt import continued_doubts
from ibwire.engines import rc_kernel as K
from ibwire.engines import rc_prepass as prepass
from ibwire.engines.rc_split import default_passes, run_passes

DEFAULT_PMTU = 4096
PERCENTILES = (50, 90, 99)
CM_START_WINDOW = 1 << 16     # a CM starting PSN further back is not this stream's
LAST_KERNEL_SECONDS = 0.0     # duration of the last kernel pass (tools/bench.py)


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

    @cached_property
    def episodes(self) -> list[dict[str, Any]]:
        """The resend episodes (built on first use)."""
        return _episodes(self)


def _pmtu(max_pay: np.ndarray) -> np.ndarray:
    """Path MTU per half-connection: the largest payload of a packet that is not the
    last of its message (First/Middle), rounded up to a power of two in 256..4096."""
    out = np.full(len(max_pay), DEFAULT_PMTU, dtype=np.int64)
    for h in np.flatnonzero(max_pay > 0):
        out[h] = max(256, 1 << int(max_pay[h] - 1).bit_length())
    return out


def ring_bits(n_hc: int) -> int:
    """PSN ring per stream: 2**16 PSNs, fewer when there are many streams (memory)."""
    return max(10, min(16, (1 << 26).bit_length() - 1 - max(n_hc, 1).bit_length()))


def _episodes(res: RcResult) -> list[dict[str, Any]]:
    rows = np.flatnonzero(res.episode >= 0)
    out: list[dict[str, Any]] = []
    if not len(rows):
        return out
    cols = res.cols
    ts, fn, raw = cols["frame.time_ns"], cols["frame.number"], cols["infiniband.bth.psn"]
    ep = res.episode[rows]
    order = np.argsort(ep, kind="stable")
    rows, ep = rows[order], ep[order]
    bounds = np.flatnonzero(np.diff(ep)) + 1
    for grp in np.split(rows, bounds):
        # The restart's first packet; a resend of it may have reached the tap first
        # (`rc_post.overtaken_starts`).
        lead = grp[(res.flags[grp] & R.F_EPISODE) != 0]
        start, last = int(lead[0] if len(lead) else grp[0]), int(grp[-1])
        h = int(res.streams.hc[start])
        t = int(res.trig[start])
        hi = grp[np.argmax(res.upsn[grp])]
        out.append({
            "episode": int(res.episode[start]), "connection": res.streams.connection[h],
            "half_connection": h, "reason": R.REASON_NAMES[int(res.reason[start])],
            "trigger_frame": int(fn[t]) if t >= 0 else None,
            "first_frame": int(fn[grp[0]]), "last_frame": int(fn[last]),
            "first_psn": int(raw[start]), "last_psn": int(raw[hi]), "packets": len(grp),
            "start_ns": int(ts[t] if t >= 0 else ts[grp[0]]),
            "duration_ns": int(ts[last] - (ts[t] if t >= 0 else ts[grp[0]])),
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


def _start_psns(st: Streams, first_req: np.ndarray, psn: np.ndarray, upsn: np.ndarray
                ) -> np.ndarray:
    """Unwrapped first PSN per half-connection from CM: the candidate at or shortly
    before the first request seen (PSNs before that were lost before the tap)."""
    out = np.full(len(st), -1, dtype=np.int64)
    for h, cands in enumerate(st.start_psn):
        r = int(first_req[h])
        if r < 0 or not cands:
            continue
        back = [R.psn_diff(int(psn[r]), p) for p in cands]
        ok = [b for b in back if 0 <= b < CM_START_WINDOW]
        if ok:
            out[h] = upsn[r] - min(ok)
    return out


def analyze(cols: dict[str, np.ndarray], *, use_numba: bool = True,
            passes: int | None = None) -> RcResult:
    """Run the RC engine over a capture's columns (`rc_input.rc_columns`). `passes`:
    kernel passes over disjoint groups of connections, run on parallel threads
    (`rc_split`; default one per core on large captures); the result is the same."""
    cls = opclasses(cols["infiniband.bth.opcode"])
    streams = pair_streams(cols, cls)
    hc = streams.hc
    n, n_hc = len(hc), len(streams)
    P = prepass if use_numba else None
    unwrap = prepass.unwrap if P else prepass.unwrap_py
    occur = prepass.occurrences if P else prepass.occurrences_py
    run = K.rc_pass if P else K.rc_pass_py
    psn, ts = cols["infiniband.bth.psn"], cols["frame.time_ns"]
    paylen = cols["ibwire.payload_len"]
    upsn = np.empty(n, dtype=np.int64)
    first_req = np.full(n_hc, -1, dtype=np.int64)
    max_pay = np.zeros(n_hc, dtype=np.int64)
    unwrap(hc, cls, psn, paylen, n_hc, upsn, first_req, max_pay)
    first, prev, rtt = (np.empty(n, dtype=np.int64) for _ in range(3))
    occur(hc, cls, upsn, ts, n_hc, ring_bits(n_hc), first, prev, rtt)
    start_u = _start_psns(streams, first_req, psn, upsn)
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
    args = (hc, cls, upsn, cols["infiniband.aeth.syndrome"], cols["infiniband.aeth.msn"],
            cols["infiniband.reth.dmalen"], paylen, cols["infiniband.invariant.crc.status"],
            first, prev, _pmtu(max_pay), start_u, ts, rtt, res.flags, res.ref, res.episode,
            res.trig, res.acked, res.credits, res.msg, res.gap, res.reason, res.counts)
    run_passes(run, args, hc, n_hc, res.episode,
               default_passes(n) if passes is None else passes, threads=use_numba)
    LAST_KERNEL_SECONDS = time.perf_counter() - t0
    np.putmask(rtt, res.acked <= 0, -1)     # (in place: the kernel is done with it)
    res.rtt_ns = rtt
    unseen_causes(res, prev, ts, cls)
    overtaken_starts(res, first, ts, cls, paylen, use_numba=use_numba)
    continued_doubts(res, first, ts, cls, use_numba=use_numba)
    return res
