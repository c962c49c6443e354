"""RC engine helpers: what the shape of a go-back-N run allows. A requester resends
every PSN from its restart on, back to back, before any new one.

- Packets lost before the tap still took the requester's port, one after the other,
  so a request that follows another sooner than the requester could have sent the
  packets between them was not sent after those: one of the two is a copy the
  network delayed or duplicated. The pace is the fastest the stream has shown
  (`rc_shared._port_pace`): the least gap between two new requests in a row, or two
  packets of a run.
- The same per payload byte (`own_pace`, a rule function): two requests in a row
  are at least the shorter payload's wire time apart, at the fastest rate the
  stream has shown between two equal payloads of PACED_PAYLOAD bytes or more
  (halved, for headers; dropped, to be measured again, when two new requests in a
  row beat it). New data that came sooner after the run's resend went out
  before the restart (`rc_requests.new_request`); so did a copy at the run's next PSN,
  if the next request is another copy of it that the run could have sent after its
  resend (`early_copy_noted`, `early_copy_decided`: the early one a copy the network
  delayed, the next the run's resend); a copy past a NAK's PSN that came
  sooner after the NAK than its restart could reach that PSN went out before the
  requester had the NAK (`_before_restart_reached`).
- A run that stops short of the front (new data next, or nothing until a timer
  could have fired) had its remaining resends lost before the tap, or was no run:
  copies of PSNs whose originals the tap never saw may be those originals, late.
- A resend past the run's next PSN (`run_jump`, a rule function: a block of
  `rc_kernel._pass`'s loop, see `rc_build`) means the PSNs between were lost before
  the tap (remembered, for a late copy; unless the next request shows it a late
  copy amid the run, `rc_pending`); `_jumped` tells such a jump afterwards.
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

import numpy as np
from numba import njit

from ibwire.analysis.rc_rules import (
    C_READ_REQ, C_REQUEST, F_AMBIGUOUS, F_COPY, F_EPISODE, F_GAP, F_LATE, F_RETX, GAP_RING,
    K_COPIES, K_LATE, K_LOST_BEFORE, K_RETX, K_RETX_BYTES, MIN_ACK_TIMEOUT_NS, REASON_TIMEOUT,
)
from ibwire.engines.rc_shared import (
    SCAN_ROWS, _named_at, _originals_in, _port_pace, _request_before,
)

PSNS_CHECKED = 64      # PSNs `_too_soon` counts at most (enough for any pace it can prove)
# The least payload (bytes) the byte pace is measured on: no fewer than the headers and
# framing of one packet, so that half its rate bounds any packet's time on the wire.
PACED_PAYLOAD = 256
# Resends lost before the tap in a row that a run packet past must otherwise imply to
# be read as an original held (`_costly_skip`).
COSTLY_SKIP = 2


@njit(inline="always")
def _sooner_than_bytes(byte_gap, h, gap, nbytes):
    """Whether `gap` ns is less than `nbytes` of payload take on the wire at half the
    stream's fastest rate per byte (`own_pace`); False while none is measured."""
    return byte_gap[h, 0] >= 0 and 2 * gap * byte_gap[h, 1] < byte_gap[h, 0] * nbytes


@njit
def _sends_outlast(hc, cls, upsn, paylen, first_tx, byte_gap, h, lo, hi, q, gap, pace, base):
    """Whether the requester could not have sent packets for PSNs lo..hi-1 in `gap` ns
    (their originals the tap saw up to row q, one each, at no less than `pace` apart,
    nor faster than half the stream's fastest rate per payload byte, `own_pace`, with
    `base` payload bytes more). (The originals counted wherever they are: a hole
    filled late breaks their PSN order.)"""
    if _sooner_than_bytes(byte_gap, h, gap, base):
        return True
    n = 0
    nbytes = base
    for o in range(q, max(q - SCAN_ROWS, -1), -1):
        if hc[o] == h and cls[o] & C_REQUEST and first_tx[o] == o and lo <= upsn[o] < hi:
            n += 1
            nbytes += paylen[o]
            if pace > 0 and gap < pace * n:
                return True
            if _sooner_than_bytes(byte_gap, h, gap, nbytes):
                return True
            if n >= hi - lo:
                break       # (each PSN's original counted once: all found)
    return False


