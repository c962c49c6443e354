"""RC engine helpers: the pending retry causes (`trig_u`, `trig_kind`, `cz`; see
`rc_shared`) that a restart leaves pending or settles.

- `_rnr_still_due`: an RNR NAK whose retry is still to come after a restart that
  answered another cause (the requester had that cause first); `_implied_still_due`
  the same for an implied NAK's later hole.
- `_settled_before`: a NAK's restart taken with doubt, shown one by its run going on
  in order (`rc_episodes.run_step`), settles the causes for earlier PSNs that it
  shows the requester had nothing left to resend for.
- `_before_reaction`: a request sent before the requester had a NAK, by the fastest
  reaction to one it has shown: no answer to that NAK (past the NAK's PSN:
  `rc_run_shape._before_restart_reached`).
- `_note_reaction`: the requester's fastest reactions, kept as restarts show them;
  `_least_reaction`, the fastest of them; `_resend_rnr_heard`: a run going on after
  the requester would have had an RNR NAK (so it never did).
- `_first_showing`, `_no_copy_since`: a copy at the READ/atomic hole an implied NAK
  showed first, a later hole shown since, is its restart (`rc_copies.classify`).
- `_rnr_retry_doubt`: an RNR retry after a copy of the refused PSN that no response
  answered at the tap, or amid a run begun below it after the wait (in doubt).
- `_keep_nak`, `_last_kept`, `_next_nak`, `_kept_next`, `_kept_at`: sequence NAKs past the
  pending one, kept in the order they came (`nak_nxt`), each a cause in turn once a
  restart answers the one before (or the requester is shown to have ignored it).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_ACK, C_READ_RESP, C_REQUEST, F_AMBIGUOUS, F_EPISODE, F_IMPLIED, MAX_REACTION_NS,
    REASON_IMPLIED, REASON_NAK_SEQ,
)
from ibwire.engines.rc_run_shape import _too_soon
from ibwire.engines.rc_shared import (
    CZ_IMPLIED, CZ_NAK, CZ_RNR, T_IMPLIED, T_NAK, T_RNR, _note_cause, _port_pace, _rnr_over,
)

COPY_SCAN = 64      # rows `_no_copy_since` looks back


@njit(inline="always")
def _first_showing(cz, trig_u, trig_row, trig_kind, flags, ts, h, i, u):
    """PSN u is the READ/atomic hole an implied NAK showed first (`trig_u`, shown by
    the response at `trig_row`, within a reaction before row i), and a later response
    has since shown a later READ's hole, which the implied-NAK cause names now. The
    requester goes back to the first request still missing responses (IBA 9.7.4.1.5):
    a restart at u answers that first showing."""
    t = trig_row[h]
    return trig_u[h] == u and trig_kind[h] & T_IMPLIED != 0 and cz[h, CZ_IMPLIED, 0] > u and \
        cz[h, CZ_IMPLIED, 1] > t >= 0 and flags[t] & F_IMPLIED != 0 and \
        ts[i] - ts[t] < MAX_REACTION_NS


@njit(inline="always")
def _no_copy_since(hc, cls, upsn, first_tx, h, lo, i, u):
    """Between rows lo and i, no request of half-connection h was a copy of a PSN seen
    before, and no response at PSN u passed (looked for over at most COPY_SCAN rows;
    further back: False)."""
    if i - lo > COPY_SCAN:
        return False
    for r in range(lo + 1, i):
        if hc[r] == h and ((cls[r] & C_REQUEST and first_tx[r] < r) or
                           (cls[r] & (C_READ_RESP | C_ATOMIC_ACK) and upsn[r] == u)):
            return False
    return True


# Sequence NAKs kept back past the pending one (`nak_nxt` columns 0-1, then pairs from
# KEPT_AT on): a responder NAKs each new hole once, so a handful covers any burst.
KEPT_AT = 4
NAK_KEPT = 4


@njit(inline="always")
def _last_kept(nak_nxt, h):
    """The PSN of the latest sequence NAK kept back (-1: none)."""
    last = nak_nxt[h, 0]
    for k in range(NAK_KEPT - 1):
        if nak_nxt[h, KEPT_AT + 2 * k] >= 0:
            last = nak_nxt[h, KEPT_AT + 2 * k]
    return last


@njit(inline="always")
def _keep_nak(nak_nxt, h, u, row):
    """Keep the sequence NAK at `row` (PSN u) back, after those kept before it. (With
    all places taken it replaces the latest: its implicit ACK answers that one.)"""
    if nak_nxt[h, 0] < 0:
        nak_nxt[h, 0] = u
        nak_nxt[h, 1] = row
        return
    k = 0
    while k < NAK_KEPT - 2 and nak_nxt[h, KEPT_AT + 2 * k] >= 0:
        k += 1
    nak_nxt[h, KEPT_AT + 2 * k] = u
    nak_nxt[h, KEPT_AT + 2 * k + 1] = row


@njit(inline="always")
def _pop_kept(nak_nxt, h):
    """The next kept NAK moves up to the first place."""
    nak_nxt[h, 0] = nak_nxt[h, KEPT_AT]
    nak_nxt[h, 1] = nak_nxt[h, KEPT_AT + 1]
    for k in range(NAK_KEPT - 2):
        nak_nxt[h, KEPT_AT + 2 * k] = nak_nxt[h, KEPT_AT + 2 * k + 2]
        nak_nxt[h, KEPT_AT + 2 * k + 1] = nak_nxt[h, KEPT_AT + 2 * k + 3]
    nak_nxt[h, KEPT_AT + 2 * (NAK_KEPT - 2)] = -1
    nak_nxt[h, KEPT_AT + 2 * (NAK_KEPT - 2) + 1] = -1


@njit(inline="always")
def _kept_next(cz, trig_u, trig_row, trig_kind, nak_nxt, h):
    """The pending sequence NAK is spent with no restart (the requester ignored it):
    the next one kept back behind it is pending now, awaiting the run as one a
    restart made pending (`_next_nak`)."""
    if nak_nxt[h, 0] >= 0 and not trig_kind[h] & T_NAK:
        _note_cause(cz, trig_kind, h, CZ_NAK, T_NAK, nak_nxt[h, 0], nak_nxt[h, 1])
        trig_kind[h] |= T_NAK
        if trig_u[h] < 0 or nak_nxt[h, 0] < trig_u[h]:
            trig_u[h] = nak_nxt[h, 0]
            trig_row[h] = nak_nxt[h, 1]
        nak_nxt[h, 2] = nak_nxt[h, 0]
        _pop_kept(nak_nxt, h)


@njit(inline="always")
def _next_nak(cz, trig_u, trig_row, trig_kind, nak_nxt, h, u):
    """A restart at PSN u answered the pending causes: of the sequence NAKs kept back
    (`_keep_nak`), those at or before u it answered too; the first past u is pending
    now (`_kept_next`: its implicit ACK ends the retry just begun, and the requester
    restarts for it); the later ones stay kept, in order."""
    while 0 <= nak_nxt[h, 0] <= u:
        _pop_kept(nak_nxt, h)
    _kept_next(cz, trig_u, trig_row, trig_kind, nak_nxt, h)


@njit(inline="always")
def _rnr_still_due(cz, trig_u, trig_row, trig_kind, h):
    """The pending RNR NAK's retry is still to come after a restart that answered
    another cause: it stays a pending cause at the refused PSN (beside any other the
    restart left pending)."""
    trig_kind[h] |= T_RNR
    if trig_u[h] < 0 or cz[h, CZ_RNR, 0] < trig_u[h]:
        trig_u[h] = cz[h, CZ_RNR, 0]
    trig_row[h] = cz[h, CZ_RNR, 1]


@njit(inline="always")
def _implied_still_due(cz, trig_u, trig_row, trig_kind, rd_gap, h):
    """The pending implied NAK's hole is still to be answered after a restart that
    answered an earlier one (`rc_unseen._later_hole`): it stays a pending cause, and
    showing it again is no news."""
    trig_kind[h] |= T_IMPLIED
    rd_gap[h] = cz[h, CZ_IMPLIED, 0]
    if trig_u[h] < 0 or cz[h, CZ_IMPLIED, 0] < trig_u[h]:
        trig_u[h] = cz[h, CZ_IMPLIED, 0]
        trig_row[h] = cz[h, CZ_IMPLIED, 1]


@njit(inline="always")
def _settled_before(hc, cls, upsn, ts, trig, reason, cz, trig_u, trig_row, trig_kind, min_gap,
                    run_gap, h, s):
    """Row s, a restart at exactly the PSN p of the sequence NAK it answers (row t),
    taken with doubt and now shown one. A cause seen before t naming an earlier PSN q
    would have sent the requester back to q (go-back-N restarts at the oldest request
    not complete, IBA 9.7.4.1.5): when s came too soon after t for it to have resent
    q..p-1 first, it had nothing there left to resend, and that cause is settled. (Were
    those resends sent before the NAK came, every one was lost before the tap: the
    engine takes the reading with fewer losses. Not an RNR NAK: its retry waits out
    its timer, `rc_requests.rnr_wait_over`.)"""
    t = trig[s]
    p = upsn[s]
    if reason[s] != REASON_NAK_SEQ or t < 0 or upsn[t] != p:
        return
    cleared = False
    for j in (CZ_NAK, CZ_IMPLIED):
        q = cz[h, j, 0]
        if trig_kind[h] & (1 << j) and cz[h, j, 1] <= t and (q == p or (
                q < p and _too_soon(hc, cls, upsn, ts, min_gap, run_gap, h, q, p, t, s))):
            trig_kind[h] &= ~(1 << j)
            cleared = True
    if cleared:
        _earliest_cause(cz, trig_u, trig_row, trig_kind, h)


@njit(inline="always")
def _earliest_cause(cz, trig_u, trig_row, trig_kind, h):
    """After a cause was settled: the pending one is the earliest left, if any."""
    trig_u[h] = -1
    trig_row[h] = -1
    for j in (CZ_NAK, CZ_RNR, CZ_IMPLIED):
        if trig_kind[h] & (1 << j) and (trig_u[h] < 0 or cz[h, j, 0] < trig_u[h]):
            trig_u[h] = cz[h, j, 0]
            trig_row[h] = cz[h, j, 1]


@njit(inline="always")
def _before_reaction(react, ts, h, r, nak_row):
    """Row r passed the tap sooner after the NAK at `nak_row` than the requester has
    yet reacted to one (`react`: the least time from a sequence NAK to a restart at its
    PSN taken with no doubt): it was sent before the requester had that NAK."""
    return react[h, 1] > 0 and ts[r] - ts[nak_row] < react[h, 0]


@njit(inline="always")
def _nak_unanswered(hc, cls, flags, trig, cz, h, i):
    """No request between the pending sequence NAK and row i was taken for its restart
    (a run's packet at its PSN, in order, is none: a NAK that came after the run had
    sent it draws a restart of its own)."""
    t = cz[h, CZ_NAK, 1]
    if t < 0 or i - t > COPY_SCAN:
        return False
    for r in range(t + 1, i):
        if hc[r] == h and cls[r] & C_REQUEST and flags[r] & F_EPISODE and trig[r] == t:
            return False
    return True


@njit(inline="always")
def _before_implied_reaction(react, ts, h, r, row):
    """Row r passed the tap sooner after the response at `row` that showed a hole
    than the requester has yet reacted to one (columns 2-3 of `react`), or, none seen
    yet, to a sequence NAK (it acts on either as it arrives)."""
    if react[h, 3] > 0:
        return ts[r] - ts[row] < react[h, 2]
    return _before_reaction(react, ts, h, r, row)


@njit(inline="always")
def _note_reaction(react, ts, flags, reason, trig, upsn, h, i, u):
    """Row i, a restart taken with no doubt for the cause at row trig[i]: the time
    between is one of the requester's reactions. The least, and how many: columns 0-1
    for a sequence NAK naming u, 2-3 for a response or ACK showing an implied NAK's
    hole (the requester acts on either as it arrives)."""
    t = trig[i]
    if flags[i] & F_AMBIGUOUS or t < 0:
        return
    j = 0 if reason[i] == REASON_NAK_SEQ and upsn[t] == u else \
        2 if reason[i] == REASON_IMPLIED else -1
    if j >= 0:
        if react[h, j + 1] == 0 or ts[i] - ts[t] < react[h, j]:
            react[h, j] = ts[i] - ts[t]
        react[h, j + 1] += 1


@njit(inline="always")
def _kept_at(cz, trig_u, trig_row, trig_kind, nak_nxt, react, ts, min_gap, run_gap, h, i, u, k):
    """A restart (row i; `k`: the causes pending) at exactly the PSN of a NAK kept back
    behind the pending one (acted on, before u): the requester acted on that NAK (whose
    implicit ACK answers the pending one and every NAK kept before it), so it is the
    pending NAK now. Not one sooner after
    that NAK than the requester's fastest reaction to one, less a packet time (a
    reaction seen may include the packet it finished first): it was sent before the
    requester had that NAK, the pending one's run with its first packets missing. Nor
    when that run asks no more packets lost before the tap than this asks NAKs lost
    after it (the pending one and those kept before this one): of two stories that
    fit, the one with fewer losses (wider draw 121 of seed 331: NAKs for PSNs 606 and
    607, a restart at 607; extended draw 75 of master 2: NAKs for 31, 60 and 61, a
    restart at 61 15 us after the first)."""
    old = cz[h, CZ_NAK, 0]
    if not k & T_NAK or not 0 <= old < u or cz[h, CZ_NAK, 2] != 0:
        return
    n = -1
    if nak_nxt[h, 0] == u:
        n = 0
    for j in range(NAK_KEPT - 1):
        if nak_nxt[h, KEPT_AT + 2 * j] == u:
            n = j + 1
    if n < 0 or u - old <= n + 1:
        return
    row = nak_nxt[h, 1] if n == 0 else nak_nxt[h, KEPT_AT + 2 * (n - 1) + 1]
    if react[h, 1] == 0 or ts[i] - ts[row] < react[h, 0] - max(_port_pace(min_gap, run_gap, h), 0):
        return
    for _ in range(n):
        _pop_kept(nak_nxt, h)
    _note_cause(cz, trig_kind, h, CZ_NAK, T_NAK, u, nak_nxt[h, 1])
    if trig_u[h] == old:
        trig_u[h] = u
        trig_row[h] = nak_nxt[h, 1]
    _pop_kept(nak_nxt, h)


@njit(inline="always")
def _rnr_retry_doubt(cz, trig_kind, upsn, syn, ts, prev_tx, rnr_row, ep_row, h, i, u):
    """An RNR retry at u (row i) in doubt: one fault either way.

    - Its PSN's previous copy passed the tap after the latest RNR NAK refusing it (a
      run through it, sent before the requester had that NAK), with no sequence NAK
      naming u since: that copy drew a response the tap did not see (an RNR NAK
      restarting the wait, whose retry this is, the capture missed), or it was lost
      after the tap (and this is the seen RNR NAK's retry).
    - The run it belongs to began below u once the timer had run out: an RNR retry
      begins at the refused PSN (IBA 9.7.5.2.8), so this run answers another cause
      and the retry was lost before the tap; or the RNR NAK was lost after the tap,
      and the first resend of u after its timer is, at the tap, its retry."""
    p = prev_tx[i]
    r = rnr_row[h]
    q = ep_row[h]
    below = 0 <= r < q < i and upsn[q] < u and _rnr_over(syn, ts, r, q)
    return below or p > r >= 0 and not (trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == u and
                                         cz[h, CZ_NAK, 1] > p)


@njit(inline="always")
def _least_reaction(react, h):
    """The requester's least reaction yet: from a sequence NAK, or from a response
    showing an implied NAK's hole, to the restart it drew, taken with no doubt (-1:
    none seen)."""
    least = -1
    for j in (0, 2):
        if react[h, j + 1] > 0 and (least < 0 or react[h, j] < least):
            least = react[h, j]
    return least


@njit(inline="always")
def _resend_rnr_heard(upsn, ts, flags, react, rnr_u, rnr_row, ep_row, delays, h, u, run, i,
                      prev_req):
    """Whether this resend shows the pending RNR NAK never reached the requester: the
    run it continues, under way before the requester could have had that NAK (begun
    sooner after it than the requester's least reaction), goes on after it would have
    (the request before this one no sooner than that), at the refused PSN itself, or
    past it once the run, begun after that NAK, resent the refused PSN: a requester
    that has an RNR NAK stops (IBA 9.7.5.2.8). Only a run taken with no doubt, going
    on in order (right after the PSN before), on a stream whose network has shown no
    copy delayed: late copies in a row look like a run, and come whenever the
    network lets them."""
    least = _least_reaction(react, h)
    r = rnr_row[h]
    q = ep_row[h]
    if not run or least < 0 or r < 0 or q < 0 or delays[h] or flags[q] & F_AMBIGUOUS or \
            ts[q] - ts[r] >= least or prev_req < 0 or upsn[prev_req] != u - 1:
        return False
    past = q > r and upsn[q] <= rnr_u[h] < u
    return (u == rnr_u[h] or past) and ts[prev_req] - ts[r] >= least
