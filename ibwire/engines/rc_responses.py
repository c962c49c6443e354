"""RC engine rules, responder side: responses seen at the tap.

- A response with a bad ICRC is dropped by the requester: no acknowledgement, no
  retry cause; it still counts, and tells the responder's expected PSN.
- READ responses and atomic ACKs are matched against the FIFO of outstanding READ
  and atomic requests: a response past the next expected one (or past the end of
  the request) is a response gap and an implied NAK, unless it comes within one
  round trip of the resend of that PSN (it left before the resend arrived), and a
  retry cause unless a retry covering it is under way. A later request's own next
  response counts for it, so it leaves the FIFO complete once the earlier one
  does; one past it is a hole in that request too (a cause, if the requester had
  the earlier one's responses that the capture missed). A restarted READ's own
  response puts its progress there: what came past it before was dropped.
- An ACK acknowledges PSNs (coalesced), carries credits, covers a READ still
  missing responses (an implied NAK; so too a READ a restart resent, awaiting its
  own response), or repeats an earlier one (a duplicate ACK);
  an acknowledged PSN settles a pending NAK or RNR NAK (not a NAK whose PSN no copy
  has passed since: the responder took a late one, the requester still restarts).
- A NAK (sequence error: a retry cause, with the first since forward progress
  starting a retry; ignored by the requester while a retry from its PSN or before
  is under way) or an RNR NAK (a retry cause after its timer) implicitly
  acknowledges the PSNs before its own; a copy of either (the loop spots it) is
  the network's, but for an RNR NAK as late as its timer (the retry it answers
  went unseen). Each cause is kept with its PSN and row (`cz`), for the restart
  that answers it.

Rule functions: blocks of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

from ibwire.analysis.rc_rules import (
    C_ACK, C_REQUEST, C_RESPONSE, F_AMBIGUOUS, F_BAD_ICRC, F_DUP_ACK, F_IMPLIED, F_NAK, F_RESP_GAP,
    F_RESP_OOS, F_RETRY_START, F_RNR, K_ACKS, K_DUP_ACKS, K_IMPLIED, K_NAK0, K_RESP_GAPS, K_RNR,
    READ_FIFO, REASON_NAK_SEQ, REASON_RNR, SYN_ACK, SYN_NAK, SYN_RNR,
)

from numba import njit

from ibwire.engines.rc_causes import _earliest_cause, _keep_nak, _last_kept, _nak_unanswered
from ibwire.engines.rc_shared import (
    CRC_BAD, CZ_IMPLIED, CZ_NAK, CZ_RNR, SYN_VALUE_MASK, SYN_VALUE_SHIFT, T_IMPLIED, T_NAK, T_RNR,
    _mark, _note_cause, _note_implied, _rtt_sample, _syn_kind,
)


@njit(inline="always")
def _hole_shown(flags, counts, trig_u, trig_row, trig_kind, cz, retrying, rd_gap, i, h, p, covered,
                flag):
    """Response i shows the READ/atomic hole at PSN p (an implied NAK): marked (`flag`)
    and counted once per hole, a retry's start if none is under way, and a retry
    cause unless a retry covering p is (the requester ignores it). Returns whether
    this is the hole's first showing."""
    first = rd_gap[h] != p and not covered
    if first:
        _mark(flags, counts, i, h, flag, K_IMPLIED)
        rd_gap[h] = p
    if not retrying[h]:
        retrying[h] = True
        if first:
            flags[i] |= F_RETRY_START
    if not covered:
        if trig_u[h] < 0 or p < trig_u[h]:
            trig_u[h] = p
            trig_row[h] = i
        _note_implied(cz, trig_kind, h, p, i, first, False)
    return first


@njit(inline="always")
def _fifo_hole(fifo, f_head, f_len, h, u):
    """The oldest READ or atomic in flight begins before PSN u and misses a response."""
    slot = f_head[h]
    return f_len[h] > 0 and u > fifo[h, slot, 0] and fifo[h, slot, 1] < fifo[h, slot, 2]


@njit(inline="always")
def _pin_hole(flags, pin, h, u):
    """The READ or atomic a restart resent, still awaiting its own response, if a
    response acknowledging PSNs before u passes it (the requester finds it missing,
    IBA 9.7.4.1.5, though the tap saw its first response pass: lost after the tap);
    else -1. (Not while that restart may be a late copy.)"""
    if 0 <= pin[h, 0] < u and not flags[pin[h, 1]] & F_AMBIGUOUS:
        return pin[h, 0]
    return -1


