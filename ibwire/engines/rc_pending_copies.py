"""RC engine rules: what a reliable request decides about a copy the previous one left
pending (decided at the next request of its half-connection, then dropped; see
`rc_pending` for the other rows left pending).

- A network copy (a quick copy, or one held back past a pending cause's PSN): the
  start of a resend run (a timeout's, or the pending cause's) if this request
  continues it in order, unless the copy repeated the request just before it.
- A timeout restart taken with doubt amid a run (or too soon for any timer): a
  copy if this request goes on with the run it cut short.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_READ_REQ, F_AMBIGUOUS, F_COPY, F_EPISODE, F_GAP, F_LATE, F_RETX, K_COPIES,
    K_GBN, K_LATE, K_LOST_BEFORE, K_RETX, K_RETX_BYTES, K_TIMEOUTS, MIN_ACK_TIMEOUT_NS,
    REASON_IMPLIED, REASON_NAK_SEQ, REASON_TIMEOUT,
)

from ibwire.engines.rc_episodes import _cause_episode, _timeout_episode
from ibwire.engines.rc_shared import (
    AMB_PIN, CZ_IMPLIED, CZ_NAK, CZ_RNR, SKIP_DOUBT, SKIP_MAYBE, T_NAK, T_RNR, _skipped_by_run,
    _skipping_run, _unskip,
)
from ibwire.engines.rc_unseen import _unseen_implied


def copy_decided(hc, cls, icrc, upsn, syn, paylen, first_tx, prev_tx, ts, flags, ref, episode, trig,
                 reason, gap, counts, high, acked, trig_u, trig_row, trig_kind, cz, rnr_u, rnr_late,
                 ep_active, ep_last, ep_end, ep_cur, ep_next, retrying, nak_new, rgaps, rgap_at,
                 copy_row, copy_next, copy_cause, soon, soon_rows, ep_amb, ep_row, delays,
                 back2back, pin, fifo, f_head, f_len, min_gap, rnr_first, ended, i, h, u, d, seen,
                 n_ep):
    """A network copy left pending: a resend run's start if this request continues it."""
    q = copy_row[h]
    if q >= 0:
        copy_row[h] = -1
        # (Promptly: a run goes out back to back; a pause as long as the shortest
        # ACK timeout means the requester's timer restarted at this request. A
        # first copy at the tap, its original lost before it, goes on with a run
        # as well; or it is the original, delayed: then flagged, below.)
        # (Not when a sequence NAK, or an implied NAK, seen since the copy names a PSN
        # from the copy's to this one, and no cause was pending at the copy: a restart
        # passes the tap after its NAK, so the copy was no restart, and this run is the
        # NAK's. Unless the copy before it was a restart taken with doubt: this copy
        # may be it.)
        nak_after = False
        for j in (CZ_NAK, CZ_IMPLIED):
            if not copy_cause[h] and trig_kind[h] & (1 << j) != 0 and cz[h, j, 1] > q and \
                    upsn[q] <= cz[h, j, 0] <= u and cz[h, j, 2] == 0:
                nak_after = True
        # (With the copy before taken with doubt, either of the two may be that restart
        # and the other the original, delayed: the copy goes on as a run's start, flagged.)
        nak_doubt = nak_after and flags[ref[q]] & F_AMBIGUOUS != 0
        nak_after = nak_after and not nak_doubt
        # (Nor when this request is at the PSN a NAK seen before the copy names, with
        # no cause pending at the copy: that NAK's restart; the NAK acknowledged the
        # copy's PSN, and no timer fires as soon as the copy came. Again unless the
        # copy before it was a restart taken with doubt. Nor a READ or atomic copy: the
        # NAK acknowledged its PSN, not its responses; one lost after the tap leaves
        # the requester a hole there, whose restart runs on in order to this PSN.)
        nak_next = not copy_cause[h] and not flags[ref[q]] & F_AMBIGUOUS and \
            trig_kind[h] & T_NAK != 0 and \
            cz[h, CZ_NAK, 0] == u and cz[h, CZ_NAK, 1] < q and cz[h, CZ_NAK, 2] == 0 and \
            not cls[q] & (C_READ_REQ | C_ATOMIC_REQ)
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
        elif in_order and u == copy_next[h] and not copy_cause[h] and \
                _late_restart(cls, upsn, paylen, first_tx, prev_tx, ts, flags, ref, episode, trig,
                              reason, gap, counts, high, ep_active, ep_last, ep_end, ep_cur,
                              ep_next, ep_row, ep_amb, cz, rgaps, rgap_at, ended, q, h, u):
            pass    # (the copy took over the latest run's start, a late copy after all)
        elif in_order:
            # The next request resends the PSN after it (or a later one, those
            # between lost before the tap; no ACK let a restart begin past the
            # copy): an in-order run, which the network does not make. The copy
            # started a resend run whose cause the tap did not see (e.g. a
            # response the capture missed).
            flags[q] = (flags[q] & ~(F_COPY | F_AMBIGUOUS)) | F_RETX | F_EPISODE
            if nak_doubt:
                flags[q] |= F_AMBIGUOUS     # (in order or not: that NAK's restart)
            elif delays[h] or u > copy_next[h] or not seen:
                # ... unless two late copies in a row: this network delays
                # (or the run skips: a duplicate, then another resend; this
                # request then is as much in doubt: the run's, or a late copy too).
                flags[q] |= F_AMBIGUOUS
                if u > copy_next[h]:
                    flags[i] |= F_AMBIGUOUS
            elif not copy_cause[h] and ts[q] - ts[first_tx[q]] < MIN_ACK_TIMEOUT_NS:
                # Too soon for the requester's timer: a cause the tap missed,
                # or two late copies in a row.
                flags[q] |= F_AMBIGUOUS
                soon[h] = 1
                soon_rows[h, 0] = q
            counts[h, K_COPIES] -= 1
            ref[q] = first_tx[q]
            if ep_active[h] and upsn[q] < ep_next[h] < ep_end[h]:
                # The run in progress, cut short, as in `episode_start`: a later copy of
                # a PSN it had still to resend may be its resend, delayed.
                _skipped_by_run(h, ep_next[h], ep_end[h], ep_cur[h], q, rgaps, rgap_at,
                                SKIP_DOUBT)
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
                                      nak_new, rnr_u, rnr_late, retrying, rgaps, rgap_at,
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
            if upsn[q] == rnr_u[h] and trig_kind[h] & T_RNR and cz[h, CZ_RNR, 0] == upsn[q] \
                    and cz[h, CZ_RNR, 1] > q > rnr_first[h] >= 0:
                # The refused PSN's copy amid its RNR wait was none of the requester's:
                # the RNR NAK it drew only restarted that wait, whose retry answers the
                # first RNR NAK still.
                cz[h, CZ_RNR, 1] = rnr_first[h]
    return n_ep