@njit(inline="always")
def _skip_too_soon(hc, cls, upsn, paylen, first_tx, ts, byte_gap, h, lo, q, r, pace, base):
    """Whether row r came too soon after row q for the requester to have sent, between
    them, packets for PSNs lo..upsn[r]-1 and `base` payload bytes (`_sends_outlast`)."""
    return _sends_outlast(hc, cls, upsn, paylen, first_tx, byte_gap, h, lo, upsn[r], q,
                          ts[r] - ts[q], pace, base)


@njit
def _before_restart_reached(hc, cls, upsn, paylen, first_tx, ts, byte_gap, min_gap, run_gap,
                            react, pmtu, h, i, nak_row, nak_u, u):
    """Row i, at PSN u past the PSN nak_u a sequence NAK (row nak_row) names, passed the
    tap too soon after that NAK to be its restart's: the restart's first packet comes no
    sooner than the requester's fastest reaction yet (`rc_causes._before_reaction`),
    and each PSN from there to u takes the port a packet time more, lost before the
    tap or not (one at the port's pace each, or the originals the tap saw,
    `_sends_outlast`)."""
    if react[h, 1] == 0:
        return False
    gap = ts[i] - ts[nak_row] - react[h, 0]
    pace = _port_pace(min_gap, run_gap, h)
    if gap < (u - nak_u - 1) * max(pace, 0):
        return True
    # (The scan only when full payloads for all those PSNs could tell: it is long.)
    return _sooner_than_bytes(byte_gap, h, gap, (u - nak_u - 1) * pmtu[h]) and _sends_outlast(
        hc, cls, upsn, paylen, first_tx, byte_gap, h, nak_u + 1, u, i - 1, gap, pace, 0)


@njit
def _run_paced(hc, cls, upsn, paylen, first_tx, ts, flags, episode, byte_gap, h, lo, last, r,
               pace):
    """Whether row r, a resend past its run's next PSN `lo`, came too soon after the
    run's previous packet for the requester to have sent the packets between
    (`_skip_too_soon`): the run did not send it. (Not a run whose start is in doubt:
    r may go on with the run that start cut short.) When that previous packet is the
    run's latest resend (PSN `last`, none late or in doubt), r's own wire time counts
    too: two stamps, both at a packet's start or both at its end, are the shorter
    packet's time apart besides (as in `own_pace`)."""
    if pace <= 0 and byte_gap[h, 0] < 0:
        return False    # (no pace known decides nothing: spare the scans)
    q = _request_before(hc, cls, h, r)    # the run's previous packet
    if q < 0 or episode[q] != episode[r] or upsn[q] >= lo:
        return False
    o = _request_before(hc, cls, h, q)
    if o >= 0 and flags[o] & F_LATE and upsn[o] > upsn[q]:
        # q resumed the run after a packet past taken for a late copy: unless that one
        # could not have been the run's either, q may be the late one, and the pair
        # proves nothing.
        p = _request_before(hc, cls, h, o)
        if p >= 0 and not _skip_too_soon(hc, cls, upsn, paylen, first_tx, ts, byte_gap, h,
                                         upsn[p] + 1, p, o, pace, 0):
            return False
    for o in range(q, max(q - SCAN_ROWS, -1), -1):
        if hc[o] == h and flags[o] & F_EPISODE and episode[o] == episode[r]:
            if flags[o] & F_AMBIGUOUS:
                return False
            break
    own = upsn[q] == last and flags[q] & (F_RETX | F_LATE | F_AMBIGUOUS) == F_RETX
    return _skip_too_soon(hc, cls, upsn, paylen, first_tx, ts, byte_gap, h, lo, q, r, pace,
                          min(paylen[q], paylen[r]) if own else 0)


@njit
def _too_soon(hc, cls, upsn, ts, min_gap, run_gap, h, lo, hi, r, i):
    """Whether row i came sooner after row r than the requester could have sent, at its
    fastest pace yet, the packets for PSNs lo..hi-1 between them: one for each of
    those PSNs the tap saw a request begin at (a READ takes many PSNs in one)."""
    pace = _port_pace(min_gap, run_gap, h)
    if pace <= 0:
        return False
    found = np.empty(PSNS_CHECKED, np.int64)
    n = 0
    for q in range(i - 1, max(i - SCAN_ROWS, -1), -1):
        if hc[q] == h and cls[q] & C_REQUEST and lo <= upsn[q] < hi:
            known = False
            for k in range(n):
                known = known or found[k] == upsn[q]
            if not known:
                found[n] = upsn[q]
                n += 1
                if ts[i] - ts[r] < pace * n:
                    return True
                if n == PSNS_CHECKED:
                    return False
    return False


