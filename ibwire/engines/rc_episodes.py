"""RC engine rules, requester side: resends and their go-back-N episodes.

- A resend (`rc_copies.resent`: flagged and counted), unless it continues the run
  in progress, starts an episode (`episode_start`) with the reason of the pending
  cause it answers (`rc_shared._pick_cause`: the one naming its PSN; none naming a
  later PSN, nor a NAK older than a requester's reaction or one a retry under way
  made the requester ignore), an implied NAK the tap could not see (a READ response
  lost after it, `rc_unseen`), or a timeout, and settles that cause unless the start
  is ambiguous (a restart past the cause's PSN records the PSNs it skipped, for a
  late copy); a resend past the run's next PSN: `rc_run_shape.run_jump`.
- Every resend (`run_step`): an RNR retry, the copy before it lost after the tap
  (the responder NAKed that PSN again), a run too soon for any timer or started
  ambiguous kept flagged until later packets settle it (then the causes seen
  meanwhile that its retry covered were ignored, `rc_responses._covered_since`).
- `_timeout_episode`, `_cause_episode` (Numba, rare): a row taken back as a run's start
  at the next request (`rc_pending`; `rc_shared._run_from` what they share). The
  others are blocks of `rc_kernel._pass`'s loop, called with its names (`rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_READ_REQ, F_AMBIGUOUS, F_BAD_ICRC, F_EPISODE, F_LOST_AFTER, F_RETX,
    F_RNR_RETRY, GAP_RING, K_GBN, K_LOST_AFTER, K_RETX, K_RETX_BYTES,
    K_RNR_RETRIES, K_TIMEOUTS, MIN_ACK_TIMEOUT_NS, REASON_IMPLIED, REASON_NAK_SEQ, REASON_RNR,
    REASON_TIMEOUT,
)

from ibwire.engines.rc_causes import (
    _first_showing, _implied_still_due, _kept_at, _next_nak, _rnr_retry_doubt, _rnr_still_due,
    _settled_before,
)
from ibwire.engines.rc_shared import (
    AMB_PIN, CZ_IMPLIED, CZ_NAK, CZ_RNR, SKIP_DOUBT, SKIP_SURE, T_IMPLIED, T_NAK, T_RNR,
    _earlier_hole, _named_at, _pick_cause, _rnr_over, _rnr_waited, _run_from,
    _skipped_by_run, _skipping_run,
)
from ibwire.engines.rc_responses import _covered_since
from ibwire.engines.rc_run_shape import _jumped
from ibwire.engines.rc_unseen import (
    _drop_answered, _later_hole, _pin_restart, _timer_answered, _unheard_acks, _unseen_implied,
)


@njit
def _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode, ep_cur, ep_active,
                     ep_end, ep_last, ep_next, retrying, high, upsn, hc, cls, icrc, ts, flags,
                     trig, pin, syn):
    """Row r turns out to be a resend that started an episode whose cause the tap did
    not see: count it as a timeout episode (or, for a READ or atomic, the implied NAK
    of a response lost after the tap, `_unseen_implied`), now running up to the
    stream's front. Returns the next episode number. (Rare: a plain call.)"""
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[r]
    counts[h, K_GBN] += 1
    reason[r] = REASON_TIMEOUT
    if cls[r] & (C_READ_REQ | C_ATOMIC_REQ):
        trig[r] = _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, pin, reason, trig,
                                  r, h, upsn[r])
        if trig[r] >= 0:
            reason[r] = REASON_IMPLIED
    _pin_restart(pin, hc, cls, upsn, syn, icrc, flags, trig, h, r, upsn[r])
    if reason[r] == REASON_TIMEOUT:
        counts[h, K_TIMEOUTS] += 1
    _run_from(r, h, u, n_ep, episode, ep_cur, ep_active, ep_end, ep_last, ep_next, high, upsn)
    retrying[h] = True
    return n_ep + 1


