"""RC engine rules, requester side: the copies below the highest PSN that are no
resend a run sends now (`rc_copies.classify` says which; the last three are decided
at the next request, `rc_pending`, `rc_pending_copies`):

- `stale_original`: below a PSN the requester already restarted at, so no restart
  can send it now: the original delayed past its own resend, or a resend delayed.
- `network_copy`: a repeat too quick for any cause to have acted: the network's
  duplicate, flagged where the tap cannot tell it from a resend.
- `held_original`, `late_original`: a hole filled past a pending cause's PSN, or
  with no cause at all: a late (reordered) original.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_READ_REQ, C_REQUEST, F_AMBIGUOUS, F_COPY, F_LATE, F_RETX, GAP_RING, K_COPIES,
    K_LATE, K_LOST_BEFORE, K_RETX, K_RETX_BYTES, MIN_ACK_TIMEOUT_NS,
)
from ibwire.engines.rc_shared import SCAN_ROWS, _mark, _request_before, _skip_row


@njit
def _after_resend(hc, cls, flags, h, f):
    """Whether request row f came right after a resend in its stream (a run going on
    past the front the tap knew: f may be a resend as well, its original unseen)."""
    q = _request_before(hc, cls, h, f)
    return q >= 0 and flags[q] & F_RETX != 0


@njit
def _run_sent_between(hc, cls, upsn, episode, h, r, u):
    """Whether the tap saw row r's run (its episode) resend every PSN after r's and
    before u, at rows before r: u is then the next PSN that run had to send."""
    n = 0
    for q in range(r - 1, max(r - SCAN_ROWS, -1), -1):
        if hc[q] == h and cls[q] & C_REQUEST and episode[q] == episode[r] and \
                upsn[r] < upsn[q] < u:
            n += 1
    return n == u - upsn[r] - 1


def stale_original(hc, cls, paylen, first_tx, prev_tx, ts, flags, ref, counts, gaps, i, h, c, u,
                   copy):
    """An original delayed past its own resend, or a resend delayed (no restart
    can send its PSN now)."""
    flags[i] |= F_LATE
    counts[h, K_LATE] += 1
    old = ts[i] - ts[first_tx[i]] >= MIN_ACK_TIMEOUT_NS
    if old and copy:
        # The original went out before the PSN's first copy at the tap: it would
        # have been held as long as the shortest ACK timeout. Soon after the last
        # copy: the network's copy of that one, or a resend delayed (flagged).
        flags[i] |= F_AMBIGUOUS
    elif old:
        # A resend, delayed (which run's, the tap cannot tell); or, when the tap may
        # never have seen the original (its first copy there a resend, or one right
        # after a resend, as a run going on would send it), that original, held as
        # long: a network that delays a copy may delay it longer (flagged).
        flags[i] |= F_RETX
        if flags[first_tx[i]] & F_RETX or _after_resend(hc, cls, flags, h, first_tx[i]):
            flags[i] |= F_AMBIGUOUS
        ref[i] = first_tx[i]
        counts[h, K_RETX] += 1
        counts[h, K_RETX_BYTES] += paylen[i]
    else:
        # A requester restarts only at an unacknowledged PSN: the original,
        # delayed past its own resend (which the first copy in its hole
        # was taken for), so not lost before the tap either.
        if c & (C_READ_REQ | C_ATOMIC_REQ):
            # Or the restart began here, its first packet delayed past the next: the
            # response the tap saw may have been lost after it (an implied NAK).
            flags[i] |= F_AMBIGUOUS
        if flags[first_tx[i]] & F_RETX and prev_tx[i] == first_tx[i]:
            for g in range(GAP_RING):
                if gaps[h, g, 0] <= u < gaps[h, g, 1]:
                    counts[h, K_LOST_BEFORE] -= 1
                    break


def network_copy(hc, cls, upsn, first_tx, prev_tx, flags, ref, episode, counts, acked, copy_row,
                 copy_next, copy_cause, back2back, ep_active, ep_last, ep_cur, rgaps, i, h, c, u,
                 consume, b2b, held, delays, prev_req, ts):
    """A network duplicate, held back for the next request to decide."""
    # The network duplicated it (unless the next request continues it).
    flags[i] |= F_COPY
    ref[i] = prev_tx[i]
    counts[h, K_COPIES] += 1
    copy_row[h] = i
    copy_next[h] = u + consume
    copy_cause[h] = held
    back2back[h] = b2b
    # Right after a copy taken for a resend that may as well have been sent before it
    # (the first copy at the tap, filling its hole: the original, delayed past the
    # cause; or one right behind its own previous copy: the network's duplicate of
    # that), this one the resend. The tap cannot tell the two orders apart.
    x = prev_tx[i]
    fill = flags[x] & F_RETX and (x == first_tx[x] or _request_before(hc, cls, h, x) == prev_tx[x])
    # A READ or atomic copy right after the run's resend of it, an ACK past it seen:
    # if its response was lost after the tap, that ACK is an implied NAK the tap
    # cannot see, and the requester restarts there, at once, as the run sends it.
    rerun = c & (C_READ_REQ | C_ATOMIC_REQ) and acked[h] > u and b2b and ep_active[h] and \
        ep_last[h] == u
    if rerun:
        flags[i] |= F_AMBIGUOUS
    # Right after the run's latest resend, on a network seen delaying copies, when a
    # copy of the PSN the tap has not seen was sent before (the original, its first
    # copy at the tap a resend; or an earlier run's resend, that run seen skipping
    # it): that resend may as well have been that copy, late, and this one the run's.
    late_pair = b2b and delays[h] and ep_active[h] and ep_last[h] == u and \
        flags[prev_tx[i]] & F_RETX and (flags[first_tx[i]] & F_RETX or
                                         _skip_row(rgaps, h, u, -1, ep_cur[h]) >= 0)
    # So is any later copy after a first copy at the tap taken for a resend with doubt
    # (it may be the original, delayed): this one may be that resend, late.
    doubt_fill = flags[prev_tx[i]] & F_AMBIGUOUS != 0 and prev_tx[i] == first_tx[i] and \
        flags[prev_tx[i]] & F_RETX != 0
    # Right after a first copy at the tap taken for new data, that one right after a
    # resend (as a run going on past the front the tap knew sends it): that first copy
    # may as well be the original, delayed past the restart, and this one the run's
    # resend (new data either way, so that one stays unflagged). Not only right after
    # it on a network seen delaying copies: the resend may be held longer.
    ahead = (b2b or delays[h]) and prev_tx[i] == first_tx[i] and \
        not flags[prev_tx[i]] & F_RETX and _after_resend(hc, cls, flags, h, prev_tx[i])
    # Right after a late resend of an earlier run (the network holding that run's
    # packets), a copy of that run's next PSN (past those the tap saw it resend): as
    # much that run's next resend, held as well.
    after_late = delays[h] and 0 <= prev_req != prev_tx[i] and flags[prev_req] & F_RETX != 0 \
        and 0 <= episode[prev_req] != ep_cur[h] and u > upsn[prev_req] and \
        _run_sent_between(hc, cls, upsn, episode, h, prev_req, u)
    # Right behind a copy taken for a resend, in the same nanosecond: the tap's clock
    # cannot order the two, and either may be that resend (as `rc_copies.skipped_resend`).
    tied = b2b and flags[prev_tx[i]] & F_RETX != 0 and ts[i] == ts[prev_tx[i]]
    if held or (b2b and (flags[prev_tx[i]] & F_AMBIGUOUS or fill)) or late_pair or doubt_fill or \
            ahead or after_late or tied:
        # (Right after a copy taken for a resend with doubt: the two are
        # that resend and a late copy, in either order.)
        flags[i] |= F_AMBIGUOUS
        if fill or late_pair or tied:
            flags[prev_tx[i]] |= F_AMBIGUOUS


def held_original(flags, counts, late_row, late_next, late_cause, i, h, u, consume):
    """A hole fill past a pending cause's PSN, held back for the next request to decide."""
    # A late original, unless the next request continues it in order.
    flags[i] |= F_AMBIGUOUS
    _mark(flags, counts, i, h, F_LATE, K_LATE)
    counts[h, K_LOST_BEFORE] -= 1
    late_row[h] = i
    late_next[h] = u + consume
    late_cause[h] = True


def late_original(flags, counts, late_row, late_next, late_cause, i, h, u, consume):
    """A hole fill with no retry cause, held back for the next request to decide."""
    # A hole filled with no retry cause: a late (reordered) original,
    # unless the next request resends the PSN after it (a timeout
    # go-back-N run); decided at that next request. (Not after a pause as long as
    # the shortest ACK timeout: the timer's resend, taken as such at once.)
    _mark(flags, counts, i, h, F_LATE, K_LATE)
    counts[h, K_LOST_BEFORE] -= 1
    late_row[h] = i
    late_next[h] = u + consume
    late_cause[h] = False
