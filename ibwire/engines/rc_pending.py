"""RC engine rules: what a reliable request decides about a row the previous one left
pending (each is decided at the next request of its half-connection, then dropped).

- A late original (a hole filled with no cause, or held back while a cause was
  pending): the start of a resend run (a timeout's, or the pending cause's with
  its first resends lost before the tap) if this request continues it in order,
  promptly (a run goes out back to back; a pause as long as the shortest ACK
  timeout is a restart of its own).
- A run packet past the run's next PSN: a late copy that arrived amid the run,
  not a skip, if this request resumes the run at that PSN (or past it, below the
  packet past) soon after and no cause names that PSN (with one pending for an
  earlier PSN, only if the copy is fresh).
- The late resend of a run that skipped its PSN: the start of a timeout run if
  this request resends the PSN after it (not when it repeated, at once, the run in
  progress's latest resend and this request goes on with that run).
- A timeout restart taken with doubt amid a run (or too soon for any timer): a
  copy if this request goes on with the run it cut short.
- A network copy (a quick copy, or one held back past a pending cause's PSN): the
  start of a resend run (a timeout's, or the pending cause's) if this request
  continues it in order, unless the copy repeated the request just before it.
- A restart at a PSN that no cause proved yet: shown one (`known`) if this request
  continues it in order.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_READ_REQ, F_AMBIGUOUS, F_COPY, F_EPISODE, F_GAP, F_LATE, F_RETX, F_RNR_RETRY,
    GAP_RING, K_COPIES, K_GBN, K_LATE, K_LOST_BEFORE, K_RETX, K_RETX_BYTES, K_TIMEOUTS,
    MIN_ACK_TIMEOUT_NS, REASON_IMPLIED, REASON_NAK_SEQ, REASON_TIMEOUT,
)

from ibwire.engines.rc_episodes import _cause_episode, _timeout_episode
from ibwire.engines.rc_shared import (
    AMB_PIN, CZ_IMPLIED, CZ_NAK, CZ_RNR, SKIP_MAYBE, T_IMPLIED, T_NAK, T_RNR, _skipped_by_run,
    _skipped_since, _skipping_run,
)
from ibwire.engines.rc_unseen import _unseen_implied


def late_decided(hc, cls, icrc, upsn, syn, paylen, ts, flags, episode, trig, reason, counts, high,
                 trig_u, trig_row, trig_kind, cz, rnr_u, ep_active, ep_last, ep_end, ep_cur,
                 ep_next, retrying, nak_new, gaps, rgaps, rgap_at, late_row, late_next, late_cause,
                 soon, soon_rows, ep_amb, ep_row, delays, pin, fifo, f_head, f_len, i, h, u, d,
                 seen, n_ep):
    """A late original left pending: a resend run's start if this request continues it."""
    p = late_row[h]
    if p >= 0:
        late_row[h] = -1
        # The PSN after it, or a later one (those between lost before the tap),
        # promptly (see copy_decided). Not a later one the tap never saw either: a
        # second late original, the network delaying both, rather than a run whose
        # resends between were lost too.
        too_soon = False
        if not late_cause[h]:
            for g in range(GAP_RING):
                if gaps[h, g, 0] <= upsn[p] < gaps[h, g, 1] and \
                        ts[p] - ts[gaps[h, g, 2]] < MIN_ACK_TIMEOUT_NS:
                    too_soon = True
        # Too soon for the requester's timer, and a sequence NAK naming its PSN seen
        # since: the NAK's restart passes the tap after the NAK, so the hole fill
        # was the late original and this run is that restart (its first packet
        # lost or delayed before the tap).
        nak_after = too_soon and trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 1] > p and \
            cz[h, CZ_NAK, 0] == upsn[p] and cz[h, CZ_NAK, 2] == 0
        if u >= late_next[h] and d < 0 and ts[i] - ts[p] < MIN_ACK_TIMEOUT_NS and \
                (u == late_next[h] or seen) and not nak_after:
            flags[p] = (flags[p] & ~(F_LATE | F_AMBIGUOUS)) | F_RETX | F_EPISODE
            if too_soon:
                # A cause the tap missed, or two late copies in a row.
                flags[p] |= F_AMBIGUOUS
                soon[h] = 1
                soon_rows[h, 0] = p
            counts[h, K_LATE] -= 1
            counts[h, K_LOST_BEFORE] += 1
            if late_cause[h] and 0 <= trig_u[h] < upsn[p]:
                if delays[h]:
                    flags[p] |= F_AMBIGUOUS     # this network delays copies
                elif not seen:
                    # This one fills the hole too: two late originals, delayed
                    # together, look the same; a third packet going on in order
                    # settles it (as for a run too soon for a timer).
                    flags[p] |= F_AMBIGUOUS
                    soon[h] = 1
                    soon_rows[h, 0] = p
                if upsn[p] == rnr_u[h]:
                    flags[p] |= F_RNR_RETRY     # the refused PSN's first resend
                n_ep = _cause_episode(p, h, u, n_ep, counts, paylen, reason, episode,
                                      trig, ep_cur, ep_active, ep_end, ep_last,
                                      ep_next, high, upsn, ts, syn, trig_u, trig_row, trig_kind, cz,
                                      nak_new, rnr_u, retrying, rgaps, rgap_at,
                                      True, hc, cls, icrc, flags, pin, fifo,
                                      f_head, f_len)
                ep_amb[h] = delays[h]
                ep_row[h] = p
            else:
                n_ep = _timeout_episode(p, h, u, n_ep, counts, paylen, reason, episode,
                                        ep_cur, ep_active, ep_end, ep_last, ep_next,
                                        retrying, high, upsn, hc, cls, icrc, ts,
                                        flags, trig, pin, syn)
                ep_row[h] = p       # (the retry under way starts here, `_retry_covers`)
            if u > late_next[h]:
                _skipped_by_run(h, late_next[h], u, ep_cur[h], i, rgaps, rgap_at, SKIP_MAYBE)
    return n_ep