@njit
def _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row, trig, reason, pin, h, p,
                  floor):
    """A retry from PSN r is under way until the oldest unacknowledged PSN (an
    incomplete READ's missing response included) passes r; an implied NAK or a NAK for
    p >= r then changes nothing: the restart covers it (rxe ignores it,
    `started_retry`). r: the latest run's first resend, or the PSN its NAK or RNR NAK
    named if lower (the run's first resends missing at the tap). `floor`: what the
    response acknowledges before the requester acts on it (a READ response: every PSN
    before its READ; a NAK: before its PSN; an ACK covering a READ that misses
    responses, or a later READ's response: nothing, that READ is found first). A READ
    or atomic a restart resent stays unacknowledged until its own response comes
    (`pin`), whatever ACKs the tap saw before. An RNR NAK since the run's start, for a
    PSN past p, moved r there: the requester acked every PSN before it and resends
    from it once its timer runs out, so p is no longer covered. (For p at or past it,
    r stays: the RNR NAK may have been lost after the tap, which only the resend's
    timing shows.)"""
    e = ep_row[h]
    if e < 0:
        return False
    r = upsn[e]
    if trig[e] >= 0 and (reason[e] == REASON_NAK_SEQ or reason[e] == REASON_RNR) and \
            upsn[trig[e]] < r:
        r = upsn[trig[e]]
    if cz[h, CZ_RNR, 1] > e and p < cz[h, CZ_RNR, 0]:
        r = cz[h, CZ_RNR, 0]
    una = max(acked[h], floor)
    if f_len[h] > 0 and fifo[h, f_head[h], 1] < una:
        una = fifo[h, f_head[h], 1]
    if 0 <= pin[h, 0] < una and not flags[pin[h, 1]] & F_AMBIGUOUS:
        una = pin[h, 0]
    return una <= r <= p


@njit
def _covered_since(upsn, flags, cz, trig_kind, acked, fifo, f_head, f_len, ep_row, trig, reason,
                   pin, h):
    """The restart at `ep_row` was taken with doubt and is now shown one (its run goes
    on): a NAK or implied NAK seen since, which the hold of that restart's READ then
    left uncovered (`_pin_hole` does not count a doubtful one), is one the retry
    covers after all: the requester ignored it (IBA 9.7.5.1.3)."""
    for j in (CZ_NAK, CZ_IMPLIED):
        if trig_kind[h] & (1 << j) and cz[h, j, 1] > ep_row[h] and cz[h, j, 2] == 0 and \
                _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row, trig, reason,
                              pin, h, cz[h, j, 0], cz[h, j, 0] if j == CZ_NAK else 0):
            cz[h, j, 2] = 1


RNR_SCAN = 4096     # rows `_rnr_owed` looks back
HOLE_SCAN = 64      # rows `_sure_hole_before` looks back from the hole's showing


@njit
def _sure_hole_before(hc, cls, upsn, icrc, cz, trig_kind, h, p):
    """Whether the pending implied NAK (one the requester acts on) names a PSN before
    p whose response the tap saw arrive damaged: the requester dropped it, so it
    surely restarts there (its oldest missing response, IBA 9.7.4.1.5), and that
    restart covers a hole at p. (A hole whose response the tap never saw may be the
    capture's miss: the requester may have it.)"""
    q = cz[h, CZ_IMPLIED, 0]
    if not trig_kind[h] & T_IMPLIED or cz[h, CZ_IMPLIED, 2] != 0 or q < 0 or q >= p:
        return False
    r = cz[h, CZ_IMPLIED, 1] - 1
    while r >= 0 and r > cz[h, CZ_IMPLIED, 1] - HOLE_SCAN:
        if hc[r] == h and cls[r] & C_RESPONSE and upsn[r] == q:
            return icrc[r] == CRC_BAD
        r -= 1
    return False


