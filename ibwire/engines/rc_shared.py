"""RC engine: what the kernel's rule modules share.

The AETH syndrome's parts, the pending retry causes (bits of `trig_kind`), the ICRC
status of a damaged packet, marking and counting a row, the least wait an RNR NAK asks
for, which earlier resend run skipped a PSN, how many packets a run sends to cover some
PSNs, and a run's start (how the rule modules make up the kernel: `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from numba import njit

from ibwire.analysis.rc_rules import (
    C_REQUEST, GAP_RING, MAX_REACTION_NS, MIN_ACK_TIMEOUT_NS, READ_FIFO, RNR_LATE_NS,
    RNR_TIMER_NS,
)
from ibwire.headers.extended import AETH

# The AETH syndrome's parts, from the layout's overlays (type, then the 5-bit value:
# credit count, RNR timer or NAK code).
_, _, SYN_TYPE_SHIFT, SYN_TYPE_MASK = AETH.offsets()["syndrome_type"]
_, _, SYN_VALUE_SHIFT, SYN_VALUE_MASK = AETH.offsets()["credit_count"]

T_NAK, T_RNR, T_IMPLIED = 1, 2, 4       # pending retry causes (bits of trig_kind)
CZ_NAK, CZ_RNR, CZ_IMPLIED = 0, 1, 2    # ... their rows of `cz`: T_X = 1 << CZ_X; each holds
# the PSN named, the row, and 1 if the requester ignores it (a retry covers it)
CRC_BAD = 0
# `amb_run` (a restart taken with doubt amid a run): its columns from here hold the
# READ hold (`pin`, 4 columns) as it was before that restart.
AMB_PIN = 7
# How sure a resend run's skip is (`rgaps[..., 4]`): the run was one; it may have been
# late copies; or a hole left as it ended, which it may have resent unseen.
SKIP_SURE, SKIP_DOUBT, SKIP_MAYBE = 0, 1, 2
SCAN_ROWS = 4096        # rows a rare backward search looks through


@njit(inline="always")
def _mark(flags, counts, i, h, flag, k):
    """Row i gets `flag`; its half-connection h counts one more `k`."""
    flags[i] |= flag
    counts[h, k] += 1


@njit(inline="always")
def _syn_kind(syndrome):
    """The AETH syndrome's kind (ACK, RNR NAK, NAK); -1 for a packet without an AETH."""
    return (syndrome >> SYN_TYPE_SHIFT) & SYN_TYPE_MASK if syndrome >= 0 else -1