def jump_decided(upsn, paylen, first_tx, prev_tx, ts, flags, episode, gap, counts, trig_u,
                 trig_kind, cz, nak_u, rnr_u, ep_active, ep_last, ep_cur, ep_next, rgaps, rgap_at,
                 jmp, delays, i, h, u, d, seen):
    """A run packet past the run's next PSN: a late copy if the run resumes there now."""
    r = jmp[h, 0]
    if r >= 0:
        jmp[h, 0] = -1
        # A restart begins at the PSN its cause names (one from an earlier PSN would
        # resend what the run has just sent). An implied NAK's PSN is only known as
        # the lowest pending, so any at or below this one may explain it. With a
        # cause pending for an earlier PSN, the packet past must also be fresh to be
        # a late copy: a first copy (a late original), or one sent less than the
        # shortest ACK timeout before (else the run jumped, its next PSN delayed).
        # (Not an implied NAK the requester ignores, a retry covering it: no restart
        # answers it.)
        cause_named = trig_u[h] == u or nak_u[h] == u or rnr_u[h] == u or \
            (0 <= trig_u[h] <= u and trig_kind[h] & T_IMPLIED != 0 and cz[h, CZ_IMPLIED, 2] == 0)
        fresh = first_tx[r] == r or ts[r] - ts[prev_tx[r]] < MIN_ACK_TIMEOUT_NS
        # A sequence NAK for an earlier PSN that came after the packet past, and that
        # the requester acts on: its restart may be what resends this PSN (its first
        # packets lost before the tap), so the resume shows nothing.
        nak_since = trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 1] > r and \
            0 <= cz[h, CZ_NAK, 0] < u and cz[h, CZ_NAK, 2] == 0
        if seen and d < 0 and jmp[h, 2] <= u < upsn[r] and episode[r] == ep_cur[h] and \
                ep_active[h] and ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS and \
                fresh and (not 0 <= trig_u[h] <= u or not cause_named) and not nak_since:
            # The run resumes at its next PSN (or past it, below the packet past: those
            # between lost before the tap), with no cause naming that PSN and too
            # soon for a timer: it never jumped. The packet past it was a late
            # copy that arrived amid the run (a run goes in PSN order): of an
            # earlier run's resend, if that run skipped its PSN (it stays a resend,
            # in that run's episode), else of the original.
            late_of = _skipping_run(rgaps, h, upsn[r], jmp[h, 3], ep_cur[h])
            counts[h, K_LOST_BEFORE] -= gap[r] + jmp[h, 4]
            gap[r] = 0
            if late_of >= 0:
                flags[r] = (flags[r] & ~F_GAP) | F_AMBIGUOUS
                episode[r] = late_of
            else:
                flags[r] = (flags[r] & ~(F_RETX | F_GAP | F_AMBIGUOUS)) | F_LATE
                if first_tx[r] < r and not flags[prev_tx[r]] & F_RETX:
                    # A second copy of an original: the network duplicated it,
                    # or it was the run's resend and the run's next PSN came late.
                    flags[r] |= F_AMBIGUOUS
                counts[h, K_RETX] -= 1
                counts[h, K_RETX_BYTES] -= paylen[r]
                counts[h, K_LATE] += 1
                episode[r] = -1
            if jmp[h, 3] >= 0 and (rgap_at[h] - 1) % GAP_RING == jmp[h, 3]:
                rgaps[h, jmp[h, 3], :] = -1
                rgap_at[h] -= 1
            ep_last[h] = jmp[h, 1]
            ep_next[h] = jmp[h, 2]
            delays[h] = True