@njit(inline="always")
def _rnr_owed(hc, cls, upsn, syn, flags, q, h, u):
    """RNR NAK q refused PSN u: did two copies of u reach the tap since the RNR NAK
    before it (or the stream's start)? Each copy that finds no receive WQE is
    refused, so a network duplicate draws a second RNR NAK. (Not a copy past the
    responder's expected PSN, nor one with a bad ICRC: the responder drops it, or
    NAKs the PSN it expects; it refuses only the request it expects. Scans back a
    bounded number of rows: asked only for a repeated RNR NAK.)"""
    n = 0
    r = q - 1
    while r >= 0 and r > q - RNR_SCAN and n < 2:
        if hc[r] == h:
            if cls[r] & C_REQUEST and upsn[r] == u and not flags[r] & (F_RESP_OOS | F_BAD_ICRC):
                n += 1
            elif cls[r] & C_RESPONSE and upsn[r] == u and _syn_kind(syn[r]) == SYN_RNR:
                break
        r -= 1
    return n >= 2


def dropped(flags, counts, epsn, i, h, c, u, s, kind):
    """A response with a bad ICRC."""
    # The requester drops it: no acknowledgement, no retry cause. It was sent,
    # so it still counts, and tells the responder's expected PSN.
    if kind == SYN_RNR:
        _mark(flags, counts, i, h, F_RNR, K_RNR)
        epsn[h] = u
    elif kind == SYN_NAK:
        flags[i] |= F_NAK
        code = (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK
        if code < 5:
            counts[h, K_NAK0 + code] += 1
        if code == 0:
            epsn[h] = u
    elif kind == SYN_ACK:
        if c & C_ACK:
            counts[h, K_ACKS] += 1
        if u + 1 > epsn[h]:
            epsn[h] = u + 1


def read_response(hc, cls, icrc, upsn, ts, rtt, prev_tx, rtt_fb, flags, counts, acked, trig_u,
                  trig_row, trig_kind, cz, retrying, fifo, f_head, f_len, rd_rs, rd_gap, min_rtt,
                  ep_row, trig, reason, pin, i, h, u):
    """A READ response or atomic ACK against the FIFO of outstanding requests."""
    if u == pin[h, 0]:
        pin[h, 0] = -1      # the restarted READ's own response: acknowledged now
        pin[h, 2] = i
        if f_len[h] > 0 and fifo[h, f_head[h], 0] <= u < fifo[h, f_head[h], 2] and \
                not flags[pin[h, 1]] & F_AMBIGUOUS:
            # The requester dropped every response past u that came while it awaited
            # u (out of sequence: an implied NAK, its data unused; rxe's completer
            # drops it as it retries) and had every one before u (a re-read asks only
            # for what never came, IBA 9.7.4.1.5; those the tap lacks it missed): it
            # expects u + 1 next, whatever the tap saw of the stream before.
            fifo[h, f_head[h], 1] = u
    _rtt_sample(rtt, prev_tx, ts, min_rtt, rtt_fb, h, i)   # (READ-only streams have no ACKs)
    if f_len[h] > 0:
        slot = f_head[h]
        f_first, f_next, f_end = fifo[h, slot, 0], fifo[h, slot, 1], fifo[h, slot, 2]
        # Within one round trip of the request that resent the expected PSN, a
        # response past it was sent before that resend reached the responder: the
        # hole the requester is already retrying, not a new implied NAK.
        past = (u >= f_end or u > f_next) and not (
            rd_rs[h, 0] == f_next and min_rtt[h] >= 0 and ts[i] - ts[rd_rs[h, 1]] < min_rtt[h])
        # A later READ whose responses all came already (credited, below) is
        # complete at the requester: one more response of it (the responder
        # re-read it for a restart) is a duplicate, and shows no hole.
        if past:
            for k in range(1, f_len[h]):
                later = (slot + k) % READ_FIFO
                if fifo[h, later, 0] <= u < fifo[h, later, 2] and \
                        fifo[h, later, 1] >= fifo[h, later, 2]:
                    past = False
        if past:
            # Marked and counted once per hole: later responses past it show the
            # same hole, until the requester resends its PSN; not while a retry
            # from that PSN or before is under way (the requester ignores it).
            covered = _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row, trig,
                                    reason, pin, h, f_next, f_first if u < f_end else 0)
            if _hole_shown(flags, counts, trig_u, trig_row, trig_kind, cz, retrying, rd_gap, i, h,
                           f_next, covered, F_IMPLIED | F_RESP_GAP):
                counts[h, K_RESP_GAPS] += 1
        if u >= f_first and u == f_next:
            fifo[h, slot, 1] = u + 1
            fifo[h, slot, 3] = i
        else:
            # A later READ's own response, in order, while an earlier one still
            # misses some: credited to it (else, once the earlier one completes,
            # the later one would wait for responses that already came).
            # One past its next expected response is a hole in it too: if the
            # requester has the earlier one's (the capture missed them), it restarts
            # there (not while a retry covering it is under way, nor for a response
            # that left before the resend of that PSN arrived).
            for k in range(1, f_len[h]):
                later = (slot + k) % READ_FIFO
                if fifo[h, later, 0] <= u < fifo[h, later, 2]:
                    l_next = fifo[h, later, 1]
                    if u == l_next:
                        fifo[h, later, 1] = u + 1
                        fifo[h, later, 3] = i
                    elif u > l_next and not (
                            rd_rs[h, 0] == l_next and min_rtt[h] >= 0 and
                            ts[i] - ts[rd_rs[h, 1]] < min_rtt[h]) and \
                            not _sure_hole_before(hc, cls, upsn, icrc, cz, trig_kind, h,
                                                  l_next) and \
                            not _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row,
                                              trig, reason, pin, h, l_next, fifo[h, later, 0]):
                        _note_implied(cz, trig_kind, h, l_next, i, True, False)
                        if trig_u[h] < 0:
                            trig_u[h] = l_next
                            trig_row[h] = i
                    break
        while f_len[h] > 0 and fifo[h, f_head[h], 1] >= fifo[h, f_head[h], 2]:
            f_head[h] = (f_head[h] + 1) % READ_FIFO
            f_len[h] -= 1


