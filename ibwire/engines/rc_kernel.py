"""RC sequencing kernel: one pass over a capture's rows, per half-connection state.

The rules are those of `ibwire.analysis.rc_rules` (tables and flag bits) and
`docs/rc-analysis.md`. `rc_pass` is the Numba build; `rc_pass_py` the same code
run by the interpreter (the twin the tests compare it with). Both take rows in
capture order, already grouped into half-connections (`hc`, -1 = not RC/UC/UD
transport) with 24-bit PSNs unwrapped to 64 bits (`unwrap_psns`), and return
nothing: they fill the per-row output arrays and the per-half-connection
`counts` in place.

State per half-connection (requester side seen at the tap, then the responder):
`high` first PSN never seen in a request, `acked` first PSN not acknowledged,
`epsn` the responder's expected PSN, `trig_*` a pending retry cause (NAK,
RNR NAK, implied NAK) with its PSN and row, `ep_*` the go-back-N episode in
progress, and a FIFO of outstanding READ/atomic requests.
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

import numpy as np
from numba import njit

from ibwire.analysis.rc_rules import (
    MIN_ACK_TIMEOUT_NS, RNR_TIMER_NS,
    C_ACK, C_ATOMIC_ACK, C_ATOMIC_REQ, C_LAST, C_READ_REQ, C_READ_RESP, C_RELIABLE, C_REQUEST,
    C_RESPONSE, C_UC, F_AMBIGUOUS, F_BAD_ICRC, F_COPY, F_DUP, F_DUP_ACK, F_EPISODE, F_GAP,
    F_IMPLIED,
    F_LATE, F_LOST_AFTER, F_MSG_END, F_NAK, F_RESP_GAP, F_RESP_OOS, F_RETRY_START, F_RETX,
    F_RNR, F_RNR_RETRY, F_UC_GAP, GAP_RING, K_ACKS, K_BAD_ICRC, K_BYTES, K_COPIES, K_DUP,
    K_DUP_ACKS, K_GBN, K_IMPLIED, K_LATE, K_LOST_AFTER, K_LOST_BEFORE, K_MESSAGES, K_NAK0,
    K_PACKETS, K_REQUESTS, K_RESP_GAPS, K_RESPONSES, K_RETX, K_RETX_BYTES, K_RNR,
    K_RNR_RETRIES, K_TIMEOUTS, K_UC_GAPS, READ_FIFO, REASON_IMPLIED, REASON_NAK_SEQ,
    REASON_RNR, REASON_TIMEOUT, SYN_ACK, SYN_NAK, SYN_RNR,
)

from ibwire.headers.extended import AETH  # noqa: E402

# The AETH syndrome's parts, from the layout's overlays (type, then the 5-bit value:
# credit count, RNR timer or NAK code).
_, _, SYN_TYPE_SHIFT, SYN_TYPE_MASK = AETH.offsets()["syndrome_type"]
_, _, SYN_VALUE_SHIFT, SYN_VALUE_MASK = AETH.offsets()["credit_count"]

T_NAK, T_RNR, T_IMPLIED = 1, 2, 4       # pending retry causes (bits of trig_kind)
CRC_BAD = 0


@njit(cache=True, inline="always")
def _mark(flags, counts, i, h, flag, k):
    """Row i gets `flag`; its half-connection h counts one more `k`."""
    flags[i] |= flag
    counts[h, k] += 1


@njit(cache=True, inline="always")
def _rnr_wait_ns(syndrome):
    """The least wait an RNR NAK with this syndrome asks of the requester."""
    return RNR_TIMER_NS[(syndrome >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK]


@njit(cache=True)
def _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode, ep_cur, ep_active,
                     ep_end, ep_last, ep_next, retrying, high, upsn):
    """Row r turns out to be a resend that started an episode whose cause the tap did
    not see: count it as a timeout episode, now running up to the stream's front.
    Returns the next episode number. (Rare: a plain call, not inlined.)"""
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[r]
    counts[h, K_GBN] += 1
    counts[h, K_TIMEOUTS] += 1
    reason[r] = REASON_TIMEOUT
    episode[r] = n_ep
    ep_cur[h] = n_ep
    ep_active[h] = True
    ep_end[h] = high[h]
    ep_last[h] = upsn[r]
    ep_next[h] = u
    retrying[h] = True
    return n_ep + 1


@njit(cache=True)
def _cause_episode(r, h, u, n_ep, counts, paylen, reason, episode, trig, ep_cur, ep_active,
                   ep_end, ep_last, ep_next, high, upsn, trig_u, trig_row, trig_kind, nak_new,
                   rnr_u, retrying, rgaps, rgap_at, sure):
    """Row r, a copy held back as possibly late or duplicated while a retry cause was
    pending for an earlier PSN, turns out to start that cause's resend run (the next
    request continues it in order): the run's first resends (the cause's PSN up to
    r's) did not reach the tap. Unless `sure`, the cause stays pending (the start may
    still be a late copy). Returns the next episode number. (Rare: a plain call.)"""
    k = trig_kind[h]
    if k == 0:
        return _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode, ep_cur,
                                ep_active, ep_end, ep_last, ep_next, retrying, high, upsn)
    counts[h, K_RETX] += 1
    counts[h, K_RETX_BYTES] += paylen[r]
    if k & T_RNR:
        reason[r] = REASON_RNR
        counts[h, K_RNR_RETRIES] += 1
        rnr_u[h] = -1
    elif k & T_NAK:
        reason[r] = REASON_NAK_SEQ
    else:
        reason[r] = REASON_IMPLIED
    if reason[r] != REASON_RNR or nak_new[h]:
        counts[h, K_GBN] += 1
    trig[r] = trig_row[h]
    episode[r] = n_ep
    ep_cur[h] = n_ep
    ep_active[h] = True
    ep_end[h] = high[h]
    ep_last[h] = upsn[r]
    ep_next[h] = u
    if not sure:
        return n_ep + 1
    # The run skipped the PSNs from the cause's to r's: a later copy of one is that
    # run's resend, delayed (or the original, when the tap had not seen it; no PSN of
    # them is counted lost here).
    slot = rgap_at[h] % GAP_RING
    rgaps[h, slot, 0] = trig_u[h]
    rgaps[h, slot, 1] = upsn[r]
    rgaps[h, slot, 2] = n_ep
    rgaps[h, slot, 3] = upsn[r]
    rgaps[h, slot, 4] = 0
    rgaps[h, slot, 5] = r
    rgap_at[h] += 1
    nak_new[h] = False
    trig_u[h] = -1
    trig_kind[h] = 0
    trig_row[h] = -1
    return n_ep + 1


def _pass(hc, cls, upsn, syn, msn, dmalen, paylen, icrc, first_tx, prev_tx, pmtu, start_u, ts, rtt,
          flags, ref, episode, trig, acked_n, credits, msg, gap, reason, counts):
    n_hc = len(pmtu)
    init = np.zeros(n_hc, dtype=np.bool_)
    high = np.zeros(n_hc, dtype=np.int64)
    acked = np.zeros(n_hc, dtype=np.int64)
    epsn = np.zeros(n_hc, dtype=np.int64)
    trig_u = np.full(n_hc, -1, dtype=np.int64)
    trig_row = np.full(n_hc, -1, dtype=np.int64)
    trig_kind = np.zeros(n_hc, dtype=np.int64)
    nak_u = np.full(n_hc, -1, dtype=np.int64)
    rnr_u = np.full(n_hc, -1, dtype=np.int64)
    ep_active = np.zeros(n_hc, dtype=np.bool_)
    ep_last = np.zeros(n_hc, dtype=np.int64)
    ep_end = np.zeros(n_hc, dtype=np.int64)
    ep_cur = np.full(n_hc, -1, dtype=np.int32)
    ep_next = np.zeros(n_hc, dtype=np.int64)
    pos_acked = np.zeros(n_hc, dtype=np.int64)
    retrying = np.zeros(n_hc, dtype=np.bool_)     # a counted retry awaits forward progress
    nak_new = np.zeros(n_hc, dtype=np.bool_)      # a first sequence NAK awaits its resend
    # recent holes: [lo, hi) and the row that jumped past them (their originals were
    # sent before it)
    gaps = np.full((n_hc, GAP_RING, 3), -1, dtype=np.int64)
    gap_at = np.zeros(n_hc, dtype=np.int64)
    # PSNs a resend run skipped: lo, hi, episode, first one no ACK had covered (lost),
    # whether the run was still unsure to be one (ambiguous), and the row that found
    # the skip (only the first copy after it is late rather than lost)
    rgaps = np.full((n_hc, GAP_RING, 6), -1, dtype=np.int64)
    rgap_at = np.zeros(n_hc, dtype=np.int64)
    msg_no = np.zeros(n_hc, dtype=np.int32)
    fifo = np.zeros((n_hc, READ_FIFO, 3), dtype=np.int64)    # first, next, end
    f_head = np.zeros(n_hc, dtype=np.int64)
    f_len = np.zeros(n_hc, dtype=np.int64)
    min_rtt = np.full(n_hc, -1, dtype=np.int64)
    last_resp = np.full(n_hc, -1, dtype=np.int64)     # previous response row, if no request since
    late_row = np.full(n_hc, -1, dtype=np.int64)
    late_next = np.zeros(n_hc, dtype=np.int64)
    late_cause = np.zeros(n_hc, dtype=np.bool_)    # ... held back while a cause was pending
    known = np.zeros(n_hc, dtype=np.int64)     # the requester has shown it acts on NAK p
    rnr_row = np.full(n_hc, -1, dtype=np.int64)
    rd_row = np.full(n_hc, -1, dtype=np.int64)     # last READ response / atomic ACK in order
    rd_end = np.zeros(n_hc, dtype=np.int64)        # ... and its request's end PSN
    ack_row = np.full(n_hc, -1, dtype=np.int64)    # last ACK, and its PSN
    copy_row = np.full(n_hc, -1, dtype=np.int64)   # a network duplicate, decided next
    copy_next = np.zeros(n_hc, dtype=np.int64)
    copy_cause = np.zeros(n_hc, dtype=np.bool_)
    lr_row = np.full(n_hc, -1, dtype=np.int64)     # a late resend that may start a run
    rnr_late = np.full((n_hc, 2), -1, dtype=np.int64)  # refused PSN a retry run skipped, row
    # A run packet past the run's next PSN, decided at the next request: row, the run's
    # last and next PSN before it, the rgaps slot it wrote, and whether it filled a
    # first-transmission hole.
    jmp = np.full((n_hc, 5), -1, dtype=np.int64)
    lr_next = np.zeros(n_hc, dtype=np.int64)
    lr_lost = np.zeros(n_hc, dtype=np.bool_)
    # A run taken from a copy too soon for any timer (no cause seen): its start and next
    # packet stay flagged unless a third continues it in order (late copies come singly
    # or in pairs, a run goes on).
    soon = np.zeros(n_hc, dtype=np.int64)
    soon_rows = np.full((n_hc, 2), -1, dtype=np.int64)
    ep_amb = np.zeros(n_hc, dtype=np.bool_)        # the run in progress started ambiguous
    ep_row = np.full(n_hc, -1, dtype=np.int64)     # ... at this row
    delays = np.zeros(n_hc, dtype=np.bool_)        # copies seen delayed past later ones
    last_req = np.full(n_hc, -1, dtype=np.int64)   # previous request row
    back2back = np.zeros(n_hc, dtype=np.bool_)     # ... the ambiguous start repeats it
    ack_u = np.zeros(n_hc, dtype=np.int64)
    n_ep = 0
    for i in range(len(hc)):
        h = hc[i]
        if h < 0:
            continue
        c = cls[i]
        u = upsn[i]
        counts[h, K_PACKETS] += 1
        counts[h, K_BYTES] += paylen[i]
        if not init[h]:
            init[h] = True
            first = start_u[h] if start_u[h] >= 0 else u
            high[h] = first
            acked[h] = first
            pos_acked[h] = first
            epsn[h] = first
        if icrc[i] == CRC_BAD:
            _mark(flags, counts, i, h, F_BAD_ICRC, K_BAD_ICRC)
        if c & C_REQUEST:
            counts[h, K_REQUESTS] += 1
            last_resp[h] = -1
            consume = np.int64(1)
            if c & C_READ_REQ and dmalen[i] > 0:
                consume = (dmalen[i] + pmtu[h] - 1) // pmtu[h]
            d = u - high[h]
            if c & C_UC:
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
                continue
            if not c & C_RELIABLE:
                continue
            seen = first_tx[i] < i
            # A copy of the request just before it: what a network duplicate looks like.
            b2b = seen and prev_tx[i] == last_req[h]
            last_req[h] = i
            if rnr_u[h] >= 0 and u > rnr_u[h] and seen and \
                    ts[i] - ts[rnr_row[h]] >= _rnr_wait_ns(syn[rnr_row[h]]):
                # A resend past the refused PSN after the RNR wait: the requester has
                # restarted, with the refused PSN first, and that retry was lost before
                # the tap. (New PSNs prove nothing: a requester may go on sending until
                # it has processed the RNR NAK, which the tap sees leave, not arrive.)
                # (Or delayed: then it comes later as the late resend of this run.)
                rnr_late[h, 0] = rnr_u[h]
                rnr_late[h, 1] = i
                rnr_u[h] = -1
                trig_kind[h] &= ~T_RNR
                if trig_kind[h] == 0:
                    trig_u[h] = -1
            p = late_row[h]
            if p >= 0:
                late_row[h] = -1
                # The PSN after it, or a later one (those between lost before the tap).
                if u >= late_next[h] and d < 0:
                    flags[p] = (flags[p] & ~(F_LATE | F_AMBIGUOUS)) | F_RETX | F_EPISODE
                    if not late_cause[h]:
                        for g in range(GAP_RING):
                            if gaps[h, g, 0] <= upsn[p] < gaps[h, g, 1] and \
                                    ts[p] - ts[gaps[h, g, 2]] < MIN_ACK_TIMEOUT_NS:
                                # Too soon for the requester's timer: a cause the tap
                                # missed, or two late copies in a row.
                                flags[p] |= F_AMBIGUOUS
                                soon[h] = 1
                                soon_rows[h, 0] = p
                    counts[h, K_LATE] -= 1
                    counts[h, K_LOST_BEFORE] += 1
                    if late_cause[h] and 0 <= trig_u[h] < upsn[p]:
                        if delays[h]:
                            flags[p] |= F_AMBIGUOUS     # this network delays copies
                        n_ep = _cause_episode(p, h, u, n_ep, counts, paylen, reason, episode,
                                              trig, ep_cur, ep_active, ep_end, ep_last,
                                              ep_next, high, upsn, trig_u, trig_row, trig_kind,
                                              nak_new, rnr_u, retrying, rgaps, rgap_at,
                                              True)
                        ep_amb[h] = delays[h]
                        ep_row[h] = p
                    else:
                        n_ep = _timeout_episode(p, h, u, n_ep, counts, paylen, reason, episode,
                                                ep_cur, ep_active, ep_end, ep_last, ep_next,
                                                retrying, high, upsn)
            r = jmp[h, 0]
            if r >= 0:
                jmp[h, 0] = -1
                if seen and d < 0 and u == jmp[h, 2] and episode[r] == ep_cur[h] and \
                        ep_active[h] and not 0 <= trig_u[h] <= u and \
                        ts[i] - ts[r] < MIN_ACK_TIMEOUT_NS:
                    # The run resumes at its next PSN, with no cause to restart there and
                    # too soon for a timer: it never jumped. The packet past it was a
                    # late copy that arrived amid the run (a run goes in PSN order).
                    flags[r] = (flags[r] & ~(F_RETX | F_GAP | F_AMBIGUOUS)) | F_LATE
                    counts[h, K_RETX] -= 1
                    counts[h, K_RETX_BYTES] -= paylen[r]
                    counts[h, K_LOST_BEFORE] -= gap[r] + jmp[h, 4]
                    counts[h, K_LATE] += 1
                    gap[r] = 0
                    episode[r] = -1
                    if jmp[h, 3] >= 0 and (rgap_at[h] - 1) % GAP_RING == jmp[h, 3]:
                        rgaps[h, jmp[h, 3], :] = -1
                        rgap_at[h] -= 1
                    ep_last[h] = jmp[h, 1]
                    ep_next[h] = jmp[h, 2]
                    delays[h] = True
            r = lr_row[h]
            if r >= 0:
                lr_row[h] = -1
                if seen and d < 0 and upsn[r] < u <= lr_next[h]:
                    # The next request resends the PSN after it (or one inside its READ,
                    # restarted part-way): the requester's timer restarted there (a run
                    # goes on in order), not an old run's resend.
                    flags[r] = (flags[r] & ~(F_AMBIGUOUS | F_RNR_RETRY)) | F_EPISODE
                    counts[h, K_RETX] -= 1
                    counts[h, K_RETX_BYTES] -= paylen[r]
                    if lr_lost[h]:
                        counts[h, K_LOST_BEFORE] += 1
                    n_ep = _timeout_episode(r, h, u, n_ep, counts, paylen, reason, episode,
                                            ep_cur, ep_active, ep_end, ep_last, ep_next,
                                            retrying, high, upsn)
                    ep_amb[h] = False
            q = copy_row[h]
            if q >= 0:
                copy_row[h] = -1
                if seen and d < 0 and not back2back[h] and (u == copy_next[h] or (
                        u > copy_next[h] and acked[h] <= upsn[q])):
                    # The next request resends the PSN after it (or a later one, those
                    # between lost before the tap; no ACK let a restart begin past the
                    # copy): an in-order run, which the network does not make. The copy
                    # started a resend run whose cause the tap did not see (e.g. a
                    # response the capture missed).
                    flags[q] = (flags[q] & ~(F_COPY | F_AMBIGUOUS)) | F_RETX | F_EPISODE
                    if delays[h] or u > copy_next[h]:
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
                    if copy_cause[h] and 0 <= trig_u[h] < upsn[q]:
                        n_ep = _cause_episode(q, h, u, n_ep, counts, paylen, reason, episode,
                                              trig, ep_cur, ep_active, ep_end, ep_last,
                                              ep_next, high, upsn, trig_u, trig_row, trig_kind,
                                              nak_new, rnr_u, retrying, rgaps, rgap_at,
                                              u <= copy_next[h])
                    else:
                        n_ep = _timeout_episode(q, h, u, n_ep, counts, paylen, reason, episode,
                                                ep_cur, ep_active, ep_end, ep_last, ep_next,
                                                retrying, high, upsn)
                    ep_amb[h] = delays[h]
                    ep_row[h] = q
            if d >= 0:
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
                    if skipped > 0:
                        # New data before the resend run reached the old front, and no
                        # ACK made those resends unneeded: they were lost before the tap.
                        flags[i] |= F_GAP
                        gap[i] += skipped
                        counts[h, K_LOST_BEFORE] += skipped
                    if ep_end[h] > ep_next[h]:
                        slot = rgap_at[h] % GAP_RING
                        rgaps[h, slot, 0] = ep_next[h]
                        rgaps[h, slot, 1] = ep_end[h]
                        rgaps[h, slot, 2] = ep_cur[h]
                        rgaps[h, slot, 3] = max(ep_next[h], acked[h])
                        rgaps[h, slot, 4] = ep_amb[h]
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
                    f_len[h] += 1
            else:
                cause = trig_u[h] >= 0 and trig_u[h] <= u
                # Past the refused PSN before the RNR timer ran out: not that RNR NAK's
                # restart (at the refused PSN, after the wait), which stays pending.
                rnr_early = u > rnr_u[h] >= 0 and \
                    ts[i] - ts[rnr_row[h]] < _rnr_wait_ns(syn[rnr_row[h]])
                if rnr_early and trig_kind[h] == T_RNR:
                    cause = False
                in_gap = False
                if not seen:
                    for g in range(GAP_RING):
                        if gaps[h, g, 0] <= u < gaps[h, g, 1]:
                            in_gap = True
                # Not seen and in no hole: inside an earlier READ's PSN range (a READ
                # restarted part-way), so it is a resend as much as a seen PSN is.
                run = ep_active[h] and u > ep_last[h]
                # Sooner than one round trip after the last copy, or than the shortest
                # local ACK timeout after the first, with no NAK seen: no retry cause
                # can have acted. (A READ or atomic that something after it has been
                # acknowledged, or the one just before this PSN whose responses came
                # since its last copy (its own resend then lost before the tap), may
                # have lost a response after the tap: an implied NAK the tap cannot
                # see, so only the round trip tells.)
                hidden = (c & (C_READ_REQ | C_ATOMIC_REQ) and acked[h] > u) or \
                    (rd_row[h] > prev_tx[i] and rd_end[h] == u)
                # Likewise a READ or atomic that an ACK covered since its last copy: the
                # requester takes that ACK for an implied NAK if a response was lost.
                hidden_ack = c & (C_READ_REQ | C_ATOMIC_REQ) and ack_row[h] > prev_tx[i] \
                    and ack_u[h] >= u
                rtt_quick = min_rtt[h] >= 0 and ts[i] - ts[prev_tx[i]] < min_rtt[h]
                to_quick = ts[i] - ts[first_tx[i]] < MIN_ACK_TIMEOUT_NS
                quick = seen and ((rtt_quick and not hidden_ack) or (to_quick and not hidden))
                # A resend, or a network duplicate: flagged when it is taken for a resend.
                unsure = seen and not quick and ((to_quick and hidden) or
                                                 (rtt_quick and hidden_ack))
                # Below a PSN the requester has already restarted at for a NAK (so it
                # knew everything before it acknowledged) and not part of a run: no
                # restart can send it (a READ or atomic may still lack responses).
                stale = seen and not cause and not run and u < known[h] and \
                    not c & (C_READ_REQ | C_ATOMIC_REQ)
                # With a cause pending for an earlier PSN, a quick copy may be the
                # network's as well as that restart (its first packets lost before the
                # tap): taken for the restart, flagged, and the cause stays pending.
                below = cause and trig_u[h] < u and quick
                copy = quick and not cause and not run
                # A quick copy, or a hole fill, past the PSN a pending cause names, not
                # in a run: the restart for that cause with its first packets missing
                # at the tap, or a late or duplicated copy. Held back as the copy; the
                # next request continuing it in order makes it the run's start. (Not a
                # copy at the very PSN the latest NAK or RNR NAK names: its restart.)
                held = not run and ((below and not (trig_row[h] >= 0 and upsn[trig_row[h]] == u))
                                    or (cause and trig_u[h] < u and not seen and in_gap))
                late_rerun = -1
                late_amb = False
                # A copy no cause or run explains, not quick: a timeout restart, or the
                # late resend of a run that skipped it (decided at the next request).
                # (At a refused PSN after its RNR wait it is that RNR NAK's retry; a READ
                # or atomic an unseen implied NAK may explain is a resend, below.)
                timer = seen and not cause and not run and not quick and not unsure and \
                    not stale and not (
                    u == rnr_u[h] and ts[i] - ts[rnr_row[h]] >= _rnr_wait_ns(syn[rnr_row[h]]))
                lost_back = False
                if stale or copy or (held and seen) or timer:
                    # No restart can have sent it now: an earlier copy delayed before
                    # the tap. If an earlier resend run skipped this PSN (a run resends
                    # every PSN in order), it is that run's missing resend, late.
                    for g in range(GAP_RING):
                        if rgaps[h, g, 0] <= u < rgaps[h, g, 1]:
                            late_rerun = rgaps[h, g, 2]
                            # A run that may be late copies skipped nothing for sure;
                            # and once a later run has resent the PSN, this copy may
                            # as well be the network's copy of that resend.
                            late_amb = rgaps[h, g, 4] == 1 or (
                                (flags[prev_tx[i]] & F_RETX) != 0 and
                                episode[prev_tx[i]] > late_rerun)
                            if u >= rgaps[h, g, 3] and prev_tx[i] < rgaps[h, g, 5]:
                                counts[h, K_LOST_BEFORE] -= 1      # late, not lost
                                lost_back = True
                            break
                if (late_rerun >= 0 and not timer) or stale:
                    delays[h] = True
                if late_rerun >= 0:
                    if u == rnr_late[h, 0] and late_rerun == episode[rnr_late[h, 1]]:
                        flags[i] |= F_RNR_RETRY     # the RNR retry, delayed
                        rnr_late[h, 0] = -1
                    if timer:
                        lr_row[h] = i
                        lr_next[h] = u + consume
                        lr_lost[h] = lost_back
                    flags[i] |= F_RETX
                    if late_amb:
                        flags[i] |= F_AMBIGUOUS
                    ref[i] = first_tx[i]
                    msg[i] = msg[first_tx[i]]
                    episode[i] = late_rerun
                    counts[h, K_RETX] += 1
                    counts[h, K_RETX_BYTES] += paylen[i]
                elif stale:
                    # A requester restarts only at an unacknowledged PSN: the original,
                    # delayed past its own resend (which the first copy in its hole
                    # was taken for), so not lost before the tap either.
                    flags[i] |= F_LATE
                    counts[h, K_LATE] += 1
                    if flags[first_tx[i]] & F_RETX and prev_tx[i] == first_tx[i]:
                        for g in range(GAP_RING):
                            if gaps[h, g, 0] <= u < gaps[h, g, 1]:
                                counts[h, K_LOST_BEFORE] -= 1
                                break
                elif copy or (held and seen):
                    # The network duplicated it (unless the next request continues it).
                    flags[i] |= F_COPY
                    ref[i] = prev_tx[i]
                    counts[h, K_COPIES] += 1
                    copy_row[h] = i
                    copy_next[h] = u + consume
                    copy_cause[h] = held
                    back2back[h] = b2b
                    if held or (b2b and flags[prev_tx[i]] & F_AMBIGUOUS):
                        # (Right after a copy taken for a resend with doubt: the two are
                        # that resend and a late copy, in either order.)
                        flags[i] |= F_AMBIGUOUS
                elif held:
                    # A late original, unless the next request continues it in order.
                    flags[i] |= F_AMBIGUOUS
                    _mark(flags, counts, i, h, F_LATE, K_LATE)
                    counts[h, K_LOST_BEFORE] -= 1
                    late_row[h] = i
                    late_next[h] = u + consume
                    late_cause[h] = True
                elif seen or cause or ep_active[h] or not in_gap:
                    if u == rnr_u[h] and \
                            ts[i] - ts[rnr_row[h]] < _rnr_wait_ns(syn[rnr_row[h]]):
                        # Sooner than the RNR NAK's timer allows (IBA: wait at least
                        # that long): the RNR NAK never reached the requester (lost
                        # after the tap); this resend answers another cause.
                        rnr_u[h] = -1
                        trig_kind[h] &= ~T_RNR
                    flags[i] |= F_RETX
                    if unsure and not cause and not run:
                        flags[i] |= F_AMBIGUOUS
                    ref[i] = first_tx[i] if seen else -1
                    msg[i] = msg[first_tx[i]] if seen else -1
                    counts[h, K_RETX] += 1
                    counts[h, K_RETX_BYTES] += paylen[i]
                    if not ep_active[h] or u <= ep_last[h]:
                        flags[i] |= F_EPISODE
                        ep_cur[h] = n_ep
                        n_ep += 1
                        ep_active[h] = True
                        ep_end[h] = high[h]
                        k = trig_kind[h] if trig_u[h] >= 0 else 0
                        if rnr_early:
                            k &= ~T_RNR
                        trig[i] = trig_row[h]
                        if (below and not run) or (cause and trig_u[h] < u and not seen
                                                   and in_gap):
                            # The cause asks for a restart at its own PSN, which the
                            # tap did not see: this copy, quick after its last one or
                            # filling a hole, may be late or duplicated instead.
                            flags[i] |= F_AMBIGUOUS
                        if k & T_RNR:
                            reason[i] = REASON_RNR
                        elif k & T_NAK:
                            reason[i] = REASON_NAK_SEQ
                        elif k & T_IMPLIED:
                            reason[i] = REASON_IMPLIED
                        else:
                            reason[i] = REASON_TIMEOUT
                            counts[h, K_TIMEOUTS] += 1
                        if k & T_RNR:
                            counts[h, K_RNR_RETRIES] += 1
                            if u > rnr_u[h]:
                                # The retry run after the RNR wait, its first packet
                                # (the refused PSN) missing at the tap: lost before it,
                                # or delayed (then it comes as this run's late resend).
                                rnr_late[h, 0] = rnr_u[h]
                                rnr_late[h, 1] = i
                                rnr_u[h] = -1
                        # Every run restarting for a sequence NAK, an implied NAK or a
                        # timeout is a go-back-N; an RNR retry is one only when it also
                        # answers the first sequence NAK since forward progress.
                        if reason[i] != REASON_RNR or nak_new[h]:
                            counts[h, K_GBN] += 1
                        if k & (T_NAK | T_RNR) and u == trig_u[h] and u > known[h]:
                            # A restart at the PSN a NAK or RNR NAK named: the requester
                            # got it, with its implicit ACK of every PSN before.
                            known[h] = u
                        if reason[i] == REASON_TIMEOUT:
                            retrying[h] = True
                        if not flags[i] & F_AMBIGUOUS:
                            if 0 <= trig_u[h] < u:
                                # The restart for the cause began at its PSN: the run
                                # skipped the PSNs up to this one (none counted lost).
                                slot = rgap_at[h] % GAP_RING
                                rgaps[h, slot, 0] = trig_u[h]
                                rgaps[h, slot, 1] = u
                                rgaps[h, slot, 2] = ep_cur[h]
                                rgaps[h, slot, 3] = u
                                rgaps[h, slot, 4] = 0
                                rgaps[h, slot, 5] = i
                                rgap_at[h] += 1
                            nak_new[h] = False
                            trig_u[h] = -1
                            trig_kind[h] = 0
                            trig_row[h] = -1
                    elif u > ep_next[h]:
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
                    refused = u == rnr_u[h]      # an RNR NAK refused it: not lost
                    if refused:
                        flags[i] |= F_RNR_RETRY
                        rnr_u[h] = -1
                    if seen and u == nak_u[h] and not refused:
                        # The responder asked again for a PSN the capture saw: the copy
                        # before this one never reached it (or arrived damaged).
                        p = prev_tx[i]
                        if not flags[p] & (F_LOST_AFTER | F_BAD_ICRC):
                            flags[p] |= F_LOST_AFTER
                            counts[h, K_LOST_AFTER] += 1
                        nak_u[h] = -1
                    if flags[i] & F_EPISODE:
                        soon[h] = 0
                    elif soon[h] > 0:
                        if u != ep_next[h]:
                            soon[h] = 0
                        elif soon[h] == 1:
                            flags[i] |= F_AMBIGUOUS
                            soon_rows[h, 1] = i
                            soon[h] = 2
                        else:
                            if not delays[h]:
                                flags[soon_rows[h, 0]] &= ~F_AMBIGUOUS
                                flags[soon_rows[h, 1]] &= ~F_AMBIGUOUS
                            soon[h] = 0
                    if flags[i] & F_EPISODE:
                        ep_amb[h] = (flags[i] & F_AMBIGUOUS) != 0
                        ep_row[h] = i
                        back2back[h] = b2b
                    elif ep_amb[h] and (delays[h] or back2back[h]):
                        flags[i] |= F_AMBIGUOUS     # continues a run that may not be one
                    elif ep_amb[h] and u != ep_next[h]:
                        # A jump past the PSN after it: no in-order run settles it (this
                        # may continue an earlier run), so the start stays flagged.
                        ep_amb[h] = False
                    elif ep_amb[h]:
                        # Continued in order: the network does not make runs (and this
                        # one has not been seen delaying copies), so it was one (unless
                        # it repeated the request before it: a run continuing past a
                        # duplicate).
                        flags[ep_row[h]] &= ~F_AMBIGUOUS
                        ep_amb[h] = False
                    episode[i] = ep_cur[h]
                    ep_last[h] = u
                    ep_next[h] = u + consume
                else:
                    # A hole filled with no retry cause: a late (reordered) original,
                    # unless the next request resends the PSN after it (a timeout
                    # go-back-N run); decided at that next request.
                    _mark(flags, counts, i, h, F_LATE, K_LATE)
                    counts[h, K_LOST_BEFORE] -= 1
                    late_row[h] = i
                    late_next[h] = u + consume
                    late_cause[h] = False
                if in_gap and c & C_LAST:
                    # The first copy of a message's last packet to pass the tap.
                    _mark(flags, counts, i, h, F_MSG_END, K_MESSAGES)
            if icrc[i] != CRC_BAD:
                if u == epsn[h]:
                    epsn[h] = u + consume
                elif u > epsn[h]:
                    flags[i] |= F_RESP_OOS
                else:
                    _mark(flags, counts, i, h, F_DUP, K_DUP)
            continue
        if not c & C_RESPONSE:
            continue
        counts[h, K_RESPONSES] += 1
        s = np.int64(syn[i])
        kind = (s >> SYN_TYPE_SHIFT) & SYN_TYPE_MASK if s >= 0 else -1
        q = last_resp[h]
        last_resp[h] = i
        if (kind == SYN_NAK or kind == SYN_RNR) and q >= 0 and upsn[q] == u and \
                syn[q] == syn[i] and msn[q] == msn[i]:
            # The same NAK again with no request in between: a responder NAKs a hole
            # once (and an RNR NAK answers a request), so the network duplicated it.
            _mark(flags, counts, i, h, F_COPY, K_COPIES)
            continue
        if icrc[i] == CRC_BAD:
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
            continue
        if c & C_READ_RESP or c & C_ATOMIC_ACK:
            if f_len[h] > 0:
                slot = f_head[h]
                f_first, f_next, f_end = fifo[h, slot, 0], fifo[h, slot, 1], fifo[h, slot, 2]
                if u >= f_end or u > f_next:
                    _mark(flags, counts, i, h, F_IMPLIED | F_RESP_GAP, K_IMPLIED)
                    counts[h, K_RESP_GAPS] += 1
                    if not retrying[h]:
                        retrying[h] = True
                        flags[i] |= F_RETRY_START
                    if trig_u[h] < 0 or f_next < trig_u[h]:
                        trig_u[h] = f_next
                        trig_row[h] = i
                    trig_kind[h] |= T_IMPLIED
                if u >= f_first and u == f_next:
                    rd_row[h] = i
                    rd_end[h] = f_end
                    fifo[h, slot, 1] = u + 1
                    if u + 1 >= f_end:
                        f_head[h] = (slot + 1) % READ_FIFO
                        f_len[h] -= 1
        if (kind == SYN_ACK or c & C_READ_RESP) and u >= pos_acked[h]:
            # Forward progress (a positive acknowledgement of a PSN no ACK covered
            # before; a NAK's implied acknowledgement does not count): the retry is
            # over and the next hole starts a new one.
            retrying[h] = False
            pos_acked[h] = u + 1
        if kind == SYN_ACK:
            if c & C_ACK:
                counts[h, K_ACKS] += 1
                credits[i] = (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK
                ack_row[h] = i
                ack_u[h] = u
                if f_len[h] > 0:
                    slot = f_head[h]
                    if u >= fifo[h, slot, 0] and fifo[h, slot, 1] < fifo[h, slot, 2]:
                        _mark(flags, counts, i, h, F_IMPLIED, K_IMPLIED)
                        if not retrying[h]:
                            retrying[h] = True
                            flags[i] |= F_RETRY_START
                        if trig_u[h] < 0 or fifo[h, slot, 1] < trig_u[h]:
                            trig_u[h] = fifo[h, slot, 1]
                            trig_row[h] = i
                        trig_kind[h] |= T_IMPLIED
                if u + 1 > acked[h]:
                    acked_n[i] = u + 1 - acked[h]
                    if rtt[i] >= 0 and (min_rtt[h] < 0 or rtt[i] < min_rtt[h]):
                        min_rtt[h] = rtt[i]
                else:
                    _mark(flags, counts, i, h, F_DUP_ACK, K_DUP_ACKS)
            if u + 1 > acked[h]:
                acked[h] = u + 1
            if u + 1 > epsn[h]:
                epsn[h] = u + 1
            if trig_u[h] >= 0 and acked[h] > trig_u[h] and not trig_kind[h] & T_IMPLIED:
                # The refused PSN is acknowledged: nothing to resend. (Not an implied
                # NAK: an ACK past a READ is what reveals its missing responses.)
                trig_u[h] = -1
                trig_kind[h] = 0
        elif kind == SYN_RNR or kind == SYN_NAK:
            code = (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK
            if kind == SYN_RNR:
                _mark(flags, counts, i, h, F_RNR, K_RNR)
                trig_kind[h] |= T_RNR
                rnr_u[h] = u
                rnr_row[h] = i
            else:
                flags[i] |= F_NAK
                if code < 5:
                    counts[h, K_NAK0 + code] += 1
                if code == 0:
                    trig_kind[h] |= T_NAK
                    nak_u[h] = u
                    if not retrying[h] and u >= acked[h] and high[h] > u:
                        retrying[h] = True
                        nak_new[h] = True
                        flags[i] |= F_RETRY_START
            if kind == SYN_RNR or code == 0:
                if trig_u[h] < 0 or u < trig_u[h] or trig_row[h] < 0:
                    trig_u[h] = u
                trig_row[h] = i
                if f_len[h] > 0:
                    # Its implicit ACK of every PSN before u covers a READ or atomic
                    # still missing responses: an implied NAK, as for an ACK.
                    slot = f_head[h]
                    if u > fifo[h, slot, 0] and fifo[h, slot, 1] < fifo[h, slot, 2]:
                        flags[i] |= F_IMPLIED
                        counts[h, K_IMPLIED] += 1
                        if fifo[h, slot, 1] < trig_u[h]:
                            trig_u[h] = fifo[h, slot, 1]
                        trig_kind[h] |= T_IMPLIED
                if u > acked[h]:
                    acked[h] = u
                epsn[h] = u


rc_pass_py = _pass
rc_pass = njit(cache=True)(_pass)
