"""RC engine rules, requester side: a request below the highest PSN sent.

Such a copy is a resend (`rc_episodes`), a network duplicate, a late (reordered
or delayed) original, or the late resend of a run that skipped it:

- `classify` says what it may be: a retry cause pending at or before its PSN, an
  RNR wait not yet over, a hole it fills, a run it continues, quick (sooner than a
  round trip or than any ACK timeout, so no cause can have acted) or unsure (a
  READ or atomic whose response may have been lost after the tap), stale (below
  a PSN the requester already restarted at), held (past a pending cause's PSN).
- `resent`: a resend, flagged and counted (its episode: `rc_episodes`); an RNR NAK
  it shows lost after the tap (a resend of the refused PSN before the timer) is
  dropped.
- `skipped_resend`: a copy no restart can have sent now, inside the PSNs an
  earlier resend run skipped, is that run's resend, late (a delayed RNR retry is
  marked as one); a timer copy (no cause, no run, not quick, not unsure, not an
  RNR retry after its wait) may also be one (decided at the next request), and
  so may a first copy filling a hole after a pause as long as an ACK timeout. A
  first copy there may as well be the original, delayed: flagged.
- The other copies (a stale original, a network copy, a held-back original, a hole
  filled with no cause): `rc_late_copies`.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_READ_REQ, F_AMBIGUOUS, F_LATE, F_RETX, F_RNR_RETRY, GAP_RING, K_LOST_BEFORE,
    K_RETX, K_RETX_BYTES, MIN_ACK_TIMEOUT_NS, REASON_RNR,
)
from ibwire.engines.rc_causes import _first_showing, _no_copy_since, _resend_rnr_heard
from ibwire.engines.rc_run_shape import _before_restart_reached, _stopped_short
from ibwire.engines.rc_shared import (
    CZ_IMPLIED, CZ_NAK, CZ_RNR, SKIP_MAYBE, SKIP_SURE, T_IMPLIED, T_NAK, T_RNR, _acted_below,
    _answered_since, _in_read_before, _named_at, _pace, _port_pace, _reads_below, _rnr_over,
    _rnr_wait_ns, _rnr_waited, _skipping_run, _spent_only,
)


@njit(inline="always")
def _nak_first(cz, trig_kind, prev_tx, rnr_row, i, h, u):
    """A sequence NAK naming u, pending, came after u's previous copy and before the
    latest RNR NAK: the requester had it first and restarted at u at once (IBA
    9.7.5.1.3); the RNR NAK stops it only once it arrives."""
    return trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 0] == u and cz[h, CZ_NAK, 2] == 0 and \
        prev_tx[i] < cz[h, CZ_NAK, 1] < rnr_row[h]


def classify(upsn, syn, first_tx, prev_tx, ts, acked, trig, trig_u, trig_row, trig_kind, cz, rnr_u,
             ep_active, ep_last, ep_next, gaps, min_rtt, known, rnr_row, rr_row, fifo, f_head,
             f_len, ack_row, ack_u, ep_row, min_gap, rgaps, ep_cur, react, i, h, c, u, seen,
             prev_req, run_gap, hc, cls, paylen, byte_gap, pmtu, flags):
    """What a request below the highest PSN may be."""
    cause = trig_u[h] >= 0 and trig_u[h] <= u
    if cause and ep_row[h] >= 0 and u < upsn[ep_row[h]] and \
            (ep_active[h] or ep_last[h] > upsn[ep_row[h]]) and \
            trig[ep_row[h]] >= 0 and _spent_only(cz, trig_kind, h, u, trig[ep_row[h]]):
        # Only the cause whose restart is the run in progress (or the latest, once it
        # went on), begun past this PSN (taken with doubt, the cause kept pending): one
        # cause, one restart. This copy is that run's first resends, late, or the
        # original, late.
        cause = False
    # (Nor at the hole an implied NAK showed first, `trig_u`, when a later response
    # showed a later READ's hole since, which the implied-NAK cause names now: the
    # requester goes back to the first request missing responses, IBA 9.7.4.1.5. The
    # first copy since that showing is its restart, one fault fewer than a network
    # copy; after another copy, or a response at u, the rules below weigh it.)
    first_hole = _first_showing(cz, trig_u, trig_row, trig_kind, flags, ts, h, i, u) and \
        _no_copy_since(hc, cls, upsn, first_tx, h, trig_row[h], i, u)
    if cause and not _acted_below(cz, trig_kind, h, u + 1) and not first_hole and \
            not (trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == u) and \
            (c & (C_READ_REQ | C_ATOMIC_REQ) or (
                ep_active[h] and _skipping_run(rgaps, h, u, -1, -1) == ep_cur[h])):
        # A READ or atomic copy with every cause pending at or before its PSN one the
        # requester ignores (a retry under way covered it): they restart nothing, and
        # only an implied NAK the tap cannot see may have resent it (`unsure` below).
        # (Save a NAK naming this very PSN: a restart there shows the requester acted
        # on it, `_pick_cause`. Other requests: a doubtful timeout restart, settled
        # by the next request, `amb_run_decided`; unless the run under way skipped this
        # PSN: its resend, delayed, `skipped_resend`.)
        cause = False
    # Past the refused PSN before the RNR timer ran out: not that RNR NAK's
    # restart (at the refused PSN, after the wait), which stays pending.
    in_wait = rnr_u[h] >= 0 and not _rnr_over(syn, ts, rnr_row[h], i)
    rnr_early = u > rnr_u[h] and in_wait
    if rnr_early and (trig_kind[h] == T_RNR or trig_u[h] == rnr_u[h]):
        # (Also with a NAK naming that same PSN: the responder NAKs what was in
        # flight behind the refused request, and either restart begins there.)
        cause = False
    if in_wait and u == rnr_u[h] and trig_kind[h] == T_RNR and trig_u[h] == u and \
            not (cz[h, CZ_RNR, 0] == u and _rnr_waited(cz, syn, ts, h, i)):
        # The refused PSN itself before the timer, that RNR NAK the only cause: its
        # retry comes after the wait, and were it lost after the tap no other cause
        # is pending. No restart: a late or duplicated copy. (Unless the RNR NAK the
        # cause still names is an earlier one refusing u, whose timer is over: the
        # later one never reached the requester, `resent`; this is the retry.)
        cause = False
    in_gap = False
    if not seen:
        for g in range(GAP_RING):
            if gaps[h, g, 0] <= u < gaps[h, g, 1]:
                in_gap = True
    # Not seen and in no hole: inside an earlier READ's PSN range (a READ
    # restarted part-way), so it is a resend as much as a seen PSN is.
    # An RNR NAK that came amid a run, for a PSN the run has not passed, stops the
    # requester; once its timer has run out it goes on from the run's next PSN: that
    # is the RNR NAK's retry run, a new episode, not the old run going on.
    # So is the refused PSN itself once the timer ran out, after a run begun before
    # it did (that run was no retry for it: the requester was waiting).
    rnr_resume = ep_active[h] and rnr_u[h] >= 0 and u <= rnr_u[h] and not in_wait and (
        rnr_row[h] > ep_row[h] >= 0 or (u == rnr_u[h] and ep_row[h] > rnr_row[h] >= 0 and
                                        not _rnr_over(syn, ts, rnr_row[h], ep_row[h])))
    # (Not inside the PSNs of the run's latest resend, a READ: re-requested part-way,
    # a new restart. Nor the run's next PSN (none acknowledged yet) or one past it (its
    # first resends lost before the tap), after a late copy past the run and then a
    # sequence NAK naming that PSN, the run stopped short before that NAK (the packets
    # past it held copies): that NAK's restart; not sooner after the NAK than a quarter
    # of the requester's fastest of three or more reactions, as `rc_pending.jump_decided`.)
    nak_resume = trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 1] > prev_req >= 0 and \
        flags[prev_req] & F_LATE != 0 and upsn[prev_req] > u and not (
            react[h, 1] >= 3 and 4 * (ts[i] - ts[cz[h, CZ_NAK, 1]]) < react[h, 0]) and \
        cz[h, CZ_NAK, 0] == max(ep_next[h], acked[h]) <= u and _stopped_short(
            hc, cls, upsn, paylen, ts, byte_gap, h, ep_last[h], prev_req, ts[cz[h, CZ_NAK, 1]],
            _port_pace(min_gap, run_gap, h))
    run = ep_active[h] and u > ep_last[h] and u >= ep_next[h] and not rnr_resume and \
        not nak_resume
    # Sooner than one round trip after the last copy, or than the shortest
    # local ACK timeout after the first, with no NAK seen: no retry cause
    # can have acted. (A READ or atomic that something after it has been
    # acknowledged, or the one just before this PSN whose responses came
    # since its last copy (its own resend then lost before the tap), may
    # have lost a response after the tap: an implied NAK the tap cannot
    # see, so only the round trip tells.)
    # (The READ just before: a response of it came after this PSN's last copy (any,
    # not only the latest response, when no run is under way), so no round trip
    # bounds the reaction to it.
    # For a READ or atomic, so does any READ response of it, answered before or
    # not: in a READ stream, a re-read's.)
    after_prev = _answered_since(fifo, h, u, prev_tx[i], ep_active[h], acked[h]) or \
        (c & (C_READ_REQ | C_ATOMIC_REQ) != 0 and rr_row[h] > prev_tx[i] and
         _in_read_before(fifo, h, upsn[rr_row[h]], u))
    # (Not the oldest READ still waiting when the tap never saw a response of it: a
    # response past it shows the requester's hole at the tap, a cause seen.)
    head_next = fifo[h, f_head[h], 1] if f_len[h] > 0 else -1
    unheard = f_len[h] > 0 and fifo[h, f_head[h], 0] == u == head_next
    # (Nor a copy right behind its own previous copy past an older READ's first
    # missing response, with no cause the requester acts on pending at or before it:
    # the requester lacks that response too (what reaches it passed the tap), so an
    # unseen implied NAK's restart begins at or before it and resends each READ from
    # there first, all lost before the tap, then this PSN: a packet time each, at no
    # less than the least gap the stream has shown between two new requests or two
    # resends of a run, longer than the two copies were apart. So would a restart for
    # a cause the requester ignores, pending before this PSN.)
    pace = _pace(min_gap, run_gap, h)
    tight = 0 <= head_next < u and not _acted_below(cz, trig_kind, h, u + 1) and \
        prev_tx[i] == prev_req and pace >= 0 and \
        ts[i] - ts[prev_req] < (_reads_below(fifo, f_head, f_len, h, u) + 1) * pace
    if tight and cause and not _named_at(cz, trig_kind, h, u, u, False, -1):
        cause = False
    past_read = c & (C_READ_REQ | C_ATOMIC_REQ) != 0 and acked[h] > u and not tight
    hidden = (past_read and not unheard) or (after_prev and not tight)
    # Likewise a READ or atomic that an ACK covered since its last copy: the
    # requester takes that ACK for an implied NAK if a response was lost.
    hidden_ack = c & (C_READ_REQ | C_ATOMIC_REQ) and ack_row[h] > prev_tx[i] \
        and ack_u[h] >= u
    rtt_quick = min_rtt[h] >= 0 and ts[i] - ts[prev_tx[i]] < min_rtt[h]
    to_quick = ts[i] - ts[first_tx[i]] < MIN_ACK_TIMEOUT_NS
    quick = seen and ((rtt_quick and not hidden_ack and not after_prev) or
                      (to_quick and not hidden))
    # A resend, or a network duplicate: flagged when it is taken for a resend.
    unsure = seen and not quick and ((to_quick and hidden) or
                                     (rtt_quick and (hidden_ack or after_prev)))
    # Below a PSN the requester has already restarted at for a NAK (so it
    # knew everything before it acknowledged) and not part of a run: no
    # restart can send it. (A READ or atomic may still lack responses then:
    # only an implied NAK's restart past it that went on in order shows it had them.)
    stale = seen and not cause and not run and (
        u < known[h, 1] if c & (C_READ_REQ | C_ATOMIC_REQ) else u < known[h, 0])
    # With a cause pending for an earlier PSN, a quick copy may be the
    # network's as well as that restart (its first packets lost before the
    # tap): taken for the restart, flagged, and the cause stays pending.
    below = cause and trig_u[h] < u and quick
    # With no cause seen, only a timeout can restart: it runs from a packet's
    # latest transmission, so none comes sooner than that after the previous copy.
    # (Not where an implied NAK the tap cannot see may have acted, `hidden`,
    # `hidden_ack`, nor past a response or ACK past it, even one taken for a cause
    # seen: a response lost after the tap shows a hole only through a later one,
    # which the tap sees as well. Save a copy too soon for that restart, `tight`.)
    since_prev = seen and not hidden and not hidden_ack and not past_read and \
        ts[i] - ts[prev_tx[i]] < MIN_ACK_TIMEOUT_NS
    copy = (quick or since_prev) and not cause and not run
    # A quick copy, or a hole fill, past the PSN a pending cause names, not
    # in a run: the restart for that cause with its first packets missing
    # at the tap, or a late or duplicated copy. Held back as the copy; the
    # next request continuing it in order makes it the run's start. (Not a
    # copy at the very PSN the latest NAK or RNR NAK names: its restart.)
    # So is a repeat of the run's latest packet right behind it (no request between)
    # with a cause pending for an earlier PSN (one the requester acts on), however
    # long since its first copy, when too soon after it for the requester to have
    # sent that cause's restart up to here (it begins at the cause's PSN: one packet
    # each, at no less than the least time the stream has shown between two new
    # requests), its resends before all lost before the tap. The network's copy
    # needs nothing lost.
    acted = cause and _acted_below(cz, trig_kind, h, u)
    if cause and not seen and in_gap and not acted and \
            not _named_at(cz, trig_kind, h, u, u, False, -1):
        # A hole fill with only causes the requester ignores pending before it (a
        # retry under way covered them), none naming it: as with no cause, a late
        # original or a timer's resend (the next request decides).
        cause = False
    rerun_dup = acted and seen and \
        prev_tx[i] == prev_req and ep_active[h] and u == ep_last[h] and min_gap[h] >= 0 and \
        ts[i] - ts[prev_req] < (u - trig_u[h] + 1) * min_gap[h]
    # So is a READ or atomic copy seen before, not only a quick one, past the PSN of a
    # pending cause the requester acts on, sooner than the shortest ACK timeout after
    # its previous copy (the network may have held it that long): a next request back
    # at the cause's PSN is the restart, and shows the copy was none. (Not other
    # requests: a restart's next packet is often lost before the tap too, leaving the
    # copy undecided; measured, holding them flagged 10% more frames for one more
    # exact capture in 400.)
    past = acted and trig_u[h] < u and seen and \
        ts[i] - ts[prev_tx[i]] < MIN_ACK_TIMEOUT_NS and c & (C_READ_REQ | C_ATOMIC_REQ) != 0
    # So is any copy (seen before, or filling a hole) past the PSN of a pending sequence
    # NAK, the only cause, sooner after that NAK than the requester's restart could
    # reach its PSN: the restart begins at the NAK's PSN (IBA 9.7.5.1.3) once the
    # requester has the NAK, each PSN after taking the port a packet time
    # (`_before_restart_reached`), so this copy was sent before the requester had the
    # NAK (a resend of an earlier run, or the original, delayed). A next request at the
    # NAK's PSN is the restart.
    early = not run and acted and (seen or in_gap) and trig_kind[h] == T_NAK and trig_u[h] < u and \
        _before_restart_reached(hc, cls, upsn, paylen, first_tx, ts, byte_gap, min_gap,
                                run_gap, react, pmtu, h, i, trig_row[h], trig_u[h], u)
    # So is a copy (or a hole fill) at the PSN of a NAK taken as ignored (a retry
    # covering it seemed under way) that no other cause names: the NAK acted on
    # after all (`_pick_cause`), or a late copy; a run going on from it in order tells.
    nak_redo = cause and trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 0] == u and \
        cz[h, CZ_NAK, 2] == 1 and not _named_at(cz, trig_kind, h, u, u, True, -1)
    # (An implied NAK names its hole, not the PSN of the response that showed it.)
    at_latest = trig_row[h] >= 0 and upsn[trig_row[h]] == u and not (
        trig_kind[h] & T_IMPLIED and cz[h, CZ_IMPLIED, 1] == trig_row[h] and
        not _named_at(cz, trig_kind, h, u, u, False, trig_row[h] - 1))
    held = not run and (((below or past) and not at_latest)
                        or early or (acted and not seen and in_gap) or rerun_dup or nak_redo)
    # A quick copy of the PSN an RNR NAK refused, before its timer: the restart for a
    # NAK naming it (the RNR NAK lost after the tap), or a copy delayed (what drew
    # that NAK). Held back too: only a run continuing it makes it the restart. So is
    # an unsure one (a lost READ response's restart would go on in order as well).
    # (Not when a sequence NAK naming it came after its previous copy and before the
    # RNR NAK: the requester had that NAK first and restarts at once, IBA 9.7.5.1.3;
    # the RNR NAK stops it only once it arrives.)
    nak_first = _nak_first(cz, trig_kind, prev_tx, rnr_row, i, h, u)
    if (quick or unsure) and not run and u == rnr_u[h] and in_wait and not nak_first:
        held = True
    return cause, rnr_early, in_gap, run, quick, unsure, below, stale, copy, held, early


def resent(upsn, syn, paylen, first_tx, prev_tx, ts, flags, ref, msg, counts, trig_kind, cz, rnr_u,
           rnr_row, rnr_first, head, react, prev_req, ep_row, delays, i, h, u, seen, cause, run,
           unsure):
    """A resend: flagged and counted (its episode comes next)."""
    if u == rnr_u[h] and 0 <= rnr_first[h] < rnr_row[h] and \
            not _rnr_over(syn, ts, rnr_row[h], i) and _rnr_over(syn, ts, rnr_first[h], i):
        # The refused PSN again, at least the timer of the first RNR NAK refusing it
        # after that one but sooner than the latest's: the latest never reached the
        # requester (lost after the tap; it would have waited again, IBA 9.7.5.2.8),
        # which waited on the first. This is that one's retry.
        if trig_kind[h] & T_RNR and cz[h, CZ_RNR, 0] == u:
            cz[h, CZ_RNR, 1] = rnr_first[h]
    heard = _resend_rnr_heard(upsn, ts, flags, react, rnr_u, rnr_row, ep_row, delays, h, u, run, i,
                              prev_req)
    if ((u == rnr_u[h] and not run) or heard) and not _rnr_over(syn, ts, rnr_row[h], i) and not (
            trig_kind[h] & T_RNR and cz[h, CZ_RNR, 0] == u and _rnr_waited(cz, syn, ts, h, i)) \
            and not _nak_first(cz, trig_kind, prev_tx, rnr_row, i, h, u):
        # Sooner than the RNR NAK's timer (IBA: wait at least that long): it never reached
        # the requester (lost after the tap), nor did an earlier one for u still pending
        # whose timer is over (else this is its retry): this answers another cause. (Not
        # a run through the refused PSN that may have left before the RNR NAK could reach
        # the requester, unless it goes on after: `_resend_rnr_heard`. Nor the restart
        # for a sequence NAK naming u that came before the RNR NAK: the requester
        # restarts on that NAK at once, and the RNR NAK, arriving after, sends it back to
        # u once its timer has run out: it stays pending, `episode_start`.)
        rnr_u[h] = -1
        trig_kind[h] &= ~T_RNR
    flags[i] |= F_RETX
    if unsure and not cause and not run:
        flags[i] |= F_AMBIGUOUS
    if not seen and not cause and not run and u < upsn[head[h]] and \
            ts[i] - ts[head[h]] < MIN_ACK_TIMEOUT_NS:
        # Below the first PSN the tap saw, sooner than any timer after it: the
        # original, delayed, or a timeout's resend of one sent before the capture.
        flags[i] |= F_AMBIGUOUS
    ref[i] = first_tx[i] if seen else -1
    msg[i] = msg[first_tx[i]] if seen else -1
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[i]


def skipped_resend(syn, prev_tx, ts, flags, episode, trig, reason, counts, rnr_u, rgaps, rnr_row, i,
                   h, u, seen, cause, run, quick, unsure, stale, copy, held, in_gap, prev_req,
                   first_tx, early):
    """The earlier resend run that skipped this PSN, if no restart can have sent it now."""
    late_rerun = -1
    late_amb = False
    # A copy no cause or run explains, not quick: a timeout restart, or the
    # late resend of a run that skipped it (decided at the next request).
    # (At a refused PSN after its RNR wait it is that RNR NAK's retry; a READ
    # or atomic an unseen implied NAK may explain is a resend, below.)
    # (A first copy at the tap filling a hole as well, after a pause as long as the
    # shortest ACK timeout: the timeout restart's first resend, its original lost
    # before the tap, if the next request continues it.)
    timer = (seen or (in_gap and prev_req >= 0 and
                      ts[i] - ts[prev_req] >= MIN_ACK_TIMEOUT_NS)) and \
        not cause and not run and not quick and not unsure and \
        not stale and not (
        u == rnr_u[h] and _rnr_over(syn, ts, rnr_row[h], i))
    lost_back = False
    # A first copy filling a hole, with no cause and continuing no run: inside a
    # run's skip it is that run's resend or the original, both delayed (flagged).
    # So with a NAK pending that no restart can have reached it for yet (`early`).
    old_fill = not seen and in_gap and not cause and not run
    if stale or copy or (held and (seen or early)) or timer or old_fill:
        # No restart can have sent it now: an earlier copy delayed before
        # the tap. If an earlier resend run skipped this PSN (a run resends
        # every PSN in order), it is that run's missing resend, late.
        for g in range(GAP_RING):
            if rgaps[h, g, 0] <= u < rgaps[h, g, 1]:
                if rgaps[h, g, 4] == SKIP_MAYBE and seen and flags[prev_tx[i]] & F_RETX:
                    # A run's possible skip (it may have resent the PSN unseen), and a
                    # later run resent it: this copy is the network's copy of that
                    # resend, or the first run's, late. Flagged, whichever it is taken for.
                    flags[i] |= F_AMBIGUOUS
                    continue
                if rgaps[h, g, 4] == SKIP_MAYBE and not seen:
                    continue    # (a possible skip counts only for a PSN the tap has seen)
                late_rerun = rgaps[h, g, 2]
                r0 = rgaps[h, g, 5]
                if timer and rgaps[h, g, 4] == SKIP_SURE and trig[r0] >= 0 and ts[i] - (
                        ts[trig[r0]] + (_rnr_wait_ns(syn[trig[r0]]) if reason[r0] == REASON_RNR
                                        else 0)) < MIN_ACK_TIMEOUT_NS:
                    # That run resent this PSN (unseen) once its cause had reached the
                    # requester (an RNR NAK's timer after it): too soon since for a
                    # timer to have fired. The late resend, not a timeout's restart.
                    timer = False
                resent_ep = episode[prev_tx[i]] if flags[prev_tx[i]] & F_RETX else -1
                # A run that may be late copies skipped nothing for sure;
                # once a later run has resent the PSN, this copy may as well
                # be the network's copy of that resend; and a first copy at
                # the tap may as well be the original, delayed (the run's
                # resend then lost before the tap).
                late_amb = rgaps[h, g, 4] != SKIP_SURE or not seen or resent_ep >= late_rerun
                if flags[first_tx[i]] & F_RETX:
                    # Nor had the tap seen the original (its first copy there a
                    # resend): this may be that original, delayed (however long ago
                    # its hole was shown: a network holds a copy as long as it will).
                    late_amb = True
                if resent_ep == late_rerun or (late_amb and prev_tx[i] == prev_req and
                                               resent_ep >= 0 and ts[i] == ts[prev_tx[i]]):
                    # The copy before was taken for that run's resend already; a
                    # run sends a PSN once, so one of the two is a copy: both flagged.
                    # (So with the copy right before, in the same nanosecond, taken
                    # for a later run's resend: the tap's clock cannot order the two.)
                    flags[prev_tx[i]] |= F_AMBIGUOUS
                if u >= rgaps[h, g, 3] and prev_tx[i] < rgaps[h, g, 5]:
                    counts[h, K_LOST_BEFORE] -= 1      # late, not lost
                    lost_back = True
                break
    return late_rerun, late_amb, timer, lost_back


def late_resend(paylen, first_tx, prev_tx, flags, ref, episode, msg, counts, lr_row, rnr_late,
                lr_next, lr_lost, lr_cause, i, h, u, consume, timer, held, late_rerun, late_amb,
                lost_back, b2b):
    """The late resend of a run that skipped this PSN (with no cause seen, or one
    pending for an earlier PSN: the next request decides whether it starts a run)."""
    if u == rnr_late[h, 0] and late_rerun == episode[rnr_late[h, 1]]:
        flags[i] |= F_RNR_RETRY     # the RNR retry, delayed
        rnr_late[h, 0] = -1
    if timer or held:
        lr_row[h] = i
        lr_next[h] = u + consume
        lr_lost[h] = lost_back
        lr_cause[h] = held
    flags[i] |= F_RETX
    if late_amb:
        flags[i] |= F_AMBIGUOUS
        x = prev_tx[i]
        if b2b and x == first_tx[x] and flags[x] & F_RETX:
            # Right behind the tap's first copy of its PSN, taken for a resend: that one
            # may be the original, delayed, and this the resend (as `network_copy`).
            flags[x] |= F_AMBIGUOUS
    if first_tx[i] < i:     # (the first copy at the tap repeats none the tap saw)
        ref[i] = first_tx[i]
        msg[i] = msg[first_tx[i]]
    episode[i] = late_rerun
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[i]