@njit
def _cause_episode(r, h, u, n_ep, counts, paylen, reason, episode, trig, ep_cur, ep_active, ep_end,
                   ep_last, ep_next, high, upsn, ts, syn, trig_u, trig_row, trig_kind, cz, nak_new,
                   rnr_u, rnr_late, retrying, rgaps, rgap_at, sure, hc, cls, icrc, flags, pin, fifo,
                   f_head, f_len):
    """Row r, a copy held back as possibly late or duplicated while a retry cause was
    pending for an earlier PSN, turns out to start that cause's resend run (the next
    request continues it in order): the run's first resends (the cause's PSN up to
    r's) did not reach the tap. Unless `sure`, the cause stays pending (the start may
    still be a late copy). Returns the next episode number. (Rare: a plain call.)"""
    _earlier_hole(cz, trig_u, trig_row, trig_kind, h, upsn[r])
    j = _pick_cause(cz, trig_kind[h], h, upsn[r], ts, syn, r)
    rnr_k = trig_kind[h] & T_RNR
    if j < 0:
        return _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode, ep_cur,
                                ep_active, ep_end, ep_last, ep_next, retrying, high, upsn, hc,
                                cls, icrc, ts, flags, trig, pin, syn)
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[r]
    if j == CZ_RNR:
        reason[r] = REASON_RNR
        counts[h, K_RNR_RETRIES] += 1
        if upsn[r] > rnr_u[h]:
            rnr_late[h, 0] = rnr_u[h]   # (its first packet missing, as in `episode_start`)
            rnr_late[h, 1] = r
        rnr_u[h] = -1
    elif j == CZ_NAK:
        reason[r] = REASON_NAK_SEQ
    else:
        reason[r] = REASON_IMPLIED
    if reason[r] != REASON_RNR or nak_new[h]:
        counts[h, K_GBN] += 1
    trig[r] = cz[h, j, 1]
    if (j == CZ_NAK or j == CZ_RNR) and cz[h, j, 0] == upsn[r]:
        _drop_answered(fifo, f_head, f_len, h, upsn[r])
    if j == CZ_IMPLIED and cz[h, j, 0] < upsn[r] and cls[r] & (C_READ_REQ | C_ATOMIC_REQ):
        # A READ past the implied NAK's hole whose own hole the tap saw shown: its cause.
        t = _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, pin, reason, trig, r, h,
                            upsn[r])
        if t >= 0:
            trig[r] = t
            _drop_answered(fifo, f_head, f_len, h, upsn[r])
    _pin_restart(pin, hc, cls, upsn, syn, icrc, flags, trig, h, r, upsn[r])
    _run_from(r, h, u, n_ep, episode, ep_cur, ep_active, ep_end, ep_last, ep_next, high, upsn)
    # (From its cause's PSN, as `episode_start`; unless `sure`, a skip in doubt.)
    _skipped_by_run(h, cz[h, j, 0], upsn[r], n_ep, r, rgaps, rgap_at,
                    SKIP_SURE if sure else SKIP_DOUBT)
    if not sure:
        return n_ep + 1
    nak_new[h] = False
    trig_u[h] = -1
    trig_kind[h] = 0
    trig_row[h] = -1
    if j != CZ_RNR and rnr_k and cz[h, CZ_RNR, 1] > r:
        # An RNR NAK since refused this run: its retry is still to come.
        _rnr_still_due(cz, trig_u, trig_row, trig_kind, h)
    return n_ep + 1