@njit
def _late_restart(cls, upsn, paylen, first_tx, prev_tx, ts, flags, ref, episode, trig, reason, gap,
                  counts, high, ep_active, ep_last, ep_end, ep_cur, ep_next, ep_row, ep_amb, cz,
                  rgaps, rgap_at, ended, q, h, u):
    """Copy q, continued in order by this request (PSN u), repeats the NAK's restart
    that began the latest run, a run that never went on: new data at the front ended
    it at once. Go-back-N resends the PSN after its restart next, so that restart was
    a late copy (the original or an earlier resend, delayed past the NAK), and q is
    the requester's restart: the episode moves to q. Returns whether it did."""
    r = ep_row[h]
    j = ended[h, 0]
    # (Sooner than any timer after that start: q answers no timeout of its own. No
    # NAK since that start for another PSN: this request may be its restart. Not a
    # READ or atomic, whose restart holds its responses, `pin`.)
    if not (0 <= r < j < q and not ep_active[h] and episode[r] == ep_cur[h] and
            flags[r] & F_EPISODE and reason[r] == REASON_NAK_SEQ and trig[r] >= 0 and
            upsn[trig[r]] == upsn[r] == upsn[q] == ep_last[h] and
            ts[q] - ts[r] < MIN_ACK_TIMEOUT_NS and
            (cz[h, CZ_NAK, 1] < r or cz[h, CZ_NAK, 0] == upsn[r]) and
            not cls[q] & (C_READ_REQ | C_ATOMIC_REQ)):
        return False
    # The late copy: the original, delayed, when the tap never saw it before (the
    # first copy at the tap a resend filling its hole), else a copy.
    flags[r] &= ~(F_RETX | F_EPISODE | F_AMBIGUOUS)
    counts[h, K_RETX] -= 1
    counts[h, K_RETX_BYTES] -= paylen[r]
    if first_tx[r] == r or flags[first_tx[r]] & F_RETX:
        flags[r] |= F_LATE
        counts[h, K_LATE] += 1
    else:
        flags[r] |= F_COPY
        ref[r] = prev_tx[r]
        counts[h, K_COPIES] += 1
    flags[q] = (flags[q] & ~(F_COPY | F_AMBIGUOUS)) | F_RETX | F_EPISODE
    ref[q] = first_tx[q]
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[q]
    episode[q] = episode[r]
    trig[q] = trig[r]
    reason[q] = reason[r]
    episode[r] = -1
    trig[r] = -1
    reason[r] = 0
    # The new data that ended the run skipped nothing: no resends lost before the tap.
    gap[j] -= ended[h, 1]
    if gap[j] <= 0:
        flags[j] &= ~F_GAP
    counts[h, K_LOST_BEFORE] -= ended[h, 1]
    _unskip(rgaps, rgap_at, h, ended[h, 2])
    ended[h, 0] = -1
    # The run goes on from q, up to the front as it is now.
    ep_active[h] = True
    ep_end[h] = high[h]
    ep_last[h] = upsn[q]
    ep_next[h] = u
    ep_row[h] = q
    ep_amb[h] = False
    return True


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