@njit(inline="always")
def _paused_before(hc, cls, ts, h, r):
    """Row r came a timer-long pause after stream h's request before it (a scan)."""
    q = _request_before(hc, cls, h, r)
    return q >= 0 and ts[r] - ts[q] >= MIN_ACK_TIMEOUT_NS


@njit
def _costly_skip(hc, cls, upsn, first_tx, delays, h, lo, r):
    """Whether row r, a run packet past the run's next PSN `lo`, is better read as an
    original the network held: the first copy of its PSN at the tap (its hole shown
    before), on a stream whose network has held copies past later ones, where the run
    would have had COSTLY_SKIP or more resends lost before the tap in a row to reach
    it (the originals the tap saw between: the run resends each). One packet held is
    the cheaper story than that many lost. Not when the stream's next request at or
    past `lo` (copies of earlier PSNs aside) goes on past r with a PSN the tap had
    seen: the run went on from r, so it did skip those PSNs."""
    if not (delays[h] and first_tx[r] == r) or \
            _originals_in(hc, cls, upsn, first_tx, h, lo, upsn[r], r - 1) < COSTLY_SKIP:
        return False
    for q in range(r + 1, min(r + SCAN_ROWS, len(hc))):
        if hc[q] == h and cls[q] & C_REQUEST and upsn[q] >= lo:
            return not (upsn[q] > upsn[r] and first_tx[q] < q)
    return True


@njit
def _stopped_short(hc, cls, upsn, paylen, ts, byte_gap, h, last, row, t, pace):
    """Whether a run whose latest packet (PSN `last`, before row `row`) had stopped
    short by time t: that packet came more than twice the requester's fastest pace
    before t, and twice its own payload's time at the stream's fastest rate per byte
    (`own_pace`), so a run going on back to back would have sent its next PSN by then."""
    if pace <= 0:
        return False
    for q in range(row - 1, max(row - SCAN_ROWS, -1), -1):
        if hc[q] == h and cls[q] & C_REQUEST and upsn[q] == last:
            wire = 0 if byte_gap[h, 0] < 0 else \
                byte_gap[h, 0] * max(paylen[q], PACED_PAYLOAD) // byte_gap[h, 1]
            return t - ts[q] > 2 * max(pace, wire)
    return False


@njit
def _doubt_short_run(hc, cls, first_tx, flags, episode, h, s, e, costly):
    """Rows s..e, the requests of stream h from a run's start to its latest packet, a
    run that stopped short of the front: when the tap saw no original of any of their
    PSNs before them (each its first copy there, or one after resends only), each
    may be that original, delayed past the cause's resends: all flagged ambiguous.
    So are they, seen originals or not, when `costly` (new data came where the run
    would have had to lose COSTLY_SKIP or more resends before the tap)."""
    if e - s >= SCAN_ROWS:
        return
    for q in range(e, s - 1, -1):
        if hc[q] == h and cls[q] & C_REQUEST:
            if episode[q] != episode[s] or (first_tx[q] < q and not flags[first_tx[q]] & F_RETX
                                            and not costly):
                return
    for q in range(e, s - 1, -1):
        if hc[q] == h and cls[q] & C_REQUEST:
            flags[q] |= F_AMBIGUOUS