def episode_start(hc, cls, upsn, syn, icrc, ts, prev_tx, flags, trig, reason, counts,
                  high, trig_u, trig_row, trig_kind, cz, rnr_u, ep_active, ep_last, ep_end, ep_cur,
                  ep_next, retrying, nak_new, rgaps, rgap_at, known, known_next, rnr_late, fifo,
                  f_head, f_len, ep_row, amb_run, pin, nak_nxt, acked, react, rd_gap, min_gap,
                  run_gap, i, h, c, u, seen, cause, rnr_early, in_gap, run, below, n_ep):
    """A resend that starts a go-back-N episode: its cause and reason."""
    amb_run[h, 0] = -1
    kept_hole = False
    if ep_active[h] and ep_next[h] < ep_end[h] and u < ep_next[h]:
        # (Kept, should the next request show this start a copy: `rc_pending_copies`.)
        amb_run[h, 0] = i
        amb_run[h, 1] = ep_cur[h]
        amb_run[h, 2] = ep_last[h]
        amb_run[h, 3] = ep_next[h]
        amb_run[h, 4] = ep_end[h]
        amb_run[h, 5] = rgap_at[h]
        amb_run[h, 6] = ep_row[h]
        amb_run[h, AMB_PIN:] = pin[h]   # (the hold before this restart's own)
        # The run in progress is cut short: the PSNs it had still to resend went unseen
        # (lost before the tap, or delayed: then one comes later as that run's resend)
        # or were never sent (the requester restarted first).
        _skipped_by_run(h, ep_next[h], ep_end[h], ep_cur[h], i, rgaps, rgap_at, 1)
    flags[i] |= F_EPISODE
    ep_cur[h] = n_ep
    n_ep += 1
    ep_active[h] = True
    ep_end[h] = high[h]
    k = trig_kind[h] if trig_u[h] >= 0 else 0
    if rnr_early:
        k &= ~T_RNR
    _kept_at(cz, trig_u, trig_row, trig_kind, nak_nxt, react, ts, min_gap, run_gap, h, i, u, k)
    # The cause this restart answers (none: a timeout, or an implied NAK unseen).
    _earlier_hole(cz, trig_u, trig_row, trig_kind, h, u)
    cz_j = _pick_cause(cz, k, h, u, ts, syn, i)
    if ep_active[h] and u > ep_last[h] and k & T_RNR and _rnr_waited(cz, syn, ts, h, i):
        cz_j = CZ_RNR   # a run the RNR NAK paused, resumed after its timer (`classify`)
    rnr_k = k & T_RNR
    k = 0 if cz_j < 0 else 1 << cz_j
    trig[i] = cz[h, cz_j, 1] if cz_j >= 0 else -1
    if k & (T_NAK | T_RNR) and cz[h, cz_j, 0] == u:
        _drop_answered(fifo, f_head, f_len, h, u)
    if cz_j == CZ_IMPLIED and cz[h, CZ_IMPLIED, 0] < u and c & (C_READ_REQ | C_ATOMIC_REQ) \
            and amb_run[h, 0] < 0:
        # A restart at a READ past the hole the implied NAK named: if the tap saw this
        # READ's own hole shown, the requester had the earlier responses (it restarts
        # at the first READ missing some, IBA 9.7.4.1.5; the capture missed them).
        t = _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, pin, reason, trig, i, h, u)
        if t >= 0:
            trig[i] = t
            _drop_answered(fifo, f_head, f_len, h, u)
    if cz_j < 0 and c & (C_READ_REQ | C_ATOMIC_REQ) and amb_run[h, 0] < 0:
        # (Amid a run, doubtful: asked once the next request shows it a restart.)
        trig[i] = _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, pin, reason, trig,
                                  i, h, u)
        if trig[i] < 0 and _first_showing(cz, trig_u, trig_row, trig_kind, flags, ts, h, i, u):
            trig[i] = trig_row[h]   # (a later hole shown since stays pending)
        if trig[i] >= 0:
            k = T_IMPLIED
            kept_hole = _later_hole(hc, cls, upsn, icrc, ts, flags, counts, cz, trig_kind, react, h,
                                    trig[i], i, u)
            if rnr_k and trig[i] == cz[h, CZ_RNR, 1] and _rnr_waited(cz, syn, ts, h, i):
                k = T_RNR   # an RNR NAK showed the hole: its timer rules (_pick_cause)
    if below and not run:
        # The cause asks for a restart at its own PSN, which the tap did not see:
        # this copy, quick after its last one, may be late or duplicated instead.
        # (A hole fill past a cause the requester acts on is held, `classify`.)
        flags[i] |= F_AMBIGUOUS
    _pin_restart(pin, hc, cls, upsn, syn, icrc, flags, trig, h, i, u)
    if k & T_RNR:
        reason[i] = REASON_RNR
    elif k & T_NAK:
        reason[i] = REASON_NAK_SEQ
    elif k & T_IMPLIED:
        reason[i] = REASON_IMPLIED
    else:
        reason[i] = REASON_TIMEOUT
        counts[h, K_TIMEOUTS] += 1
        if seen and not flags[i] & F_AMBIGUOUS and not c & (C_READ_REQ | C_ATOMIC_REQ):
            # (A READ or atomic waits for its responses whatever ACK came.)
            _unheard_acks(hc, cls, syn, upsn, icrc, ts, flags, counts, prev_tx[i], i, h, u)
        if seen:
            _timer_answered(hc, cls, upsn, icrc, ts, flags, prev_tx, acked, fifo, f_head, f_len,
                            i, h, u)
    if k & T_RNR:
        counts[h, K_RNR_RETRIES] += 1
        if u > rnr_u[h]:
            # The retry run after the RNR wait, its first packet (the refused PSN)
            # missing at the tap: lost before it, or delayed (then a late resend).
            rnr_late[h, 0] = rnr_u[h]
            rnr_late[h, 1] = i
            rnr_u[h] = -1
    # Every run restarting for a sequence NAK, an implied NAK or a timeout is a
    # go-back-N; an RNR retry only when it answers the first NAK since progress.
    if reason[i] != REASON_RNR or nak_new[h]:
        counts[h, K_GBN] += 1
    if k & (T_NAK | T_RNR) and u == cz[h, cz_j, 0] and u > known[h, 0]:
        # A restart at the PSN a NAK or RNR NAK named: the requester got it, with its
        # implicit ACK of every PSN before. (If an earlier run skipped this PSN, it may
        # be that run's resend, late, and the NAK lost after the tap: shown only when
        # the next request continues it.)
        if _skipping_run(rgaps, h, u, -1, -1) < 0:
            known[h, 0] = u
        else:
            known_next[h, 0] = u
    if cz_j == CZ_IMPLIED and u == cz[h, cz_j, 0] and u > known[h, 1]:
        # A restart for an implied NAK begins at the oldest PSN missing a response,
        # so every READ and atomic before it had its responses (not so after a NAK
        # or RNR NAK: those name the responder's expected PSN): shown only when the
        # next request continues it (a late copy looks like a restart).
        known_next[h, 1] = u
    if reason[i] == REASON_TIMEOUT:
        retrying[h] = True
    named = cz[h, cz_j, 0] if cz_j >= 0 else trig_u[h]
    if flags[i] & F_AMBIGUOUS:
        if 0 <= named < u:
            # Taken with doubt (the cause stays pending): should the run go on, the
            # PSNs between were its resends, missing at the tap (`classify`).
            _skipped_by_run(h, named, u, ep_cur[h], i, rgaps, rgap_at, SKIP_DOUBT)
    else:
        if 0 <= named < u:
            # The restart for the cause began at its PSN: the run skipped those to u.
            _skipped_by_run(h, named, u, ep_cur[h], i, rgaps, rgap_at, SKIP_SURE)
        nak_new[h] = False
        trig_u[h] = -1
        trig_kind[h] = 0
        trig_row[h] = -1
        _next_nak(cz, trig_u, trig_row, trig_kind, nak_nxt, h, u)
        if kept_hole:
            _implied_still_due(cz, trig_u, trig_row, trig_kind, rd_gap, h)
        if rnr_k and cz_j != CZ_RNR and u <= rnr_u[h] == cz[h, CZ_RNR, 0] and \
                not _rnr_waited(cz, syn, ts, h, i):
            # The RNR NAK `resent` kept, or one that came before this restart at or
            # below its PSN left (it answers a cause the requester had first): its
            # retry, at the refused PSN once the timer has run out.
            _rnr_still_due(cz, trig_u, trig_row, trig_kind, h)
    if reason[i] != REASON_TIMEOUT:
        amb_run[h, 0] = -1
    return n_ep