def late_resend_decided(hc, cls, icrc, upsn, syn, paylen, prev_tx, ts, flags, episode, trig, reason,
                        counts, high, acked, trig_u, trig_row, trig_kind, cz, rnr_u, ep_active,
                        ep_last, ep_end, ep_cur, ep_next, retrying, nak_new, rgaps, rgap_at, lr_row,
                        lr_next, lr_lost, lr_cause, ep_amb, ep_row, delays, pin, fifo, f_head,
                        f_len, i, h, u, d, seen, n_ep):
    """A late resend left pending: a run's start if this one resends the next PSN (the
    pending cause's, its first resends lost before the tap; else a timeout's)."""
    r = lr_row[h]
    if r >= 0:
        lr_row[h] = -1
        # Right after the run in progress resent the same PSN (sooner than any timer),
        # a request going on with that run shows no restart: the run never stopped
        # (the late resend, or a copy of the run's resend, stays as it was). So for a
        # copy of any PSN the run has resent, not only its latest.
        q = prev_tx[r]
        goes_on = ep_active[h] and u == ep_next[h] and upsn[r] <= ep_last[h] and q < r and \
            flags[q] & F_RETX and episode[q] == ep_cur[h] and ts[r] - ts[q] < MIN_ACK_TIMEOUT_NS
        # (Promptly, as in `copy_decided`: after a pause as long as the shortest ACK
        # timeout, this request is the timer's own restart.)
        in_order = seen and d < 0 and upsn[r] < u <= lr_next[h] and not goes_on and \
            ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS
        # Held while a cause for an earlier PSN was pending: that cause's restart, in
        # order (a skipped resend's late copy comes alone), unless this network has
        # shown copies delayed past later ones; else the skipped resend, delayed.
        # (Promptly a later PSN, those between lost before the tap, counts too when no
        # restart could begin there, no ACK having passed the late resend, and no
        # earlier run skipped it: else it may be that run's resend, late too. Only
        # runs later than the one whose resend of that PSN it follows count.)
        prev_ep = episode[prev_tx[i]] if seen and flags[prev_tx[i]] & F_RETX else -1
        past = u > lr_next[h] and acked[h] <= upsn[r] and not goes_on and \
            ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS and not _skipped_since(rgaps, h, u, prev_ep)
        by_cause = lr_cause[h] and (in_order or (seen and d < 0 and past)) and \
            0 <= trig_u[h] <= upsn[r] and trig_kind[h] != 0 and not delays[h]
        if lr_cause[h] and not by_cause:
            delays[h] = True
        by_timer = not lr_cause[h] and seen and d < 0 and (in_order or past)
        if by_cause or by_timer:
            # The next request resends the PSN after it (or one inside its READ,
            # restarted part-way): a restart there (a run goes on in order), not an
            # old run's resend.
            flags[r] = (flags[r] & ~(F_AMBIGUOUS | F_RNR_RETRY)) | F_EPISODE
            counts[h, K_RETX] -= 1
            counts[h, K_RETX_BYTES] -= paylen[r]
            if lr_lost[h]:
                counts[h, K_LOST_BEFORE] += 1
            if by_cause:
                # (Sure: the next request continued it in order.)
                n_ep = _cause_episode(r, h, u, n_ep, counts, paylen, reason, episode, trig,
                                      ep_cur, ep_active, ep_end, ep_last, ep_next, high, upsn,
                                      ts, syn, trig_u, trig_row, trig_kind, cz, nak_new, rnr_u,
                                      retrying, rgaps, rgap_at, in_order, hc, cls, icrc, flags,
                                      pin, fifo, f_head, f_len)
                ep_row[h] = r
            else:
                n_ep = _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode, ep_cur,
                                        ep_active, ep_end, ep_last, ep_next, retrying, high,
                                        upsn, hc, cls, icrc, ts, flags, trig, pin, syn)
                ep_row[h] = r
            ep_amb[h] = False
            if u > lr_next[h]:
                _skipped_by_run(h, lr_next[h], u, ep_cur[h], i, rgaps, rgap_at, SKIP_MAYBE)
    return n_ep