def ack(hc, cls, upsn, ts, rtt, prev_tx, rtt_fb, flags, acked_n, credits, counts, acked, epsn,
        trig_u, trig_row, trig_kind, cz, retrying, fifo, f_head, f_len, rd_gap, min_rtt, ack_row,
        ack_u, ep_row, trig, reason, pin, seq_nak, nak_nxt, i, h, c, u, s):
    """An ACK."""
    if c & C_ACK:
        counts[h, K_ACKS] += 1
        credits[i] = (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK
        ack_row[h] = i
        ack_u[h] = u
        slot = f_head[h]
        fifo_hole = _fifo_hole(fifo, f_head, f_len, h, u + 1)
        hp = fifo[h, slot, 1] if fifo_hole else _pin_hole(flags, pin, h, u + 1)
        # Once per hole (read_response). A retry from that PSN or before under way
        # covers it: the requester ignores it, no cause.
        covered = hp >= 0 and _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row,
                                            trig, reason, pin, h, hp, 0)
        if fifo_hole or (hp >= 0 and not covered):
            _hole_shown(flags, counts, trig_u, trig_row, trig_kind, cz, retrying, rd_gap, i, h, hp,
                        covered, F_IMPLIED)
        if u + 1 > acked[h]:
            acked_n[i] = u + 1 - acked[h]
            _rtt_sample(rtt, prev_tx, ts, min_rtt, rtt_fb, h, i)
        else:
            _mark(flags, counts, i, h, F_DUP_ACK, K_DUP_ACKS)
    if u + 1 > acked[h]:
        acked[h] = u + 1
    if u + 1 > epsn[h]:
        epsn[h] = u + 1
    # With no copy of the PSN the pending NAK names seen since that NAK, the ACK
    # answers no restart for it: the responder took a copy already on its way (a
    # late one), and the requester, which got the NAK first, restarts all the same.
    # So for one kept back behind another (`rc_causes`): its run decides it.
    fresh_nak = trig_kind[h] & T_NAK and cz[h, CZ_NAK, 0] == trig_u[h] and \
        cz[h, CZ_NAK, 2] == 0 and (seq_nak[h] == trig_u[h] or
                                   (nak_nxt[h, 0] >= 0 and seq_nak[h] == _last_kept(nak_nxt, h))
                                   or trig_u[h] == nak_nxt[h, 2] or trig_u[h] == nak_nxt[h, 3])
    if trig_u[h] >= 0 and acked[h] > trig_u[h] and not trig_kind[h] & T_IMPLIED and \
            not fresh_nak:
        # The refused PSN is acknowledged: nothing to resend. (Not an implied
        # NAK: an ACK past a READ is what reveals its missing responses.) A later
        # sequence NAK naming a PSN still unacknowledged, no restart taken for it
        # yet, stays pending: the ACK answers the earlier cause only.
        later = trig_kind[h] & T_NAK != 0 and cz[h, CZ_NAK, 0] >= acked[h] and \
            _nak_unanswered(hc, cls, flags, trig, cz, h, i)
        trig_kind[h] = T_NAK if later else 0
        _earliest_cause(cz, trig_u, trig_row, trig_kind, h)