@njit(inline="always")
def _rnr_wait_ns(syndrome):
    """The least wait an RNR NAK with this syndrome asks of the requester."""
    return RNR_TIMER_NS[(syndrome >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK]


@njit(inline="always")
def _spent_only(cz, trig_kind, h, u, row):
    """Every retry cause pending at or before PSN u is the one seen at `row` (whose
    restart is the run in progress): a cause starts one restart."""
    some = False
    other = False
    for j in (CZ_NAK, CZ_RNR, CZ_IMPLIED):
        if trig_kind[h] & (1 << j) and 0 <= cz[h, j, 0] <= u:
            some = True
            if cz[h, j, 1] != row:
                other = True
    return some and not other


@njit(inline="always")
def _note_cause(cz, trig_kind, h, j, bit, p, row):
    """Cause `bit` (row j of `cz`) names PSN p at `row`: remembered unless the same
    cause, still pending, already named p (a requester acts on the first of them)."""
    if not trig_kind[h] & bit or cz[h, j, 0] != p:
        cz[h, j, 0] = p
        cz[h, j, 1] = row
        cz[h, j, 2] = 0


@njit(inline="always")
def _acted_below(cz, trig_kind, h, u):
    """Whether a pending cause the requester acts on (not one a retry under way
    covers) names a PSN before u."""
    hit = False
    for j in (CZ_NAK, CZ_RNR, CZ_IMPLIED):
        if trig_kind[h] & (1 << j) and 0 <= cz[h, j, 0] < u and cz[h, j, 2] == 0:
            hit = True
    return hit


@njit(inline="always")
def _named_at(cz, trig_kind, h, lo, u, acted, since):
    """Whether a pending cause names a PSN from lo to u (`acted`: only one the requester
    acts on, not one a retry under way covers; only one seen after row `since`)."""
    hit = False
    for j in (CZ_NAK, CZ_RNR, CZ_IMPLIED):
        if trig_kind[h] & (1 << j) and lo <= cz[h, j, 0] <= u and cz[h, j, 1] > since and \
                not (acted and cz[h, j, 2] == 1):
            hit = True
    return hit


@njit(inline="always")
def _note_implied(cz, trig_kind, h, p, row, fresh, ignored):
    """A response at `row` shows the READ/atomic hole at PSN p (`fresh`: its first
    showing; `ignored`: a retry under way covers it, the requester acts not). The
    implied-NAK cause names it, unless one pending already does (a hole shown again is
    no news; but one the requester ignored counts now if this showing is not covered)."""
    if fresh or not trig_kind[h] & T_IMPLIED:
        _note_cause(cz, trig_kind, h, CZ_IMPLIED, T_IMPLIED, p, row)
        if ignored:
            cz[h, CZ_IMPLIED, 2] = 1
    elif not ignored and cz[h, CZ_IMPLIED, 2] == 1 and cz[h, CZ_IMPLIED, 0] == p:
        cz[h, CZ_IMPLIED, 1] = row
        cz[h, CZ_IMPLIED, 2] = 0
    trig_kind[h] |= T_IMPLIED


@njit(inline="always")
def _rnr_spent(trig_u, trig_kind, rnr_u, h):
    """The pending RNR NAK is answered (its retry seen, or shown lost before the
    tap): no longer a cause, nor the refused PSN awaited."""
    rnr_u[h] = -1
    trig_kind[h] &= ~T_RNR
    if trig_kind[h] == 0:
        trig_u[h] = -1


@njit(inline="always")
def _nak_spent(cz, trig_u, trig_row, trig_kind, h):
    """The pending sequence NAK starts no restart (as `_rnr_spent` for an RNR NAK)."""
    trig_kind[h] &= ~T_NAK
    cz[h, CZ_NAK, 0] = -1
    if trig_kind[h] == 0:
        trig_u[h] = -1
        trig_row[h] = -1


@njit(inline="always")
def _rnr_over(syn, ts, row, i):
    """Whether row i comes at least the timer of the RNR NAK at `row` after it (IBA
    9.7.5.2.8: the requester waits that long before its retry)."""
    return ts[i] - ts[row] >= _rnr_wait_ns(syn[row])


@njit(inline="always")
def _rnr_waited(cz, syn, ts, h, i):
    """Whether row i comes at least the pending RNR NAK's timer after it."""
    return _rnr_over(syn, ts, cz[h, CZ_RNR, 1], i)


@njit(inline="always")
def _earlier_hole(cz, trig_u, trig_row, trig_kind, h, u):
    """A restart at PSN u, the earliest hole pending (`trig_u`), while the implied-NAK
    cause names a later READ's hole the same response showed: the requester lacked the
    earlier READ's responses after all (the capture may have missed them; the later
    hole is kept) and restarts at the first one missing (IBA 9.7.4.1.5): the cause is u."""
    if trig_kind[h] & T_IMPLIED and trig_u[h] == u and trig_row[h] >= 0 and \
            cz[h, CZ_IMPLIED, 0] > u and cz[h, CZ_IMPLIED, 1] == trig_row[h] and \
            not (trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == u) and \
            not (trig_kind[h] & T_RNR and cz[h, CZ_RNR, 0] == u):
        cz[h, CZ_IMPLIED, 0] = u
        cz[h, CZ_IMPLIED, 1] = trig_row[h]
        cz[h, CZ_IMPLIED, 2] = 0


@njit(inline="always")
def _pace(min_gap, run_gap, h):
    """The requester's fastest pace yet: the least gap between two new requests in a
    row or two packets of a run (resends may go faster than new data); -1 if none."""
    if 0 <= run_gap[h] < min_gap[h] or min_gap[h] < 0:
        return run_gap[h]
    return min_gap[h]


@njit(inline="always")
def _port_pace(min_gap, run_gap, h):
    """`_pace`, never nil: two packets leave a port one after the other, so a nil gap
    between two runs' packets was a late copy's coincidence (then the least gap
    between two new requests); -1 if none."""
    pace = _pace(min_gap, run_gap, h)
    return min_gap[h] if pace == 0 else pace


@njit(inline="always")
def _request_before(hc, cls, h, f):
    """The row of stream h's latest request before row f (looked for SCAN_ROWS back);
    -1 if none."""
    for q in range(f - 1, max(f - SCAN_ROWS, -1), -1):
        if hc[q] == h and cls[q] & C_REQUEST:
            return q
    return -1


@njit
def _originals_in(hc, cls, upsn, first_tx, h, lo, hi, row):
    """How many packets first sent PSNs lo..hi-1 (their originals the tap saw, up to
    row): a resend run sends as many to cover them (a READ takes many PSNs in one)."""
    n = 0
    for q in range(row, max(row - SCAN_ROWS, -1), -1):
        if hc[q] == h and cls[q] & C_REQUEST and first_tx[q] == q:
            if upsn[q] < lo:
                break       # (originals go in PSN order)
            n += upsn[q] < hi
    return n


@njit
def _pick_cause(cz, k, h, u, ts, syn, i):
    """Which pending cause (bits `k`) a restart at PSN u, row i, answers: its `cz` row,
    -1 for none. A cause names the PSN its restart begins at, so one past u cannot have
    started it, nor a NAK or implied NAK older than a requester's reaction, nor an RNR
    NAK sooner than its timer (or, u past the refused PSN, `RNR_LATE_NS` later); one
    naming u did (the earliest, if several; a NAK naming u taken as ignored too, when
    no other cause names u). Else (the restart's first resends missing at the tap) an
    RNR NAK first (the requester waits it out whatever else came), then a sequence NAK,
    then an implied NAK. A hole shown by an RNR NAK itself is that RNR NAK's retry."""
    got = -1
    for j in (CZ_RNR, CZ_NAK, CZ_IMPLIED):
        if k & (1 << j) and 0 <= cz[h, j, 0] <= u and cz[h, j, 2] == 0 and (
                ts[i] - ts[cz[h, j, 1]] < MAX_REACTION_NS if j != CZ_RNR else
                _rnr_waited(cz, syn, ts, h, i) and (cz[h, j, 0] == u or (
                    ts[i] - ts[cz[h, j, 1]] < _rnr_wait_ns(syn[cz[h, j, 1]]) + RNR_LATE_NS))):
            if cz[h, j, 0] == u and (got < 0 or cz[h, got, 0] != u or
                                     cz[h, j, 1] < cz[h, got, 1]):
                got = j
            elif got < 0:
                got = j
    if (got < 0 or cz[h, got, 0] != u) and k & T_NAK and cz[h, CZ_NAK, 0] == u and \
            cz[h, CZ_NAK, 2] == 1 and ts[i] - ts[cz[h, CZ_NAK, 1]] < MAX_REACTION_NS:
        # A restart at exactly the PSN of a NAK taken as ignored (a retry covering it
        # seemed under way): the restart shows the requester acted on it after all
        # (that retry was over: responses the capture missed had reached it).
        got = CZ_NAK
    if got == CZ_IMPLIED and k & T_RNR and cz[h, CZ_RNR, 2] == 0 and \
            cz[h, CZ_RNR, 1] == cz[h, CZ_IMPLIED, 1] and _rnr_waited(cz, syn, ts, h, i):
        # The hole an RNR NAK's implicit ACK shows: the requester goes back to it,
        # but only once the NAK's timer has run out; the RNR wait rules the retry.
        got = CZ_RNR
    return got


@njit
def _skipped_by_run(h, lo, hi, ep, row, rgaps, rgap_at, amb):
    """The run of episode `ep`, found at `row`, restarted at `hi` for a cause naming
    `lo`: it skipped the PSNs between (none counted lost here). A later copy of one is
    that run's resend, delayed (or the original, when the tap had not seen it).
    `amb`: the run may not have sent them at all (a later copy stays flagged)."""
    slot = rgap_at[h] % GAP_RING
    rgaps[h, slot, 0] = lo
    rgaps[h, slot, 1] = hi
    rgaps[h, slot, 2] = ep
    rgaps[h, slot, 3] = hi
    rgaps[h, slot, 4] = amb
    rgaps[h, slot, 5] = row
    rgap_at[h] += 1


@njit(inline="always")
def _skipping_run(rgaps, h, u, slot, ep):
    """The episode of the latest resend run recorded (`rgaps`) as having skipped PSN
    u, leaving out ring slot `slot` and episode `ep` (-1: none left out); -1 if none."""
    got = -1
    for g in range(GAP_RING):
        if g != slot and rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 2] != ep and \
                rgaps[h, g, 4] != SKIP_MAYBE:
            got = rgaps[h, g, 2]
    return got


