"""RC engine rules: what a restart shows the tap did not see.

A requester's restart tells what it did and did not receive. A READ re-requested
from a PSN whose response the tap saw pass lost that response after the tap, and the
next response past it was the implied NAK (`_unseen_implied`); a timeout restart
never got the ACKs of that PSN the tap saw well before it (`_unheard_acks`); a
restart at the PSN a NAK names had every READ response before it (`_drop_answered`),
and so had a timer's restart taken with no doubt (`_timer_answered`); a restart at a
READ leaves the requester waiting for that READ's response before any later ACK
counts (`_pin_restart`); a response at its PSN that came once it was decided was no
loss, and the next hole it shows is still to be answered (`_later_hole`). Numba
functions the episode rules call (`rc_episodes`, `rc_pending_copies`; rare: not
inlined).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ACK, C_ATOMIC_ACK, C_ATOMIC_REQ, C_READ_REQ, C_READ_RESP, C_REQUEST, C_RESPONSE,
    F_AMBIGUOUS, F_EPISODE, F_LOST_AFTER, K_LOST_AFTER, MAX_REACTION_NS, MIN_ACK_TIMEOUT_NS,
    READ_FIFO, REASON_RNR, SYN_ACK, SYN_NAK, SYN_RNR,
)
from ibwire.engines.rc_shared import (
    CRC_BAD, CZ_IMPLIED, SCAN_ROWS, SYN_VALUE_MASK, SYN_VALUE_SHIFT, T_IMPLIED, _syn_kind,
)



@njit
def _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, pin, reason, trig, i, h,
                    u):
    """A READ or atomic request resent at PSN u, no cause seen: if the tap saw the
    response at u pass (lost after it: the requester never got it, or it would not
    restart there) since the last restart at or below u, and then a response past u
    (or an ACK of u), that one showed the requester the hole (an implied NAK, IBA
    9.7.4.1.5). Returns its row, if the restart came within a requester's reaction
    after it, and marks the response at u lost after the capture point; else -1 (a
    timeout). A response that came while an earlier restart's READ at or before u
    awaited its own response (`pin`) showed nothing: a retry covering u was under way
    (IBA 9.7.5.1.3). After a restart at or below u re-requesting a READ or atomic, the
    first response past u (the one at u lost before the tap) is the implied NAK as
    well. With two copies of the response at u (an earlier run re-read it), both were
    lost: the first hole shown after either counts. Past an earlier restart at or
    below u with a cause seen (a NAK or implied NAK), whose run resent u sooner after a
    response the tap saw than the restart came after its cause: that response may
    have reached the requester only once u was resent, and showed the hole then (if
    this restart came within twice that reaction of it)."""
    after = -1
    best = -1
    rnr_past = False
    k = -1          # the latest request at u before i
    passed = False  # past an earlier restart: responses after t_lim only
    t_lim = 0
    rho = 0         # ... and that restart's reaction to its cause
    for r in range(i - 1, max(i - SCAN_ROWS, 0) - 1, -1):
        if hc[r] != h:
            continue
        if cls[r] & C_REQUEST:
            if upsn[r] == u and k < 0:
                k = r
            if upsn[r] <= u and flags[r] & F_EPISODE:
                # An earlier restart at or below u. A READ or atomic there: a response
                # past u since (none at u: lost before the tap) showed the hole. Else
                # it may have answered u.
                if cls[r] & (C_READ_REQ | C_ATOMIC_REQ) and after >= 0 and \
                        ts[i] - ts[after] < MAX_REACTION_NS:
                    return after
                t = trig[r]
                if best >= 0 or passed or t < 0 or k <= r or flags[r] & F_AMBIGUOUS or \
                        reason[r] == REASON_RNR:
                    return best
                # Its run resent u (row k): a response the tap saw before the restart,
                # but less than the restart's own reaction to its cause before k (that
                # bounds the way from the tap to the requester and back), may have
                # reached the requester only after k went out (seed 2916).
                rho = ts[r] - ts[t]
                t_lim = ts[k] - rho
                passed = True
                after = -1
            continue
        if not cls[r] & C_RESPONSE or icrc[r] == CRC_BAD:
            continue
        if upsn[r] == u and cls[r] & (C_READ_RESP | C_ATOMIC_ACK):
            e = pin[h, 1]
            if r == pin[h, 2] and pin[h, 3] == u and not flags[e] & F_AMBIGUOUS and \
                    not rnr_past and not (reason[e] == REASON_RNR and trig[e] >= 0 and
                                          upsn[trig[e]] > u):
                # The answer to an earlier restart's READ at u: lost, the requester's
                # retry from u never ended, and it ignored every hole shown since
                # (unless an RNR NAK past u, since or as that restart's cause, put
                # the retry point past u).
                return -1
            if after >= 0 and ts[i] - ts[after] < MAX_REACTION_NS and (
                    not passed or ts[i] - ts[after] < 2 * rho):
                if not flags[r] & F_LOST_AFTER:
                    flags[r] |= F_LOST_AFTER
                    counts[h, K_LOST_AFTER] += 1
                best = after
            elif passed:
                return -1   # (the hole shown past the restart must bring a prompt one)
            elif best < 0:
                q = _last_copy(hc, cls, upsn, i, h, u)
                if q >= 0 and ts[i] - ts[q] < MIN_ACK_TIMEOUT_NS:
                    # Too soon for a timer after u was last sent (or its READ got the
                    # response before u): the restart answers a hole shown before; this
                    # response came after it was decided.
                    continue
                return -1
            # An earlier copy of the response at u was lost after the tap as well
            # (the requester restarts there): a hole shown after it showed first.
            after = -1
            continue
        # Past u: a response beyond it, or an ACK of u itself (it covers the READ's
        # last PSN, so that response is missing too; a NAK acknowledges only the PSNs
        # before its own).
        past = upsn[r] > u or (upsn[r] == u and cls[r] & C_ACK and _syn_kind(syn[r]) == SYN_ACK)
        if upsn[r] > u and cls[r] & C_ACK and _syn_kind(syn[r]) == SYN_RNR:
            rnr_past = True
        past = past and (not passed or ts[r] > t_lim)
        if past and not (pin[h, 1] < r and (pin[h, 2] < 0 or r < pin[h, 2])
                         and 0 <= pin[h, 3] <= u and not flags[pin[h, 1]] & F_AMBIGUOUS):
            after = r
    return best


@njit
def _timer_answered(hc, cls, upsn, icrc, ts, flags, prev_tx, acked, fifo, f_head, f_len, i, h,
                    u):
    """Row i, a timer's restart at PSN u (no cause seen), taken with no doubt: not
    flagged ambiguous, at or before the first PSN the ACKs seen leave unacknowledged
    (past it, the timer may have sent the requester back further, its first resends
    missing at the tap), and no sooner than the shortest ACK timeout after the PSN's
    last copy (sooner, no timer's). It began at the oldest unacknowledged PSN, a
    READ's missing response included: READs before u the tap saw incomplete were
    answered (the capture missed responses) and leave the FIFO. Not one whose
    missing response the tap saw arrive damaged or lost after it: the requester
    surely lacks that, so the restart began before u after all."""
    if flags[i] & F_AMBIGUOUS or u > acked[h] or ts[i] - ts[prev_tx[i]] < MIN_ACK_TIMEOUT_NS:
        return
    while f_len[h] > 0 and fifo[h, f_head[h], 2] <= u:
        q = fifo[h, f_head[h], 1]
        for r in range(i - 1, max(i - SCAN_ROWS, -1), -1):
            if hc[r] == h and cls[r] & (C_READ_RESP | C_ATOMIC_ACK) and upsn[r] == q and (
                    icrc[r] == CRC_BAD or flags[r] & F_LOST_AFTER):
                return
        f_head[h] = (f_head[h] + 1) % READ_FIFO
        f_len[h] -= 1


@njit
def _later_hole(hc, cls, upsn, icrc, ts, flags, counts, cz, trig_kind, react, h, t, i, u):
    """Row i restarts at PSN u for the hole shown at row t. A response at u that
    passed between them, sooner before the restart than the requester has yet
    reacted to an implied NAK (`react`), came once the retry was decided: the
    requester may well have had it, so it is not taken as lost after the tap
    (`_unseen_implied` took it so).
    Returns whether the pending implied NAK names a later hole shown after such a
    response: once it came, the requester's oldest unacknowledged PSN passed u, so
    the retry at u does not cover that hole (IBA 9.7.5.1.3) and it stays pending (a
    requester drops a response past a hole, so one after the hole's fill shows the
    next PSN missing)."""
    if react[h, 3] == 0 or i - t > SCAN_ROWS:
        return False
    got = -1
    for r in range(t + 1, i):
        if hc[r] == h and cls[r] & (C_READ_RESP | C_ATOMIC_ACK) and upsn[r] == u and \
                icrc[r] != CRC_BAD and ts[i] - ts[r] < react[h, 2]:
            if flags[r] & F_LOST_AFTER:
                flags[r] &= ~F_LOST_AFTER
                counts[h, K_LOST_AFTER] -= 1
            if got < 0:
                got = r
    return got >= 0 and trig_kind[h] & T_IMPLIED != 0 and cz[h, CZ_IMPLIED, 2] == 0 and \
        cz[h, CZ_IMPLIED, 0] > u and cz[h, CZ_IMPLIED, 1] > got


@njit
def _last_copy(hc, cls, upsn, i, h, u):
    """The latest row before row i that restarted the requester's timer for PSN u: a
    request at u, or the response at u - 1 (the READ covering u making progress up to
    it; a READ re-requested part-way has no request of its own at u). -1: none."""
    for r in range(i - 1, max(i - SCAN_ROWS, 0) - 1, -1):
        if hc[r] == h and ((cls[r] & C_REQUEST and upsn[r] == u) or (
                cls[r] & (C_READ_RESP | C_ATOMIC_ACK) and upsn[r] == u - 1)):
            return r
    return -1


@njit
def _pin_restart(pin, hc, cls, upsn, syn, icrc, flags, trig, h, r, u):
    """Row r restarts at PSN u: a READ or atomic there leaves the requester's oldest
    unacknowledged PSN at u until its own response comes, whatever ACKs of later PSNs
    the tap saw (they are blocked behind it, IBA 9.7.4.1.5); any other restart ends an
    earlier one's hold. (While the start may be a late or duplicated copy, flagged,
    the hold does not count: its response may never come.) A response at u that came
    after the hole shown that the restart answers (row trig[r], an ACK or a response)
    and before the restart went out reached the requester first: it holds nothing
    (the retry was already due). (After a NAK naming u, no response at u can come
    before the restart: the responder had not u.)"""
    if cls[r] & (C_READ_REQ | C_ATOMIC_REQ):
        pin[h, 0] = u
        pin[h, 1] = r
        pin[h, 2] = -1
        pin[h, 3] = u
        t = trig[r]
        shown = t >= 0 and (cls[t] & (C_READ_RESP | C_ATOMIC_ACK) != 0 or (
            cls[t] & C_ACK != 0 and _syn_kind(syn[t]) == SYN_ACK))
        lo = max(t, r - SCAN_ROWS) if shown else r
        for q in range(r - 1, lo, -1):
            if hc[q] == h and cls[q] & (C_READ_RESP | C_ATOMIC_ACK) and upsn[q] == u and \
                    icrc[q] != CRC_BAD and not flags[q] & F_LOST_AFTER:
                pin[h, 0] = -1
                pin[h, 2] = q
                break
    elif pin[h, 0] >= 0:
        pin[h, 0] = -1
        pin[h, 2] = r


@njit
def _unheard_acks(hc, cls, syn, upsn, icrc, ts, flags, counts, lo, i, h, u):
    """A timeout restart at PSN u, row i (its previous copy at row lo): every ACK of u
    or later (and sequence NAK past u) the tap saw between them, longer than a
    requester's reaction before the restart, never reached the requester: its timer
    would not have fired. Marked lost after the capture point."""
    for r in range(i - 1, max(lo, i - SCAN_ROWS), -1):
        if hc[r] != h or not cls[r] & C_ACK or icrc[r] == CRC_BAD or \
                ts[r] > ts[i] - MAX_REACTION_NS or flags[r] & F_LOST_AFTER:
            continue
        kind = _syn_kind(syn[r])
        nak_seq = kind == SYN_NAK and (syn[r] >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK == 0
        if (kind == SYN_ACK and upsn[r] >= u) or (nak_seq and upsn[r] > u):
            flags[r] |= F_LOST_AFTER
            counts[h, K_LOST_AFTER] += 1


@njit
def _drop_answered(fifo, f_head, f_len, h, u):
    """A restart at PSN u for a NAK or RNR NAK naming u: the requester had every
    response below u (else it would restart at the first one missing, IBA 9.7.4.1.5),
    so READs before u the tap saw incomplete were answered (the capture missed some
    responses): they leave the FIFO."""
    while f_len[h] > 0 and fifo[h, f_head[h], 2] <= u:
        f_head[h] = (f_head[h] + 1) % READ_FIFO
        f_len[h] -= 1