def run_step(hc, cls, upsn, syn, first_tx, prev_tx, ts, flags, episode, counts, nak_u, rnr_u,
             rnr_row, rnr_first, rnr_doubt, ep_last, ep_cur, ep_next, soon, soon_rows, ep_amb,
             ep_row, delays, back2back, rgaps, cz, trig_u, trig_row, trig_kind, acked, fifo, f_head,
             f_len, trig, reason, pin, rr_row, min_gap, run_gap, dmalen, pmtu, i, h, c, u, consume,
             seen, b2b, prev_req):
    """Any resend: an RNR retry, a copy lost after the tap, the doubt on the run's start."""
    # An RNR NAK refused it: not lost; its retry once the timer ran out (a run passing
    # the refused PSN before then was sent before the RNR NAK arrived). (Or from the
    # first RNR NAK refusing that PSN: a later one may have been lost after the tap,
    # and a resend sooner than its timer shows it was.)
    refused = u == rnr_u[h] and (_rnr_over(syn, ts, rnr_row[h], i) or
                                 _rnr_over(syn, ts, rnr_first[h], i))
    if refused:
        flags[i] |= F_RNR_RETRY | (F_AMBIGUOUS if _rnr_retry_doubt(
            cz, trig_kind, upsn, syn, ts, prev_tx, rnr_row, ep_row, h, i, u) else 0)
        rnr_u[h] = -1
    if seen and u == nak_u[h] and not refused:
        # The responder asked again for a PSN the capture saw: the copy before this one
        # never reached it (or arrived damaged), unless a run since skipped it (that
        # resend was lost before the tap, counted so).
        p = prev_tx[i]
        skipped = False
        for g in range(GAP_RING):
            if rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 5] > p and \
                    rgaps[h, g, 3] <= u:
                skipped = True
        if not skipped and not flags[p] & (F_LOST_AFTER | F_BAD_ICRC):
            flags[p] |= F_LOST_AFTER
            counts[h, K_LOST_AFTER] += 1
        nak_u[h] = -1
    if flags[i] & F_EPISODE:
        soon[h] = 0
    elif soon[h] > 0:
        if u != ep_next[h] or episode[soon_rows[h, 0]] != ep_cur[h]:
            # (Not the doubtful run's next packet, or one of a later run, whose start
            # was decided at this request: that settles nothing of the first.)
            if not seen and episode[soon_rows[h, 0]] == ep_cur[h]:
                # A first copy past the doubtful run's next PSN: the run's jump (the
                # PSNs between lost before the tap), or a late original like its start.
                # On a network that delays copies, so may its later packets be.
                flags[i] |= F_AMBIGUOUS
                ep_amb[h] = delays[h]
            soon[h] = 0
        elif soon[h] == 1:
            flags[i] |= F_AMBIGUOUS
            soon_rows[h, 1] = i
            soon[h] = 2
        else:
            # (Promptly, as a run goes: after a pause as long as the shortest ACK
            # timeout, this may be a timer's restart of its own, after two late copies.)
            if not delays[h] and ts[i] - ts[soon_rows[h, 1]] < MIN_ACK_TIMEOUT_NS:
                flags[soon_rows[h, 0]] &= ~F_AMBIGUOUS
                flags[soon_rows[h, 1]] &= ~F_AMBIGUOUS
            soon[h] = 0
    if flags[i] & F_EPISODE and seen and first_tx[i] != i and flags[first_tx[i]] & F_RETX and \
            0 <= trig[i] < prev_tx[i]:
        # A restart at a PSN the tap saw only resent, for a cause seen before that
        # PSN's last copy (which may have answered it): as well its original, late.
        flags[i] |= F_AMBIGUOUS
    if flags[i] & F_EPISODE:
        ep_amb[h] = (flags[i] & F_AMBIGUOUS) != 0
        ep_row[h] = i
        back2back[h] = b2b
        q = prev_tx[i]
        if ep_amb[h] and b2b and q == first_tx[i] and flags[q] & F_RETX:
            # Right after the first copy at the tap, taken for the resend that filled
            # its hole: that copy may as well be the original, delayed, and this one
            # the resend (as for a network copy there, `rc_late_copies.network_copy`).
            flags[q] |= F_AMBIGUOUS
    elif ep_amb[h] and (delays[h] or back2back[h]):
        flags[i] |= F_AMBIGUOUS     # continues a run that may not be one
    elif ep_amb[h] and u != ep_next[h]:
        # A jump past the PSN after it: no in-order run settles it (this may continue
        # an earlier run): the start stays flagged, and so does this copy (the run's, or
        # a late copy like its start).
        flags[i] |= F_AMBIGUOUS
        ep_amb[h] = False
    elif ep_amb[h] and ts[i] - ts[ep_row[h]] >= MIN_ACK_TIMEOUT_NS:
        # Only after a pause as long as the shortest ACK timeout: a run may pause so
        # (rxe's do), or a timer restarted here after a late copy; the start stays in doubt.
        ep_amb[h] = False
    elif ep_amb[h] and _named_at(cz, trig_kind, h, ep_last[h] + 1, u, False, -1):
        # Continued in order, but at a PSN a pending cause names (or past one inside
        # the run's last READ: re-requested part-way from there, IBA 9.7.4.1.5): that
        # cause's restart sends it just so, run or no run, so it shows nothing of the
        # start (a late copy as well), which stays in doubt. If the tap saw no original
        # of this PSN, it is in doubt too: with a late start, it may be that original.
        if first_tx[i] == i or flags[first_tx[i]] & F_RETX:
            flags[i] |= F_AMBIGUOUS
        ep_amb[h] = False
    elif ep_amb[h] and c & (C_READ_REQ | C_ATOMIC_REQ) and rr_row[h] > prev_req and \
            upsn[rr_row[h]] > u and trig[ep_row[h]] < 0:
        # Continued in order, but a READ response past it came since the run's last
        # packet: were this one's response lost after the tap, that is an implied NAK
        # naming it, whose restart sends it just so. The start stays in doubt.
        # (Not when the start answers a cause the tap saw: were the start a late copy,
        # that cause's restart, at its own PSN below this one, would still be owed.)
        ep_amb[h] = False
    elif ep_amb[h]:
        # Continued in order: the network does not make runs (and this one has not
        # been seen delaying copies), so it was one (unless it repeated the request
        # before it: a run continuing past a duplicate).
        flags[ep_row[h]] &= ~F_AMBIGUOUS
        ep_amb[h] = False
        # (Its cause stayed pending while it was in doubt, `episode_start`.)
        _settled_before(hc, cls, upsn, ts, trig, reason, cz, trig_u, trig_row, trig_kind,
                        min_gap, run_gap, h, ep_row[h])
        _covered_since(upsn, flags, cz, trig_kind, acked, fifo, f_head, f_len, ep_row, trig,
                       reason, pin, h)
    elif u == ep_next[h] and flags[ep_row[h]] & F_AMBIGUOUS and episode[ep_row[h]] == ep_cur[h] \
            and 0 <= prev_req and flags[prev_req] & F_AMBIGUOUS and \
            _jumped(hc, cls, upsn, dmalen, pmtu, episode, h, prev_req):
        # In order right behind a jump of a run whose start stays in doubt (below): as
        # much a late copy (a held burst keeps its order, as a run does).
        flags[i] |= F_AMBIGUOUS
    elif u != ep_next[h] and flags[ep_row[h]] & F_AMBIGUOUS and episode[ep_row[h]] == ep_cur[h]:
        # Another jump of a run whose start stays in doubt: it continues nothing in
        # order, so it is as much a late copy as that start (or the jump before).
        flags[i] |= F_AMBIGUOUS
    if not flags[i] & F_EPISODE and flags[ep_row[h]] & F_AMBIGUOUS and 0 <= prev_req and \
            episode[prev_req] != ep_cur[h] and (first_tx[i] == i or flags[first_tx[i]] & F_RETX):
        # After another request, its start in doubt: a run's resends go back to back, so
        # this, no original of its PSN seen before, is as much that original, delayed.
        flags[i] |= F_AMBIGUOUS
    if refused and rnr_doubt[h]:
        flags[i] |= F_AMBIGUOUS     # or a later resend, its retry lost before the tap
    episode[i] = ep_cur[h]
    ep_last[h] = u
    ep_next[h] = u + consume