@njit(inline="always")
def _skip_row(rgaps, h, u, slot, ep):
    """The latest row where a resend run (not episode `ep`, nor ring slot `slot`) was
    seen going past PSN u, so sent it unseen or not at all (`SKIP_SURE`); -1 if none."""
    got = -1
    for g in range(GAP_RING):
        if g != slot and rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 2] != ep and \
                rgaps[h, g, 4] == SKIP_SURE and rgaps[h, g, 5] > got:
            got = rgaps[h, g, 5]
    return got


@njit(inline="always")
def _hole_recent(gaps, ts, h, u, t):
    """Whether PSN u lies in a recent hole (`gaps`) shown less than the shortest ACK
    timeout before row t: too soon for any timer, so a copy there may be its original,
    delayed."""
    got = False
    for g in range(GAP_RING):
        if gaps[h, g, 0] <= u < gaps[h, g, 1] and ts[t] - ts[gaps[h, g, 2]] < MIN_ACK_TIMEOUT_NS:
            got = True
    return got


@njit(inline="always")
def _unskip(rgaps, rgap_at, h, slot):
    """Forget the run skip recorded at ring `slot`, if it is still the latest: the run
    it came from skipped nothing after all."""
    if slot >= 0 and (rgap_at[h] - 1) % GAP_RING == slot:
        rgaps[h, slot, :] = -1
        rgap_at[h] -= 1