def own_pace(paylen, ts, flags, episode, min_gap, run_gap, byte_gap, new_row, ep_active, ep_cur,
             ep_next, i, h, u, d, prev_req):
    """The requester's pace from this request and the one before, and whether this one
    came too soon after the run's latest resend to have been sent after it."""
    # A port puts one packet on the wire at a time: a request sooner after the
    # previous one than the shorter payload of the two takes at the fastest rate the
    # stream has shown per byte went out before it, delayed by the network (or that
    # one was). (The shorter: a tap stamps a packet as it begins or as it ends. The
    # rate measured between two payloads of one length, at least PACED_PAYLOAD bytes,
    # and halved: framing and headers add time the payload does not count, at most
    # as much as the payload measured.)
    gap_now = ts[i] - ts[prev_req] if prev_req >= 0 else -1
    pl = min(paylen[prev_req], paylen[i]) if prev_req >= 0 else 0
    # (Only after the run's resend, sure: a late copy there says nothing of the port.)
    behind = pl > 0 and _sooner_than_bytes(byte_gap, h, gap_now, pl) and ep_active[h] and \
        episode[prev_req] == ep_cur[h] and \
        flags[prev_req] & (F_RETX | F_LATE | F_AMBIGUOUS) == F_RETX
    pair = False
    if d == 0 and prev_req >= 0 and prev_req == new_row[h]:
        pair = True
        if min_gap[h] < 0 or gap_now < min_gap[h]:
            # Two new requests in a row, in order: the requester's own pace
            # (a network copy or a late one never makes this pair).
            min_gap[h] = gap_now
    elif d < 0 and prev_req >= 0 and ep_active[h] and u == ep_next[h] and \
            episode[prev_req] == ep_cur[h]:
        pair = True
        if not 0 <= run_gap[h] <= gap_now:
            run_gap[h] = gap_now    # (resends may go faster than new data)
    if pair and pl >= PACED_PAYLOAD and paylen[prev_req] == paylen[i] and (
            byte_gap[h, 0] < 0 or gap_now * byte_gap[h, 1] < byte_gap[h, 0] * pl):
        byte_gap[h, 0] = gap_now
        byte_gap[h, 1] = pl
    elif d == 0 and pair and pl > 0 and _sooner_than_bytes(byte_gap, h, gap_now, pl):
        # Two new requests in a row came sooner than the rate measured allows: that
        # measure was no port's pace (the requester idled between its pair), and no
        # bound drawn from it holds. The next pair measured replaces it.
        byte_gap[h, 0] = -1
    if d >= 0:
        new_row[h] = i
    return behind


def run_jump(first_tx, flags, episode, gap, reason, counts, acked, ep_last, ep_cur, ep_next, rgaps,
             rgap_at, jmp, ep_amb, ep_row, delays, pin, i, h, u, seen, in_gap, prev_req):
    """A resend past the run's next PSN: the PSNs the run skipped."""
    e = ep_row[h]
    if delays[h] and seen and flags[first_tx[i]] & F_RETX and 0 <= e and \
            episode[e] == ep_cur[h] and reason[e] == REASON_TIMEOUT and \
            flags[first_tx[e]] & F_RETX:
        # A timer's run that skips PSNs, on a stream whose network has held copies
        # past later ones, its start and this packet at PSNs the tap saw only
        # resent: these may as well be originals (or earlier resends) the network
        # held past those resends, sent at the requester's pace, and no run at all.
        # Flagged: the run's start, the packet before the skip, and this one. (Not a
        # start that re-requested a READ or atomic still awaiting its response: the
        # flag would release the hold its retry keeps, `rc_responses._retry_covers`,
        # decided when that restart was taken.)
        flags[i] |= F_AMBIGUOUS
        if pin[h, 1] != e:
            flags[e] |= F_AMBIGUOUS
        if prev_req >= 0 and episode[prev_req] == ep_cur[h]:
            flags[prev_req] |= F_AMBIGUOUS
    jmp[h, 0] = i
    jmp[h, 1] = ep_last[h]
    jmp[h, 2] = ep_next[h]
    jmp[h, 3] = rgap_at[h] % GAP_RING
    jmp[h, 4] = 1 if (not seen and in_gap) else 0
    if u > max(ep_next[h], acked[h]):
        # The resend run skipped unacknowledged PSNs: lost before
        # the tap.
        flags[i] |= F_GAP
        gap[i] = u - max(ep_next[h], acked[h])
        counts[h, K_LOST_BEFORE] += gap[i]
    slot = rgap_at[h] % GAP_RING
    rgaps[h, slot, 0] = ep_next[h]
    rgaps[h, slot, 1] = u
    rgaps[h, slot, 2] = ep_cur[h]
    rgaps[h, slot, 3] = max(ep_next[h], acked[h])
    rgaps[h, slot, 4] = ep_amb[h]
    rgaps[h, slot, 5] = i
    rgap_at[h] += 1


