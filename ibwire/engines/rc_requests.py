"""RC engine rules, requester side: a request that is unreliable or new.

- UC: a PSN past the next expected one is a gap (counted apart); one before it a
  duplicate if the capture saw it, else late.
- The end of an RNR wait: a resend continuing a run past the PSN an RNR NAK
  refused, at least the NAK's timer after it, shows the requester restarted at the
  refused PSN (that retry lost before the tap, or delayed: remembered): the RNR
  cause is spent (unless that retry is the copy held back just before). A resend
  that starts a run is left to `episode_start`: the RNR retry run itself.
- A new PSN that the pending RNR NAK refused, at least its timer after it: that NAK's
  retry (the capture missed the copy the responder refused).
- A READ or atomic request first seen below the highest PSN joins the FIFO too.
- A sequence NAK the requester gets to in order (kept back behind another, or
  ignored while a retry covered it on a network that delays copies): spent once
  its run resends the PSN and goes on (`nak_reached`); so is an implied NAK's hole
  that the run in progress, begun below it, resends and goes on from
  (`implied_reached`).
- A new PSN (at or past the highest sent): the PSNs skipped are a hole (lost before
  the tap, remembered in a ring of recent holes); reaching the old front ends the
  go-back-N episode in progress, and the resends it skipped that no ACK made
  unneeded are lost too (remembered, for a late copy that fills them); message
  ends are numbered; READ and atomic requests enter the FIFO their responses are
  matched against.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_LAST, C_READ_REQ, F_AMBIGUOUS, F_DUP, F_GAP, F_LATE, F_MSG_END, F_RETX,
    F_RNR_RETRY, F_UC_GAP, GAP_RING, K_DUP, K_LATE, K_LOST_BEFORE, K_MESSAGES, K_RNR_RETRIES,
    K_UC_GAPS, READ_FIFO,
)

from ibwire.engines.rc_causes import (
    _before_implied_reaction, _before_reaction, _earliest_cause, _kept_next,
)
from ibwire.engines.rc_shared import (
    CZ_IMPLIED, CZ_NAK, SKIP_MAYBE, T_IMPLIED, T_NAK, _mark, _nak_spent, _rnr_over, _rnr_spent,
    _rnr_wait_ns,
)


def uc_request(first_tx, flags, msg, gap, counts, high, msg_no, i, h, c, u, d, consume):
    """An unreliable-connected request: a gap, a message end, a duplicate or late."""
    if d > 0:
        flags[i] |= F_UC_GAP
        gap[i] = d
        counts[h, K_UC_GAPS] += 1
    if d >= 0:
        high[h] = u + consume
        msg[i] = msg_no[h]
        if c & C_LAST:
            msg_no[h] += 1
            _mark(flags, counts, i, h, F_MSG_END, K_MESSAGES)
    elif first_tx[i] < i:
        _mark(flags, counts, i, h, F_DUP, K_DUP)
    else:
        _mark(flags, counts, i, h, F_LATE, K_LATE)


def rnr_wait_over(upsn, syn, ts, trig_u, trig_kind, rnr_u, rnr_row, rnr_late, rnr_doubt, late_row,
                  ep_active, ep_last, ep_row, flags, i, h, u, seen, prev_req):
    """A resend past the refused PSN after the RNR wait: the RNR cause is spent (or,
    going on with a run begun before the RNR NAK, it starts the retry run); so is a
    new PSN past it that a run begun at or below it after the wait goes on to. A new
    PSN after a silent wait: the next copy of the refused PSN may not be its retry."""
    if rnr_u[h] >= 0 and u > rnr_u[h] and not seen and \
            _rnr_over(syn, ts, rnr_row[h], i) and \
            (prev_req < 0 or 2 * (ts[prev_req] - ts[rnr_row[h]]) < _rnr_wait_ns(syn[rnr_row[h]])):
        # The requester was silent through the second half of the wait (a requester
        # that never got the NAK would have gone on sending) and then sent a new PSN:
        # it waited and restarted, the retry lost before the tap, or it never got the
        # NAK (lost after the tap) and had nothing to send. The tap cannot tell.
        rnr_doubt[h] = True
    q = ep_row[h]
    if rnr_u[h] >= 0 and u > rnr_u[h] and not seen and ep_active[h] and q > rnr_row[h] and \
            upsn[q] <= rnr_u[h] and _rnr_over(syn, ts, rnr_row[h], q) and \
            not flags[q] & F_AMBIGUOUS and q <= prev_req and upsn[prev_req] < rnr_u[h]:
        # A run begun at or below the refused PSN once the wait was over (the
        # requester had the RNR NAK), gone on from below it to a new PSN past it: it
        # resent the refused PSN in order, and that retry was lost before the tap (or
        # delayed: then it comes later as the late resend of this run).
        rnr_late[h, 0] = rnr_u[h]
        rnr_late[h, 1] = i
        _rnr_spent(trig_u, trig_kind, rnr_u, h)
    if rnr_u[h] >= 0 and u > rnr_u[h] and seen and ep_active[h] and u > ep_last[h] and \
            _rnr_over(syn, ts, rnr_row[h], i) and \
            not (late_row[h] >= 0 and upsn[late_row[h]] == rnr_u[h]) and \
            not (prev_req > rnr_row[h] and upsn[prev_req] > rnr_u[h] and
                 2 * (ts[prev_req] - ts[rnr_row[h]]) >= _rnr_wait_ns(syn[rnr_row[h]])):
        # A resend past the refused PSN after the RNR wait: the requester has
        # restarted, with the refused PSN first, and that retry was lost before the
        # tap (or delayed: then it comes later as the late resend of this run). (New
        # PSNs prove nothing: a requester may go on sending until it has processed the
        # RNR NAK, which the tap sees leave, not arrive.) Not when the run went on past
        # the refused PSN through the second half of the wait: the requester never got
        # the NAK (lost after the tap), and its first resend of that PSN once the wait
        # is over is, at the tap, the retry (`episode_start`).
        if 0 <= ep_row[h] < rnr_row[h]:
            # A run begun before the RNR NAK: the requester stopped it there, so this
            # starts the RNR NAK's retry run, not the old run going on.
            ep_active[h] = False
        else:
            rnr_late[h, 0] = rnr_u[h]
            rnr_late[h, 1] = i
            _rnr_spent(trig_u, trig_kind, rnr_u, h)


def unseen_retry(syn, ts, flags, counts, trig_u, trig_kind, rnr_u, rnr_row, i, h, u):
    """A new PSN the pending RNR NAK refused, once its timer is over: its retry."""
    if u == rnr_u[h] and _rnr_over(syn, ts, rnr_row[h], i):
        # The responder refused a copy the capture missed; this one is the retry.
        _mark(flags, counts, i, h, F_RNR_RETRY, K_RNR_RETRIES)
        _rnr_spent(trig_u, trig_kind, rnr_u, h)


def new_request(flags, msg, gap, counts, high, acked, ep_active, ep_end, ep_cur, ep_next, gaps,
                gap_at, rgaps, rgap_at, msg_no, fifo, f_head, f_len, ep_amb, soon, amid, ended,
                i, h, c, u, d, consume, behind):
    """A request at or past the highest PSN: holes, a run's end, messages, the READ FIFO."""
    if d > 0:
        flags[i] |= F_GAP
        gap[i] = d
        counts[h, K_LOST_BEFORE] += d
        slot = gap_at[h] % GAP_RING
        gaps[h, slot, 0] = high[h]
        gaps[h, slot, 1] = u
        gaps[h, slot, 2] = i
        gap_at[h] += 1
    high[h] = u + consume
    if ep_active[h] and u >= ep_end[h]:
        skipped = ep_end[h] - max(ep_next[h], acked[h])
        # (A start too soon for a timer that no third packet settled stays in doubt.)
        doubt = ep_amb[h] or soon[h] > 0
        if d == 0 and (ep_next[h] < ep_end[h] or behind):
            # (Or the original, delayed past the run's start: `amid_decided`. So
            # with the start in doubt: the run, if it is one, goes on as well. So at
            # the run's next PSN when it came too soon after the run's latest resend
            # for the requester to have sent it after that one (`own_pace`): sent
            # before the restart, the run resends it.)
            amid[h, 0] = i
            amid[h, 1] = max(skipped, 0) if not doubt else 0
            amid[h, 2] = ep_next[h]
            amid[h, 3] = ep_cur[h]
            amid[h, 4] = rgap_at[h] % GAP_RING   # (the skip ring slot written below)
        # (Kept in case the run's start turns out a late copy, `copy_decided`:
        # this row, the resends it counted lost, the skip ring slot written below.)
        ended[h, 0] = i if d == 0 else -1
        ended[h, 1] = 0
        ended[h, 2] = -1
        if skipped > 0 and not doubt:
            # New data before the resend run reached the old front, and no
            # ACK made those resends unneeded: they were lost before the tap.
            # (Not after a start that may be a late copy: no run, nothing lost.)
            flags[i] |= F_GAP
            gap[i] += skipped
            counts[h, K_LOST_BEFORE] += skipped
            ended[h, 1] = skipped
        if ep_end[h] > ep_next[h]:
            ended[h, 2] = rgap_at[h] % GAP_RING
            slot = rgap_at[h] % GAP_RING
            rgaps[h, slot, 0] = ep_next[h]
            rgaps[h, slot, 1] = ep_end[h]
            rgaps[h, slot, 2] = ep_cur[h]
            rgaps[h, slot, 3] = max(ep_next[h], acked[h])
            rgaps[h, slot, 4] = doubt
            rgaps[h, slot, 5] = i
            rgap_at[h] += 1
        if d > 0:
            # The hole this PSN leaves may have gone out before the run began (its
            # originals lost or delayed before the tap): the run then resent it too,
            # unseen. Remembered as the run's possible skip, only for a later
            # copy of a PSN the tap has seen by then, not as a resend
            # (`skipped_resend`).
            slot = rgap_at[h] % GAP_RING
            rgaps[h, slot, 0] = u - d
            rgaps[h, slot, 1] = u
            rgaps[h, slot, 2] = ep_cur[h]
            rgaps[h, slot, 3] = u
            rgaps[h, slot, 4] = SKIP_MAYBE
            rgaps[h, slot, 5] = i
            rgap_at[h] += 1
        ep_active[h] = False
    msg[i] = msg_no[h]
    if c & C_LAST:
        msg_no[h] += 1
        _mark(flags, counts, i, h, F_MSG_END, K_MESSAGES)
    if c & (C_READ_REQ | C_ATOMIC_REQ):
        if f_len[h] == READ_FIFO:
            f_head[h] = (f_head[h] + 1) % READ_FIFO
            f_len[h] -= 1
        slot = (f_head[h] + f_len[h]) % READ_FIFO
        fifo[h, slot, 0] = u
        fifo[h, slot, 1] = u
        fifo[h, slot, 2] = u + consume
        fifo[h, slot, 3] = -1
        f_len[h] += 1