@njit(inline="always")
def _skipped_since(rgaps, h, u, ep):
    """Whether a resend run later than episode `ep` skipped PSN u (`rgaps`)."""
    for g in range(GAP_RING):
        if rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 2] > ep and \
                rgaps[h, g, 4] != SKIP_MAYBE:
            return True
    return False


@njit(inline="always")
def _rtt_sample(rtt, prev_tx, ts, min_rtt, rtt_fb, h, i):
    """Response row i gives a round trip: Karn's (`rtt`, its PSN sent once) when it
    can; until the stream has one, the time since the latest copy of its PSN, which
    is never longer than the round trip of the copy answered (`rtt_fb` marks it)."""
    if rtt[i] >= 0:
        if min_rtt[h] < 0 or rtt_fb[h] or rtt[i] < min_rtt[h]:
            min_rtt[h] = rtt[i]
            rtt_fb[h] = False
    elif prev_tx[i] < i and (min_rtt[h] < 0 or rtt_fb[h]):
        s = ts[i] - ts[prev_tx[i]]
        if min_rtt[h] < 0 or s < min_rtt[h]:
            min_rtt[h] = s
            rtt_fb[h] = True


@njit(inline="always")
def _read_fills(gaps, gap_at, h, u, consume):
    """A first copy at PSN u filling a hole takes `consume` PSNs (a READ): the PSNs
    after its first leave the hole, so a later request inside them is the READ
    re-requested part-way (a resend), not the first copy of a hole's PSN."""
    for g in range(GAP_RING):
        hi = gaps[h, g, 1]
        if gaps[h, g, 0] <= u < hi:
            gaps[h, g, 1] = u + 1
            if u + consume < hi:
                slot = gap_at[h] % GAP_RING
                gaps[h, slot, 0] = u + consume
                gaps[h, slot, 1] = hi
                gaps[h, slot, 2] = gaps[h, g, 2]
                gap_at[h] += 1
            break


@njit(inline="always")
def _in_read_before(fifo, h, p, u):
    """Whether PSN p lies in a READ the FIFO ring still holds (answered or not) whose
    PSNs end right before PSN u."""
    for s in range(READ_FIFO):
        if fifo[h, s, 0] <= p and p < fifo[h, s, 2] and fifo[h, s, 2] == u:
            return True
    return False


@njit(inline="always")
def _reads_below(fifo, f_head, f_len, h, u):
    """How many READs the FIFO ring holds that begin below PSN u: a restart at or
    before the oldest one's first missing response resends each before u."""
    k = 0
    for j in range(f_len[h]):
        k += fifo[h, (f_head[h] + j) % READ_FIFO, 0] < u
    return k


@njit(inline="always")
def _answered_since(fifo, h, u, row, latest, top):
    """Whether a READ the FIFO ring still holds whose PSNs end right before PSN u had a
    response in order after row `row` (`latest`: only the READ of the latest response
    in order counts), and one past its first PSN passed the tap (its own in order, or
    any acknowledged, `top`): a hole reaches the requester only through a later one."""
    hit = False
    best = -1
    best_end = -1
    best_past = False
    for s in range(READ_FIFO):
        past = fifo[h, s, 1] > fifo[h, s, 0] + 1 or top > fifo[h, s, 0] + 1
        if fifo[h, s, 3] > best:
            best = fifo[h, s, 3]
            best_end = fifo[h, s, 2]
            best_past = past
        if fifo[h, s, 2] == u and fifo[h, s, 3] > row and past:
            hit = True
    if latest:
        return best > row and best_end == u and best_past
    return hit


@njit
def _run_from(r, h, u, n_ep, episode, ep_cur, ep_active, ep_end, ep_last, ep_next, high, upsn):
    """Row r starts episode n_ep, a run up to the stream's front whose next request
    (PSN u) continues it."""
    episode[r] = n_ep
    ep_cur[h] = n_ep
    ep_active[h] = True
    ep_end[h] = high[h]
    ep_last[h] = upsn[r]
    ep_next[h] = u