def copy_decided(hc, cls, icrc, upsn, syn, paylen, first_tx, ts, flags, ref, episode, trig, reason,
                 counts, high, acked, trig_u, trig_row, trig_kind, cz, rnr_u, ep_active, ep_last,
                 ep_end, ep_cur, ep_next, retrying, nak_new, rgaps, rgap_at, copy_row, copy_next,
                 copy_cause, soon, soon_rows, ep_amb, ep_row, delays, back2back, pin, fifo, f_head,
                 f_len, min_gap, i, h, u, d, seen, n_ep):
    """A network copy left pending: a resend run's start if this request continues it."""
    q = copy_row[h]
    if q >= 0:
        copy_row[h] = -1
        # (Promptly: a run goes out back to back; a pause as long as the shortest
        # ACK timeout means the requester's timer restarted at this request. A
        # first copy at the tap, its original lost before it, goes on with a run
        # as well; or it is the original, delayed: then flagged, below.)
        # (Not when a sequence NAK seen since the copy names a PSN from the copy's to
        # this one, and no cause was pending at the copy: a restart passes the tap
        # after its NAK, so the copy was no restart, and this run is the NAK's. Unless
        # the copy before it was a restart taken with doubt: this copy may be it.)
        nak_after = not copy_cause[h] and not flags[ref[q]] & F_AMBIGUOUS and \
            trig_kind[h] & T_NAK != 0 and \
            cz[h, CZ_NAK, 1] > q and upsn[q] <= cz[h, CZ_NAK, 0] <= u and cz[h, CZ_NAK, 2] == 0
        # (Nor when this request is at the PSN a NAK seen before the copy names, with
        # no cause pending at the copy: that NAK's restart; the NAK acknowledged the
        # copy's PSN, and no timer fires as soon as the copy came. Again unless the
        # copy before it was a restart taken with doubt.)
        nak_next = not copy_cause[h] and not flags[ref[q]] & F_AMBIGUOUS and \
            trig_kind[h] & T_NAK != 0 and \
            cz[h, CZ_NAK, 0] == u and cz[h, CZ_NAK, 1] < q and cz[h, CZ_NAK, 2] == 0
        # (A later PSN, those between lost before the tap, only if the requester had
        # the time to send them all since the copy, at the least pace it has shown.)
        in_order = d < 0 and not back2back[h] and not nak_after and not nak_next and \
            ts[i] - ts[q] < MIN_ACK_TIMEOUT_NS and \
            (u == copy_next[h] or (u > copy_next[h] and acked[h] <= upsn[q] and
                                   ts[i] - ts[q] >= (u - copy_next[h]) * min_gap[h]))
        if in_order and ep_active[h] and u == ep_next[h] and upsn[q] < ep_last[h]:
            # It goes on with the run in progress, which had passed the copy's PSN:
            # that run never stopped. The copy is the network's, or the delayed
            # resend of an earlier run (one the tap cannot place): a resend in no
            # episode, flagged.
            flags[q] = (flags[q] & ~F_COPY) | F_RETX | F_AMBIGUOUS
            counts[h, K_COPIES] -= 1
            counts[h, K_RETX] += 1
            counts[h, K_RETX_BYTES] += paylen[q]
            ref[q] = first_tx[q]
        elif in_order:
            # The next request resends the PSN after it (or a later one, those
            # between lost before the tap; no ACK let a restart begin past the
            # copy): an in-order run, which the network does not make. The copy
            # started a resend run whose cause the tap did not see (e.g. a
            # response the capture missed).
            flags[q] = (flags[q] & ~(F_COPY | F_AMBIGUOUS)) | F_RETX | F_EPISODE
            if delays[h] or u > copy_next[h] or not seen:
                # ... unless two late copies in a row: this network delays
                # (or the run skips: a duplicate, then another resend).
                flags[q] |= F_AMBIGUOUS
            elif not copy_cause[h] and ts[q] - ts[first_tx[q]] < MIN_ACK_TIMEOUT_NS:
                # Too soon for the requester's timer: a cause the tap missed,
                # or two late copies in a row.
                flags[q] |= F_AMBIGUOUS
                soon[h] = 1
                soon_rows[h, 0] = q
            counts[h, K_COPIES] -= 1
            ref[q] = first_tx[q]
            if copy_cause[h] and upsn[q] == rnr_u[h] and cz[h, CZ_RNR, 1] < q:
                # The restart at the refused PSN before the RNR timer: the RNR NAK
                # never reached the requester; it answers the other cause. (One
                # since refused this restart: its retry is still to come.)
                rnr_u[h] = -1
                trig_kind[h] &= ~T_RNR
            if copy_cause[h] and 0 <= trig_u[h] <= upsn[q] and trig_kind[h] != 0:
                n_ep = _cause_episode(q, h, u, n_ep, counts, paylen, reason, episode,
                                      trig, ep_cur, ep_active, ep_end, ep_last,
                                      ep_next, high, upsn, ts, syn, trig_u, trig_row, trig_kind, cz,
                                      nak_new, rnr_u, retrying, rgaps, rgap_at,
                                      u <= copy_next[h], hc, cls, icrc, flags, pin,
                                      fifo, f_head, f_len)
            else:
                n_ep = _timeout_episode(q, h, u, n_ep, counts, paylen, reason, episode,
                                        ep_cur, ep_active, ep_end, ep_last, ep_next,
                                        retrying, high, upsn, hc, cls, icrc, ts,
                                        flags, trig, pin, syn)
            ep_amb[h] = delays[h]
            ep_row[h] = q
            if u > copy_next[h]:
                # (The PSNs between, lost or delayed before the tap: a later copy of
                # one may be this run's resend, late; only a possible skip, as for a
                # run's jump past its front, `rc_requests.new_request`.)
                _skipped_by_run(h, copy_next[h], u, ep_cur[h], i, rgaps, rgap_at, SKIP_MAYBE)
        else:
            delays[h] = True    # the network's copy: this network delays copies
    return n_ep