def unseen_read(fifo, f_head, f_len, acked, h, u, consume, seen):
    """A READ or atomic request first seen below the highest PSN (its original lost
    before the tap, or delayed) awaits its responses as much: it enters the FIFO in
    PSN order (not inside a READ there, re-requested part-way, nor once acknowledged)."""
    if not seen and u >= acked[h] and f_len[h] < READ_FIFO:
        k = f_len[h]
        for j in range(f_len[h]):
            slot = (f_head[h] + j) % READ_FIFO
            if fifo[h, slot, 0] <= u < fifo[h, slot, 2]:
                k = -1
                break
            if fifo[h, slot, 0] > u:
                k = j
                break
        if k >= 0:
            for j in range(f_len[h], k, -1):
                fifo[h, (f_head[h] + j) % READ_FIFO, :] = \
                    fifo[h, (f_head[h] + j - 1) % READ_FIFO, :]
            slot = (f_head[h] + k) % READ_FIFO
            fifo[h, slot, 0] = u
            fifo[h, slot, 1] = u
            fifo[h, slot, 2] = u + consume
            fifo[h, slot, 3] = -1
            f_len[h] += 1


def nak_reached(upsn, ts, flags, trig, trig_u, trig_row, trig_kind, cz, nak_nxt, delays, react,
                ep_row, episode, ep_active, ep_cur, i, h, u, prev_req):
    """A NAK kept back behind another (`rc_shared._next_nak`), for a PSN the restart
    answering that one had yet to reach: the requester ignores a NAK its resend in
    progress gets to in order. Shown when that run resends the PSN and goes on with
    the next one (unless that resend passed the tap sooner after the NAK than the
    requester's fastest reaction to one: sent before it had the NAK, whose implicit
    ACK then ends the retry, so it goes back there once more); a copy of the PSN
    right after the run's is its restart. So too a NAK
    the requester ignored (a retry covering it under way), on a network that delays
    copies: spent once the run resent its PSN and went on."""
    p = nak_nxt[h, 2]
    if p >= 0 and prev_req >= 0 and upsn[prev_req] == p and u != p:
        nak_nxt[h, 2] = -1
        if u == p + 1 and trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == p:
            if _before_reaction(react, ts, h, prev_req, cz[h, CZ_NAK, 1]):
                nak_nxt[h, 3] = p
            else:
                _nak_spent(cz, trig_u, trig_row, trig_kind, h)
                _kept_next(cz, trig_u, trig_row, trig_kind, nak_nxt, h)
    elif p >= 0 and u > p:
        nak_nxt[h, 2] = -1
    q = nak_nxt[h, 3]
    if q >= 0 and (u == q or not (trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == q)):
        nak_nxt[h, 3] = -1      # (its restart, or another NAK in its place)
    elif q >= 0 and not _before_reaction(react, ts, h, prev_req, cz[h, CZ_NAK, 1]) and \
            not flags[prev_req] & F_AMBIGUOUS and \
            not (ep_row[h] > cz[h, CZ_NAK, 1] and trig[ep_row[h]] == cz[h, CZ_NAK, 1]):
        # Two requests since the requester could have gone back, neither at its PSN
        # nor a restart taken for it, the first not held for this one to decide (a
        # restart whose first packet is missing): none is coming (that packet lost,
        # and the copy decided otherwise, or a requester that ignored the NAK).
        nak_nxt[h, 3] = -1
        _nak_spent(cz, trig_u, trig_row, trig_kind, h)
        _kept_next(cz, trig_u, trig_row, trig_kind, nak_nxt, h)
    if delays[h] and trig_kind[h] & T_NAK and cz[h, CZ_NAK, 2] == 1 and \
            prev_req > cz[h, CZ_NAK, 1] and upsn[prev_req] == cz[h, CZ_NAK, 0] < u:
        # (Else a later copy there is held for the next request, `rc_copies.classify`:
        # the NAK acted on after all if a run goes on from it in order.)
        _nak_spent(cz, trig_u, trig_row, trig_kind, h)
    implied_reached(upsn, ts, flags, episode, trig_u, trig_row, trig_kind, cz, react, ep_active,
                    ep_cur, ep_row, h, u, prev_req)