def nak(upsn, flags, counts, high, acked, epsn, trig_u, trig_row, trig_kind, cz, nak_u, rnr_u,
        rnr_doubt, retrying, nak_new, fifo, f_head, f_len, rd_gap, rnr_row, rnr_first, ep_row, trig,
        reason, pin, nak_nxt, i, h, u, s, kind, stash, nak_stale):
    """A NAK or an RNR NAK. (`stash`: a sequence NAK past the pending one, kept in
    `nak_nxt` until a restart answers that one; `nak_stale`: one the network delayed
    past a positive acknowledgement of its PSN, which the requester drops.)"""
    code = (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK
    # Its implicit ACK of every PSN before u covers a READ or atomic still missing
    # responses (a hole, as for an ACK); whether a retry covers that hole is judged
    # before this RNR NAK moves the retry point (the requester finds the hole first).
    slot = f_head[h]
    hole = _fifo_hole(fifo, f_head, f_len, h, u)
    hp = fifo[h, slot, 1] if hole else _pin_hole(flags, pin, h, u)
    imp_cov = hp >= 0 and _retry_covers(upsn, flags, cz, acked, fifo, f_head, f_len, ep_row, trig,
                                        reason, pin, h, hp, 0)
    hole = hole or (hp >= 0 and not imp_cov)
    if kind == SYN_RNR:
        _mark(flags, counts, i, h, F_RNR, K_RNR)    # (a stale one too: counted, then dropped)
        if not nak_stale:
            _note_cause(cz, trig_kind, h, CZ_RNR, T_RNR, u, i)
            trig_kind[h] |= T_RNR
            if rnr_u[h] != u:
                rnr_first[h] = i
            rnr_u[h] = u
            rnr_row[h] = i
            rnr_doubt[h] = False
    else:
        flags[i] |= F_NAK
        if code < 5:
            counts[h, K_NAK0 + code] += 1
        if code == 0 and stash:
            # The requester restarts for the pending NAK first; this one's implicit
            # ACK then ends that retry, and it restarts again here (`episode_start`).
            _keep_nak(nak_nxt, h, u, i)
        elif code == 0 and not nak_stale:
            _note_cause(cz, trig_kind, h, CZ_NAK, T_NAK, u, i)
            if cz[h, CZ_NAK, 1] == i and _retry_covers(upsn, flags, cz, acked, fifo, f_head,
                                                       f_len, ep_row, trig, reason, pin, h, u,
                                                       u):
                # A retry from u or before is under way: the requester ignores it
                # (IBA 9.7.5.1.3; rxe: `started_retry`). Still pending for the rules
                # that ask whether a cause is, but no restart answers it.
                cz[h, CZ_NAK, 2] = 1
            trig_kind[h] |= T_NAK
            nak_u[h] = u
            if not retrying[h] and u >= acked[h] and high[h] > u:
                retrying[h] = True
                nak_new[h] = True
                flags[i] |= F_RETRY_START
    if (kind == SYN_RNR or (code == 0 and not stash)) and not nak_stale:
        if trig_u[h] < 0 or u < trig_u[h] or trig_row[h] < 0:
            trig_u[h] = u
        trig_row[h] = i
        if hole:
            # An implied NAK, as for an ACK (ignored while a retry covers it).
            new_hole = rd_gap[h] != hp
            if new_hole:
                flags[i] |= F_IMPLIED
                counts[h, K_IMPLIED] += 1
                rd_gap[h] = hp
            if hp < trig_u[h]:
                trig_u[h] = hp
            _note_implied(cz, trig_kind, h, hp, i, new_hole, imp_cov)
    if (kind == SYN_RNR or code == 0) and not nak_stale:
        if u > acked[h]:
            acked[h] = u
        epsn[h] = u