def amb_run_decided(hc, cls, icrc, upsn, syn, paylen, prev_tx, ts, flags, ref, episode, trig,
                    reason, counts, ep_active, ep_last, ep_end, ep_cur, ep_next, rgaps, rgap_at,
                    ep_amb, ep_row, amb_run, pin, i, h, u, d):
    """A timeout restart taken with doubt while a run was under way: a copy if this
    request goes on with that run; else a restart, and for a READ or atomic, maybe
    the implied NAK of a response lost after the tap (`_unseen_implied`)."""
    r = amb_run[h, 0]
    if r >= 0:
        amb_run[h, 0] = -1
        # (Doubtful too: a timeout restart sooner than any timer after the PSN's last
        # copy, as no cause the requester acts on is pending; not a READ or atomic,
        # whose response lost after the tap may be an implied NAK, nor a PSN an
        # earlier run skipped, whose resend it may be, delayed, unless it repeats
        # the latest packet of the run it cut short.)
        q = prev_tx[r]
        no_timer = reason[r] == REASON_TIMEOUT and q < r and \
            ts[r] - ts[q] < MIN_ACK_TIMEOUT_NS and not cls[r] & (C_READ_REQ | C_ATOMIC_REQ) and (
                (episode[q] == amb_run[h, 1] and upsn[r] == amb_run[h, 2]) or
                _skipping_run(rgaps, h, upsn[r], -1, episode[r]) < 0)
        if d < 0 and u == amb_run[h, 3] and episode[r] == ep_cur[h] and \
                (flags[r] & F_AMBIGUOUS or no_timer) and ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS:
            # The request after it resends the PSN the earlier run had reached, at
            # once: a restart goes on from its own PSN, so that run never stopped,
            # and the doubtful start was the network's copy of an earlier packet.
            flags[r] = (flags[r] & ~(F_RETX | F_EPISODE)) | F_COPY
            ref[r] = prev_tx[r]
            episode[r] = -1
            reason[r] = 0
            trig[r] = -1
            counts[h, K_RETX] -= 1
            counts[h, K_RETX_BYTES] -= paylen[r]
            counts[h, K_GBN] -= 1
            counts[h, K_TIMEOUTS] -= 1
            counts[h, K_COPIES] += 1
            ep_active[h] = True
            ep_cur[h] = amb_run[h, 1]
            ep_last[h] = amb_run[h, 2]
            ep_next[h] = amb_run[h, 3]
            ep_end[h] = amb_run[h, 4]
            rgap_at[h] = amb_run[h, 5]      # (the skip it recorded was none)
            ep_row[h] = amb_run[h, 6]
            ep_amb[h] = False
        elif cls[r] & (C_READ_REQ | C_ATOMIC_REQ) and reason[r] == REASON_TIMEOUT:
            # Asked as at the restart: with the hold of the restart before it (kept
            # in `amb_run`), not its own, which came after every response it weighs.
            t = _unseen_implied(hc, cls, upsn, syn, icrc, ts, flags, counts, amb_run[:, AMB_PIN:],
                                reason, trig, r, h, upsn[r])
            if t >= 0:
                trig[r] = t
                reason[r] = REASON_IMPLIED
                counts[h, K_TIMEOUTS] -= 1


