"""RC engine, whole-capture rules run after the kernel: episodes whose cause the tap
did not see, told apart with what came after them.

An episode that starts sooner after its PSN's previous copy than any local ACK
timeout (4.096 us x 2^n, n >= 1: `MIN_ACK_TIMEOUT_NS`) with no cause seen was no
timeout: it answers a hole the requester was shown. If the requester's next
restart goes back below it, to a READ or atomic whose response the tap saw pass,
the requester never had that response (lost after the tap): the earlier restart
began there too (those resends lost before the tap) and answered the implied NAK of
the first response past it (IBA 9.7.4.1.5). (A sequence NAK naming the PSN it
restarted at would have acknowledged everything below.) Otherwise it answers a NAK
the tap did not see: a sequence NAK, or for a READ or atomic an implied NAK, with
no cause frame. Not on a stream whose network has shown copies delayed or
duplicated: there the tap's order need not be the order they were sent in.

A copy taken for the network's that came right before an episode start, of the
very request that follows the start's in PSN order, after the start's cause, may
be the restart's second packet, its first delayed past it (a restart sends its
PSNs in order, back to back): a resend of that episode, flagged (a duplicate the
network made just then looks the same). So is a copy of the PSN right after an
episode start the tap had never seen before. Then the start may be the restart's
first packet, overtaken by its second, with the original lost before the tap; or the
original, delayed past the NAK it drew, with the restart's first packet lost before
the tap. One loss and one delay either way, so the start is flagged too. So is the
first network or late copy of that PSN after it (sooner than the shortest ACK
timeout, before a later restart at or below that PSN): the original, delayed, with
the restart overtaken; or the restart's first packet, delayed, with the start the
original. Two delays either way. (Not such a copy after a start no copy overtook:
the original delayed past its restart is one fault, the start the original and the
copy the restart two.) Found in one pass over the capture (`_overtaken`, Numba,
with its plain-Python twin `_overtaken_py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ibwire.analysis import rc_rules as R
from ibwire.engines.rc_shared import CRC_BAD, SCAN_ROWS, _syn_kind

if TYPE_CHECKING:
    from ibwire.analysis.rc import RcResult


def unseen_causes(res: RcResult, prev: np.ndarray, ts: np.ndarray, cls: np.ndarray) -> None:
    """Give a cause to each episode start too soon for a timeout (see the module)."""
    rows = np.flatnonzero(((res.flags & R.F_EPISODE) != 0) & (res.reason == R.REASON_TIMEOUT)
                          & (res.trig < 0))
    hc = res.streams.hc
    calm = (res.counts[:, R.K_LATE] == 0) & (res.counts[:, R.K_COPIES] == 0)
    rows = rows[calm[hc[rows]]]
    p = prev[rows]
    rows = rows[(p >= 0) & (p < rows) & (ts[rows] - ts[np.maximum(p, 0)] < R.MIN_ACK_TIMEOUT_NS)]
    if not len(rows):
        return
    np.subtract.at(res.counts[:, R.K_TIMEOUTS], hc[rows], 1)
    read = (cls[rows] & (R.C_READ_REQ | R.C_ATOMIC_REQ)) != 0
    res.reason[rows] = np.where(read, R.REASON_IMPLIED, R.REASON_NAK_SEQ)
    # The next episode start of each row's stream: episode starts keyed by
    # (stream, row), searched.
    n = len(hc)
    starts = np.flatnonzero((res.flags & R.F_EPISODE) != 0)
    key = np.sort(hc[starts].astype(np.int64) * n + starts)
    pos = np.searchsorted(key, hc[rows].astype(np.int64) * n + rows, side="right")
    for i, p in zip(rows.tolist(), pos.tolist()):
        if p >= len(key) or key[p] // n != hc[i]:
            continue
        j = int(key[p] % n)
        m = int(res.upsn[j])
        if m < res.upsn[i] and cls[j] & (R.C_READ_REQ | R.C_ATOMIC_REQ):
            t = _implied_nak_at(res, cls, ts, i, m)
            if t >= 0:
                res.reason[i] = R.REASON_IMPLIED
                res.trig[i] = t


def _implied_nak_at(res: RcResult, cls: np.ndarray, ts: np.ndarray, i: int, m: int) -> int:
    """The row of the first response past PSN m after the last response at m that
    the tap saw before row i (within a requester's reaction of i): the implied NAK
    of that response, which is then marked lost after the capture point. -1: none
    (or an earlier restart at or below m comes first)."""
    hc, upsn, flags = res.streams.hc, res.upsn, res.flags
    icrc = res.cols["infiniband.invariant.crc.status"]
    syn = res.cols["infiniband.aeth.syndrome"]
    h = hc[i]
    after = -1
    for r in range(i - 1, max(i - SCAN_ROWS, 0) - 1, -1):
        if hc[r] != h:
            continue
        if cls[r] & R.C_REQUEST:
            if upsn[r] <= m and flags[r] & R.F_EPISODE:
                return -1
            continue
        if not cls[r] & R.C_RESPONSE or icrc[r] == CRC_BAD:
            continue
        if upsn[r] == m and cls[r] & (R.C_READ_RESP | R.C_ATOMIC_ACK):
            if after < 0 or ts[i] - ts[after] >= R.MAX_REACTION_NS:
                return -1
            if not flags[r] & R.F_LOST_AFTER:
                flags[r] |= R.F_LOST_AFTER
                res.counts[h, R.K_LOST_AFTER] += 1
            return after
        acks_m = upsn[r] == m and cls[r] & R.C_ACK and _syn_kind.py_func(syn[r]) == R.SYN_ACK
        if upsn[r] > m or acks_m:
            after = r
    return -1


def overtaken_starts(res: RcResult, first: np.ndarray, ts: np.ndarray, cls: np.ndarray,
                     paylen: np.ndarray, *, use_numba: bool = True) -> None:
    """Take a copy just before an episode start for that restart's second packet,
    overtaking its first, and flag the start and a later copy in doubt (see the
    module)."""
    hc, flags = res.streams.hc, res.flags
    pairs = np.empty((int(np.count_nonzero(flags & R.F_COPY)), 4), dtype=np.int64)
    find = _overtaken if use_numba else _overtaken_py
    m = find(hc, cls, first, res.upsn, ts, flags, res.trig, len(res.streams), pairs)
    q, i, later = pairs[:m, 0], pairs[:m, 1], pairs[:m, 3]
    flags[i[pairs[:m, 2] != 0]] |= R.F_AMBIGUOUS
    flags[later[later >= 0]] |= R.F_AMBIGUOUS
    flags[q] = (flags[q] & ~R.F_COPY) | R.F_RETX | R.F_AMBIGUOUS
    res.episode[q] = res.episode[i]
    res.ref[q] = first[q]
    np.subtract.at(res.counts[:, R.K_COPIES], hc[q], 1)
    np.add.at(res.counts[:, R.K_RETX], hc[q], 1)
    np.add.at(res.counts[:, R.K_RETX_BYTES], hc[q], paylen[q])


def _overtaken_py(hc, cls, first, upsn, ts, flags, trig, n_hc, pairs):
    """Rows (copy, episode start, start in doubt, later copy in doubt or -1) where the
    copy is the start's overtaking resend, in one pass: each stream's latest request,
    each original's next one, and the pair whose start is in doubt. In doubt: a start
    the tap saw first, the copy at its next PSN; then the first network or late copy
    of the start's PSN after it, before a restart resends that PSN again."""
    last_req = np.full(n_hc, -1, dtype=np.int64)
    last_orig = np.full(n_hc, -1, dtype=np.int64)
    nxt_orig = np.full(len(hc), -1, dtype=np.int64)
    doubt = np.full(n_hc, -1, dtype=np.int64)
    m = 0
    for i in range(len(hc)):
        h = hc[i]
        if h < 0 or not cls[i] & R.C_REQUEST:
            continue
        d = doubt[h]
        if d >= 0 and ((flags[i] & R.F_EPISODE and upsn[i] <= upsn[pairs[d, 1]]) or
                       ts[i] - ts[pairs[d, 1]] >= R.MIN_ACK_TIMEOUT_NS):
            doubt[h] = -1
        elif d >= 0 and flags[i] & (R.F_COPY | R.F_LATE) and first[i] == pairs[d, 1]:
            pairs[d, 3] = i
            doubt[h] = -1
        if first[i] == i:
            if last_orig[h] >= 0:
                nxt_orig[last_orig[h]] = i
            last_orig[h] = i
        q = last_req[h]
        last_req[h] = i
        unseen = q >= 0 and first[i] == i and upsn[q] == upsn[i] + 1
        if q >= 0 and flags[i] & R.F_EPISODE and flags[q] & R.F_COPY and upsn[i] < upsn[q] \
                and (nxt_orig[first[i]] == first[q] or unseen) and \
                ts[i] - ts[q] < R.MIN_ACK_TIMEOUT_NS and trig[i] < q and m < len(pairs):
            pairs[m, 0] = q
            pairs[m, 1] = i
            pairs[m, 2] = unseen
            pairs[m, 3] = -1
            if unseen:
                doubt[h] = m
            m += 1
    return m


_overtaken = njit(cache=True)(_overtaken_py)
