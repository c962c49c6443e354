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
  earlier PSN, only if the copy is fresh; a NAK too recent for the requester to
  have had it, by the reactions it has shown, names nothing). A quick copy of the
  run's latest packet right behind the packet past defers this to the request
  after that copy. So is a packet past that came too soon after the run's previous
  one for the run to have sent the packets between, or that the run could have
  reached only with two or more resends lost before the tap (an original held,
  `rc_run_shape._costly_skip`), whatever request follows.
- A run resumed after such a late copy: the copy was the run's own jump after all,
  the resume its resend delayed, if the request after the resume does not go on
  with the run (`resume_decided`; also at the capture's end).
- New data while a run had still to reach the front (its resends up there taken
  as lost before the tap): the original, delayed past the run's start, if this
  request resumes the run at its next PSN promptly, no cause pending at or before
  it (the requester sends no new data until its run is through).
- The late resend of a run that skipped its PSN: the start of a timeout run if
  this request resends the PSN after it (not when it repeated, at once, the run in
  progress's latest resend and this request goes on with that run; nor past it
  sooner than the requester could have sent the PSNs between, `rc_run_shape`; past
  it onto a PSN an earlier run skipped only at the oldest PSN not acknowledged after
  a timer-long pause, on a network that has shown no delayed copy).
- A run that stopped short of the front (new data, or nothing for as long as the
  shortest ACK timeout), its packets copies of PSNs whose originals the tap never
  saw, or new data past two or more PSNs whose resends it would all have lost:
  in doubt (`restart_left`; also at the capture's end, however soon).
- Copies (a network copy, a timeout restart taken with doubt amid a run):
  `rc_pending_copies`.
- A restart at a PSN that no cause proved yet: shown one (`known`) if this request
  continues it in order.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from ibwire.analysis.rc_rules import (
    F_AMBIGUOUS, F_EPISODE, F_GAP, F_LATE, F_RETX, F_RNR_RETRY, K_LATE, K_LOST_BEFORE,
    K_RETX, K_RETX_BYTES, MIN_ACK_TIMEOUT_NS,
)
from ibwire.engines.rc_episodes import _cause_episode, _timeout_episode
from ibwire.engines.rc_shared import (
    CZ_IMPLIED, CZ_NAK, SKIP_MAYBE, T_IMPLIED, T_NAK, _hole_recent, _named_at, _originals_in,
    _pace, _port_pace, _skip_row, _skipped_by_run, _skipped_since,
    _skipping_run, _unskip,
)
from ibwire.engines.rc_run_shape import (
    COSTLY_SKIP, _costly_skip, _doubt_short_run, _paused_before, _run_paced, _too_soon,
)


def late_decided(hc, cls, icrc, upsn, syn, paylen, ts, flags, episode, trig, reason, counts, high,
                 trig_u, trig_row, trig_kind, cz, rnr_u, rnr_late, ep_active, ep_last, ep_end,
                 ep_cur, ep_next, retrying, nak_new, gaps, rgaps, rgap_at, late_row, late_next,
                 late_cause, soon, soon_rows, ep_amb, ep_row, delays, pin, fifo, f_head, f_len, i,
                 h, u, d, seen, n_ep):
    """A late original left pending: a resend run's start if this request continues it."""
    p = late_row[h]
    if p >= 0:
        late_row[h] = -1
        # The PSN after it, or a later one (those between lost before the tap),
        # promptly (see copy_decided). Not a later one the tap never saw either: a
        # second late original, the network delaying both, rather than a run whose
        # resends between were lost too.
        too_soon = not late_cause[h] and _hole_recent(gaps, ts, h, upsn[p], p)
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
                                      nak_new, rnr_u, rnr_late, retrying, rgaps, rgap_at,
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


def jump_decided(hc, cls, upsn, paylen, first_tx, prev_tx, ts, flags, episode, gap, counts,
                 trig_u, trig_row, trig_kind, cz, nak_u, rnr_u, ep_active, ep_last, ep_cur,
                 ep_next, rgaps, rgap_at, jmp, delays, min_gap, run_gap, byte_gap, react,
                 copy_row, i, h, u, d, seen, prev_req):
    """A run packet past the run's next PSN: a late copy if the run resumes there now."""
    r = jmp[h, 0]
    if r >= 0:
        jmp[h, 0] = -1
        jd_copy = jmp[h, 5]
        jmp[h, 5] = -1
        if jd_copy < 0 and seen and prev_req == r and u == jmp[h, 1] and ep_active[h] and \
                episode[r] == ep_cur[h] and ts[i] - ts[prev_tx[i]] < MIN_ACK_TIMEOUT_NS:
            # A quick copy of the run's latest packet right behind the packet past (the
            # network's duplicate, or a restart there): the request after it decides.
            jmp[h, 0] = r
            jmp[h, 5] = i
            r = -1
    if r >= 0:
        # A restart begins at the PSN its cause names (one from an earlier PSN would
        # resend what the run has just sent). An implied NAK's PSN is only known as
        # the lowest pending, so any at or below this one may explain it. With a
        # cause pending for an earlier PSN, the packet past must also be fresh to be
        # a late copy: a first copy (a late original), or one sent less than the
        # shortest ACK timeout before (else the run jumped, its next PSN delayed).
        # (Not an implied NAK the requester ignores, a retry covering it: no restart
        # answers it.)
        # (Not one so recent that a run from its PSN, at the requester's fastest pace
        # yet, could not have sent the packets before this one.)
        jd_gap = _pace(min_gap, run_gap, h)
        # (Not a NAK naming it less than a quarter of the requester's fastest reaction
        # to one, out of three or more, before this request: this was sent before it
        # had the NAK. Reactions vary with what the requester was sending: an early
        # slow one can be ten times a later one, hence the margin and the count.)
        jd_soon = react[h, 1] >= 3 and cz[h, CZ_NAK, 0] == u and \
            4 * (ts[i] - ts[cz[h, CZ_NAK, 1]]) < react[h, 0]
        cause_named = (trig_u[h] == u and not (jd_soon and trig_kind[h] == T_NAK)) or \
            (nak_u[h] == u and not jd_soon) or rnr_u[h] == u or \
            (0 <= trig_u[h] <= u and trig_kind[h] & T_IMPLIED != 0 and cz[h, CZ_IMPLIED, 2] == 0
             and not ts[i] - ts[trig_row[h]] < jd_gap * _originals_in(
                 hc, cls, upsn, first_tx, h, trig_u[h], u, i - 1))
        # (Or the resend of an earlier run that skipped its PSN less than that before,
        # delayed: the tap never saw the copy it follows.)
        jd_skip = _skip_row(rgaps, h, upsn[r], jmp[h, 3], ep_cur[h])
        fresh = first_tx[r] == r or ts[r] - ts[prev_tx[r]] < MIN_ACK_TIMEOUT_NS or \
            (jd_skip >= 0 and ts[r] - ts[jd_skip] < MIN_ACK_TIMEOUT_NS)
        # A sequence NAK for an earlier PSN that came after the packet past, and that
        # the requester acts on: its restart may be what resends this PSN (its first
        # packets lost before the tap), so the resume shows nothing.
        nak_since = trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 1] > r and \
            0 <= cz[h, CZ_NAK, 0] < u and cz[h, CZ_NAK, 2] == 0
        # (Whatever this request is, a packet past that came too soon after the run's
        # previous one for the run to have sent the PSNs it skipped, at the requester's
        # fastest pace (`_port_pace`), was not the run's; PSNs an ACK covered it may
        # skip. A restart for a cause naming that PSN skips none: its own wire time
        # after the run's latest resend still bounds it. Nor was one the run could have
        # reached only by losing two or more resends before the tap: `_costly_skip`.)
        jd_own = trig_u[h] == upsn[r] or nak_u[h] == upsn[r] or rnr_u[h] == upsn[r]
        jd_lo = upsn[r] if jd_own else rgaps[h, jmp[h, 3], 3]
        jd_pace = _port_pace(min_gap, run_gap, h)
        jd_paced = episode[r] == ep_cur[h] and (_run_paced(
            hc, cls, upsn, paylen, first_tx, ts, flags, episode, byte_gap, h, jd_lo, jmp[h, 1], r,
            jd_pace) or (not jd_own and _costly_skip(hc, cls, upsn, first_tx, delays, h, jd_lo, r)))
        if jd_paced or (
                seen and d < 0 and jmp[h, 2] <= u < upsn[r] and episode[r] == ep_cur[h] and
                ep_active[h] and ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS and
                fresh and (not 0 <= trig_u[h] <= u or not cause_named) and not nak_since):
            # The run resumes at its next PSN (or past it, below the packet past: those
            # between lost before the tap), with no cause naming that PSN and too
            # soon for a timer (or it could not have got there so soon): it never
            # jumped. The packet past it was a late copy that arrived amid the run (a
            # run goes in PSN order): of an earlier run's resend, if that run skipped
            # its PSN (it stays a resend, in that run's episode), else of the original.
            late_of = _skipping_run(rgaps, h, upsn[r], jmp[h, 3], ep_cur[h])
            jd_lost = gap[r] + jmp[h, 4]
            counts[h, K_LOST_BEFORE] -= jd_lost
            gap[r] = 0
            if late_of >= 0:
                flags[r] = (flags[r] & ~F_GAP) | F_AMBIGUOUS
                episode[r] = late_of
            else:
                if not jd_paced and u == jmp[h, 2]:
                    # (The request after this one may show the run had ended at the
                    # packet past, this one its resend delayed: `resume_decided`.)
                    jmp[h, 6] = r
                    jmp[h, 7] = i
                    jmp[h, 8] = ep_last[h]
                    jmp[h, 9] = ep_next[h]
                    jmp[h, 10] = jd_lost
                    jmp[h, 11] = flags[r]
                flags[r] = (flags[r] & ~(F_RETX | F_GAP | F_AMBIGUOUS)) | F_LATE
                if first_tx[r] < r and not flags[prev_tx[r]] & F_RETX:
                    # A second copy of an original: the network duplicated it,
                    # or it was the run's resend and the run's next PSN came late.
                    flags[r] |= F_AMBIGUOUS
                counts[h, K_RETX] -= 1
                counts[h, K_RETX_BYTES] -= paylen[r]
                counts[h, K_LATE] += 1
                episode[r] = -1
            _unskip(rgaps, rgap_at, h, jmp[h, 3])
            ep_last[h] = jmp[h, 1]
            ep_next[h] = jmp[h, 2]
            delays[h] = True
            if jd_copy >= 0 and copy_row[h] == jd_copy:
                # The copy between repeated the run's latest packet, which went on:
                # the network's duplicate, not a restart (`copy_decided` skips it).
                copy_row[h] = -1


def resume_decided(upsn, paylen, prev_tx, ts, flags, episode, gap, counts, ep_active, ep_last,
                   ep_cur, ep_next, min_rtt, min_gap, run_gap, jmp, cz, trig_kind, i, h, u, d):
    """A packet past taken for a late copy when the run resumed at its next PSN: the
    run's own jump after all if the run does not go on from there now."""
    r = jmp[h, 6]
    # (A copy sooner than a round trip after its previous one is no restart, and the
    # network's copies come between a run's packets: the request after it decides.)
    if r >= 0 and not (d < 0 and prev_tx[i] < i and min_rtt[h] >= 0 and
                       ts[i] - ts[prev_tx[i]] < min_rtt[h]):
        jmp[h, 6] = -1
        q = jmp[h, 7]
        # A run resumed after a late copy still has that copy's PSN to resend: it goes
        # on at once from the PSN it resumed at (past it, those between lost before
        # the tap). New data, a restart, or a pause as long as the shortest ACK
        # timeout instead: the run had ended at the packet past (it had sent the PSNs
        # it skipped, one delayed past it: the resume), as a READ or atomic run
        # waiting for its responses does.
        # (Not the run going on from the packet past, though, the PSNs from the
        # resume's on lost before the tap, sooner than it could have sent them at its
        # fastest pace: the run never went back; the resume was the late one.)
        rs_pace = _pace(min_gap, run_gap, h)
        rs_past = u == jmp[h, 9] and u > ep_next[h] and \
            ts[i] - ts[q] < (u - ep_next[h]) * rs_pace
        if ep_active[h] and episode[q] == ep_cur[h] and ep_last[h] == upsn[q] and \
                flags[r] & F_LATE and (rs_past or not (
                    d < 0 and u >= ep_next[h] and ts[i] - ts[q] < MIN_ACK_TIMEOUT_NS)):
            # (Not lost before the tap, those PSNs the late resend carried.)
            rs_lost = max(jmp[h, 10] - (ep_next[h] - upsn[q]), 0)
            flags[r] = (jmp[h, 11] & ~(F_GAP | F_LATE)) | F_RETX
            if rs_lost > 0:
                flags[r] |= F_GAP
            gap[r] = rs_lost
            counts[h, K_LOST_BEFORE] += rs_lost
            counts[h, K_RETX] += 1
            counts[h, K_RETX_BYTES] += paylen[r]
            counts[h, K_LATE] -= 1
            episode[r] = ep_cur[h]
            ep_last[h] = jmp[h, 8]
            ep_next[h] = jmp[h, 9]
            if d < 0 and u <= upsn[q] and _named_at(cz, trig_kind, h, 0, u, False, q):
                # A restart back at or before the resume, for a cause seen since it:
                # the run may have gone on past the resume, its packets lost or held
                # before the tap, until that cause cut it short. Then the packet past
                # was the late copy: in doubt.
                flags[r] |= F_AMBIGUOUS


def amid_decided(flags, gap, counts, ts, trig_u, ep_active, ep_cur, ep_next, rgaps, rgap_at, amid,
                 delays, i, h, u, d):
    """New data amid a run short of the front left pending: a late original if this
    request resumes the run (see the module)."""
    r = amid[h, 0]
    if r >= 0:
        amid[h, 0] = -1
        # (Not with a cause pending at or before that PSN: this may be its restart,
        # the run through, its last resends lost before the tap.)
        if d < 0 and u == amid[h, 2] and ep_cur[h] == amid[h, 3] and not ep_active[h] and \
                ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS and not 0 <= trig_u[h] <= u:
            gap[r] = 0      # (at the front: only the run's resends were counted lost)
            flags[r] = (flags[r] & ~F_GAP) | F_LATE
            counts[h, K_LOST_BEFORE] -= amid[h, 1]
            counts[h, K_LATE] += 1
            _unskip(rgaps, rgap_at, h, amid[h, 4])
            ep_active[h] = True
            delays[h] = True


def late_resend_decided(hc, cls, icrc, upsn, syn, paylen, prev_tx, ts, flags, episode, trig, reason,
                        counts, high, acked, trig_u, trig_row, trig_kind, cz, rnr_u, rnr_late,
                        ep_active, ep_last, ep_end, ep_cur, ep_next, retrying, nak_new, rgaps,
                        rgap_at, lr_row, lr_next, lr_lost, lr_cause, ep_amb, ep_row, delays, pin,
                        fifo, f_head, f_len, min_gap, run_gap, i, h, u, d, seen, n_ep):
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
        # runs later than the one whose resend of that PSN it follows count; unless the
        # late resend, at the oldest PSN not acknowledged (where a timer's restart
        # begins), came a pause as long as the shortest ACK timeout after the
        # requester's request before it, on a network that has shown no copy delayed
        # past a later one: a timer's restart then, and two copies held that long a
        # costlier story than one resend lost. Nor when it came sooner than the
        # requester could have sent those: `_too_soon`.)
        prev_ep = episode[prev_tx[i]] if seen and flags[prev_tx[i]] & F_RETX else -1
        past = u > lr_next[h] and acked[h] <= upsn[r] and not goes_on and \
            ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS and \
            (not _skipped_since(rgaps, h, u, prev_ep) or (
                not delays[h] and upsn[r] == acked[h] and _paused_before(hc, cls, ts, h, r))) \
            and not _too_soon(hc, cls, upsn, ts, min_gap, run_gap, h, lr_next[h], u, r, i)
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
                n_ep = _cause_episode(r, h, u, n_ep, counts, paylen, reason, episode, trig, ep_cur,
                                      ep_active, ep_end, ep_last, ep_next, high, upsn, ts, syn,
                                      trig_u, trig_row, trig_kind, cz, nak_new, rnr_u, rnr_late,
                                      retrying, rgaps, rgap_at, in_order, hc, cls, icrc, flags, pin,
                                      fifo, f_head, f_len)
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


def restart_left(hc, cls, upsn, first_tx, ts, flags, episode, high, ep_active, ep_next, ep_row, i,
                 h, u, d, prev_req):
    """New data, or a PSN not past the run's latest, or any request only after the
    shortest ACK timeout, right after a run that had PSNs left to resend, the tap
    having seen no original of the PSNs it resent (or new data past PSNs whose
    resends the run would all have lost before the tap): that run is in doubt."""
    # Go-back-N resends every PSN from the restart on, back to back, before any new
    # one, so either those were lost before the tap, or the run's packets were the
    # originals, delayed past the cause (the requester never got it, or not yet:
    # then its timer resends what the responder still lacks, the same PSNs).
    # (A PSN further on in the run, promptly: the run going on, one resend lost
    # before the tap.)
    rl_s = ep_row[h]
    if prev_req >= 0 and 0 <= rl_s <= prev_req and ep_active[h] and \
            (d >= 0 or u <= upsn[prev_req] or ts[i] - ts[prev_req] >= MIN_ACK_TIMEOUT_NS) and \
            ep_next[h] < high[h]:
        costly = d >= 0 and _originals_in(hc, cls, upsn, first_tx, h, ep_next[h], u,
                                          i - 1) >= COSTLY_SKIP
        _doubt_short_run(hc, cls, first_tx, flags, episode, h, rl_s, prev_req, costly)


def restart_shown(known, known_next, ep_active, ep_next, h, u, d):
    """A restart continued by this request in order: the requester did restart there
    (for a NAK at a PSN an earlier run skipped; for the READs before it, an implied
    NAK's: see episode_start)."""
    for j in range(2):
        if known_next[h, j] >= 0:
            if d < 0 and ep_active[h] and u == ep_next[h] and known_next[h, j] > known[h, j]:
                known[h, j] = known_next[h, j]
            known_next[h, j] = -1