def implied_reached(upsn, ts, flags, episode, trig_u, trig_row, trig_kind, cz, react, ep_active,
                    ep_cur, ep_row, h, u, prev_req):
    """The hole an implied NAK names, past the PSN the run in progress began at, resent
    by that run (the request before) and gone on from in order: answered. A restart
    resends every PSN from where it began (IBA 9.7.4.1.5), so it covers a hole shown
    past that point; the requester does not go back there again, and a later copy
    of that PSN is no restart for it. (Not when that resend passed the tap sooner
    after the response that showed the hole than the requester has yet reacted to
    one, or, none seen yet, to a sequence NAK (it acts on either as it arrives): it
    may have been sent before the requester had that response.)"""
    imp_p = cz[h, CZ_IMPLIED, 0]
    imp_t = cz[h, CZ_IMPLIED, 1]
    if trig_kind[h] & T_IMPLIED and prev_req > imp_t >= 0 and ep_active[h] and \
            0 <= ep_row[h] < prev_req and upsn[ep_row[h]] < imp_p == upsn[prev_req] < u and \
            flags[prev_req] & (F_RETX | F_AMBIGUOUS) == F_RETX and \
            episode[prev_req] == ep_cur[h] and \
            not _before_implied_reaction(react, ts, h, prev_req, imp_t):
        trig_kind[h] &= ~T_IMPLIED
        cz[h, CZ_IMPLIED, 0] = -1
        if trig_u[h] == imp_p and trig_row[h] == imp_t:
            _earliest_cause(cz, trig_u, trig_row, trig_kind, h)