def early_copy_noted(upsn, flags, episode, early_copy, ep_last, ep_cur, ep_next, i, h, u, run,
                     behind, prev_req):
    """A copy at the run's next PSN too soon after the run's latest resend for the
    requester to have sent it after that one (`own_pace`): kept for the next request
    (its row, the run's last and next PSN before it, and that resend's row). (That
    resend still one, sure, once this request has decided the rows pending: not a
    packet past the run's next PSN it showed a late copy, `jump_decided`; and the
    run's latest in PSN order, not a late resend of an earlier PSN.)"""
    if run and behind and u == ep_next[h] and episode[prev_req] == ep_cur[h] and \
            upsn[prev_req] == ep_last[h] and \
            flags[prev_req] & (F_RETX | F_LATE | F_AMBIGUOUS) == F_RETX:
        early_copy[h, 0] = i
        early_copy[h, 1] = ep_last[h]
        early_copy[h, 2] = ep_next[h]
        early_copy[h, 3] = prev_req


def early_copy_decided(upsn, paylen, first_tx, prev_tx, ts, flags, ref, episode, counts,
                       byte_gap, early_copy, rgaps, cz, trig_kind, ep_active, ep_last, ep_cur,
                       ep_next, i, h, u, d):
    """A copy taken for the run's resend though too soon after the one before it
    (`early_copy_noted`): one sent before, delayed, if this request is a copy of its
    PSN that the run could have sent after that one (see the module). (Not after a
    retry cause came, nor while one names this PSN, nor a pause as long as the
    shortest ACK timeout: this copy may be a restart of its own.)"""
    r = early_copy[h, 0]
    if r >= 0:
        early_copy[h, 0] = -1
        q = early_copy[h, 3]
        cause_since = cz[h, :, 1].max() > r     # (each kind's latest cause, `rc_shared.CZ_*`)
        if d < 0 and u == upsn[r] and ep_active[h] and episode[r] == ep_cur[h] and \
                ep_last[h] == u and not cause_since and \
                not _named_at(cz, trig_kind, h, u, u, False, -1) and \
                ts[i] - ts[q] < MIN_ACK_TIMEOUT_NS and not _sooner_than_bytes(
                    byte_gap, h, ts[i] - ts[q], min(paylen[q], paylen[i])):
            ec_seen = first_tx[r] < r
            if ec_seen:
                flags[r] = (flags[r] & ~F_RETX) | F_COPY
                ref[r] = prev_tx[r]
                counts[h, K_COPIES] += 1
            else:
                flags[r] = (flags[r] & ~F_RETX) | F_LATE
                ref[r] = -1
                counts[h, K_LATE] += 1
                counts[h, K_LOST_BEFORE] -= 1
            # (A resend an earlier run sent, delayed, as well, if one may have sent it:
            # the tap saw one, or saw that run skip the PSN.)
            if ec_seen and flags[first_tx[r]] & F_RETX:
                flags[r] |= F_AMBIGUOUS
            for g in range(GAP_RING):
                if rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 2] != ep_cur[h]:
                    flags[r] |= F_AMBIGUOUS
            episode[r] = -1
            counts[h, K_RETX] -= 1
            counts[h, K_RETX_BYTES] -= paylen[r]
            ep_last[h] = early_copy[h, 1]
            ep_next[h] = early_copy[h, 2]


@njit(inline="always")
def _psns_taken(cls, dmalen, pmtu, h, r):
    """How many PSNs request row r takes: a READ one per PMTU of its length, any
    other request one."""
    if cls[r] & C_READ_REQ and dmalen[r] > 0:
        return (dmalen[r] + pmtu[h] - 1) // pmtu[h]
    return np.int64(1)


@njit
def _jumped(hc, cls, upsn, dmalen, pmtu, episode, h, r):
    """Whether request row r went past the PSN after the request before it in its
    stream, both of one run (a run's jump: no packet of that run in between)."""
    q = _request_before(hc, cls, h, r)
    if q < 0 or episode[q] != episode[r]:
        return False
    return upsn[r] != upsn[q] + _psns_taken(cls, dmalen, pmtu, h, q)