def restart_left(upsn, first_tx, flags, reason, high, ep_active, ep_next, ep_row, h, u, d,
                 prev_req):
    """New data, or a PSN not past it, right after a NAK's restart that was the first
    copy at the tap of its PSN, with PSNs after it left to resend: that restart is in
    doubt."""
    # Go-back-N resends every PSN from the restart on, back to back, before any new
    # one, so either those were lost before the tap, or the hole fill was the
    # original, delayed past the NAK (the requester never got the NAK, or not yet).
    # (A PSN further on in the run: the run going on, one resend lost before the tap.)
    if prev_req >= 0 and ep_row[h] == prev_req and ep_active[h] and \
            (d >= 0 or u <= upsn[prev_req]) and \
            first_tx[prev_req] == prev_req and reason[prev_req] == REASON_NAK_SEQ and \
            ep_next[h] < high[h]:
        flags[prev_req] |= F_AMBIGUOUS


def restart_shown(known, known_next, ep_active, ep_next, h, u, d):
    """A restart continued by this request in order: the requester did restart there
    (for a NAK at a PSN an earlier run skipped; for the READs before it, an implied
    NAK's: see episode_start)."""
    for j in range(2):
        if known_next[h, j] >= 0:
            if d < 0 and ep_active[h] and u == ep_next[h] and known_next[h, j] > known[h, j]:
                known[h, j] = known_next[h, j]
            known_next[h, j] = -1
