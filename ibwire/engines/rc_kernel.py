"""RC sequencing kernel: one pass over a capture's rows, per half-connection state.

The rules are those of `ibwire.analysis.rc_rules` (tables and flag bits) and
`docs/rc-analysis.md`. `rc_pass` is the Numba build; `rc_pass_py` the same code,
rules included, run by the interpreter (the twin the tests compare it with).
Both take rows in capture order, already grouped into half-connections (`hc`,
-1 = not RC/UC/UD transport) with 24-bit PSNs unwrapped to 64 bits
(`unwrap_psns`). They fill the per-row output arrays and the per-half-connection
`counts` in place, for the half-connections `sel` picks (the others' rows are left
alone, for another pass: `rc_split` runs passes over disjoint ones on parallel
threads), and return how many episodes they numbered, each one's start row in `born`.

State per half-connection (requester side seen at the tap, then the responder):
`high` first PSN never seen in a request, `acked` first PSN not acknowledged,
`epsn` the responder's expected PSN, `trig_*` a pending retry cause (NAK,
RNR NAK, implied NAK) with its PSN and row, `ep_*` the go-back-N episode in
progress, and a FIFO of outstanding READ/atomic requests.

This module keeps the state, the loop and the order in which the rules apply to
a row. The rules are functions, blocks of the loop moved out verbatim and called
with the loop's names: `rc_requests` (UC requests, the end of an RNR wait, new
PSNs), `rc_pending` and `rc_pending_copies` (what a request decides about a row
the previous one left pending), `rc_copies` (a request below the highest PSN:
what it may be, a resend counted, late resends of a run's skip; `rc_late_copies`:
stale, held and late originals, network duplicates), `rc_episodes` (go-back-N
episodes; `rc_causes`: the pending causes a restart leaves or settles; `rc_unseen`:
what a restart shows the tap did not see; `rc_run_shape`: a run's jump, and what a
run's shape allows), `rc_response_row` (a response row: network copies of a NAK,
stale NAKs) and `rc_responses` (ACK, NAK, RNR NAK, READ responses); `rc_shared`
holds what they share. `rc_build` puts them back for Numba (`inline_rules`: each
call replaced by the function's body, so the build is one flat loop, the same
machine code as before the split) and makes the twin (`py_twin`).

The rule: after changing a rule module (or `rc_rules`), set `RC_HELPERS_DIGEST`.
Numba's cache (`cache=True`) checks only THIS file's date and size, and the
bytecode (blind to, e.g., a constant's value), yet `rc_pass` has the rule modules
and the `rc_rules` constants compiled in: edited alone, they could leave the old
kernel in the cache. `tests/test_rc_kernel_cache.py` fails, printing the new digest,
until it is set here; editing this file makes Numba recompile. (The twin runs the
rules' current code, so `tests/test_rc_engine.py` also catches a stale kernel.) The
rule modules' own Numba helpers are compiled with the kernel, which carries them in
its cache, not cached apart (Numba would check only the helper's own file).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

import numpy as np
from numba import njit

from ibwire.analysis.rc_rules import (
    C_ATOMIC_REQ, C_LAST, C_READ_REQ, C_RELIABLE, C_REQUEST, C_RESPONSE, C_UC, F_BAD_ICRC, F_DUP,
    F_MSG_END, F_RESP_OOS, GAP_RING, K_BAD_ICRC, K_BYTES, K_DUP, K_MESSAGES, K_PACKETS,
    K_REQUESTS, MIN_ACK_TIMEOUT_NS, READ_FIFO,
)

from ibwire.engines.rc_build import inline_rules, py_twin
from ibwire.engines.rc_causes import KEPT_AT, NAK_KEPT, _note_reaction
from ibwire.engines.rc_shared import AMB_PIN, CRC_BAD, CZ_RNR, T_RNR, _mark, _read_fills
from ibwire.engines.rc_copies import classify, late_resend, resent, skipped_resend
from ibwire.engines.rc_late_copies import (
    held_original, late_original, network_copy, stale_original,
)
from ibwire.engines.rc_episodes import episode_start, run_step
from ibwire.engines.rc_pending import (
    amid_decided, jump_decided, late_decided, late_resend_decided, restart_left, restart_shown,
    resume_decided,
)
from ibwire.engines.rc_pending_copies import amb_run_decided, copy_decided
from ibwire.engines.rc_requests import (
    nak_reached, new_request, rnr_wait_over, uc_request, unseen_read, unseen_retry,
)
from ibwire.engines.rc_response_row import response_row
from ibwire.engines.rc_run_shape import (
    _psns_taken, early_copy_decided, early_copy_noted, own_pace, run_jump,
)

# The sources Numba compiles into `rc_pass` from other modules: sha256, 12 hex digits
# (`rc_build.helpers_digest(_pass)`; tests/test_rc_kernel_cache.py prints the new one).
RC_HELPERS_DIGEST = "f7b31cdef402"


def _pass(hc, cls, upsn, syn, msn, dmalen, paylen, icrc, first_tx, prev_tx, pmtu, start_u, ts, rtt,
          flags, ref, episode, trig, acked_n, credits, msg, gap, reason, counts, sel, born):
    n_hc = len(pmtu)
    init = np.zeros(n_hc, dtype=np.bool_)
    high = np.zeros(n_hc, dtype=np.int64)
    acked = np.zeros(n_hc, dtype=np.int64)
    epsn = np.zeros(n_hc, dtype=np.int64)
    trig_u = np.full(n_hc, -1, dtype=np.int64)
    trig_row = np.full(n_hc, -1, dtype=np.int64)
    trig_kind = np.zeros(n_hc, dtype=np.int64)
    cz = np.full((n_hc, 3, 3), -1, dtype=np.int64)  # each pending cause: PSN, row, ignored (CZ_*)
    nak_u = np.full(n_hc, -1, dtype=np.int64)
    # Sequence NAKs past the pending one's PSN, kept back in order: PSN and row each, and
    # the PSN of one made pending until its run reaches it (`rc_causes._keep_nak`).
    nak_nxt = np.full((n_hc, KEPT_AT + 2 * (NAK_KEPT - 1)), -1, dtype=np.int64)
    rnr_u = np.full(n_hc, -1, dtype=np.int64)
    ep_active = np.zeros(n_hc, dtype=np.bool_)
    ep_last = np.zeros(n_hc, dtype=np.int64)
    ep_end = np.zeros(n_hc, dtype=np.int64)
    ep_cur = np.full(n_hc, -1, dtype=np.int32)
    ep_next = np.zeros(n_hc, dtype=np.int64)
    pos_acked = np.full(n_hc, -1, dtype=np.int64)  # past the latest positive acknowledgement
    retrying = np.zeros(n_hc, dtype=np.bool_)     # a counted retry awaits forward progress
    nak_new = np.zeros(n_hc, dtype=np.bool_)      # a first sequence NAK awaits its resend
    # recent holes: [lo, hi), the row that jumped past them (originals sent before it)
    gaps = np.full((n_hc, GAP_RING, 3), -1, dtype=np.int64)
    gap_at = np.zeros(n_hc, dtype=np.int64)
    # PSNs a resend run skipped: lo, hi, episode, first one no ACK had covered (lost), how
    # sure (`rc_shared.SKIP_*`), the row that found it (only the next copy is late, not lost)
    rgaps = np.full((n_hc, GAP_RING, 6), -1, dtype=np.int64)
    rgap_at = np.zeros(n_hc, dtype=np.int64)
    msg_no = np.zeros(n_hc, dtype=np.int32)
    # first, next, end, and the row of its latest response in order
    fifo = np.zeros((n_hc, READ_FIFO, 4), dtype=np.int64)
    f_head = np.zeros(n_hc, dtype=np.int64)
    f_len = np.zeros(n_hc, dtype=np.int64)
    min_rtt = np.full(n_hc, -1, dtype=np.int64)
    rtt_fb = np.zeros(n_hc, dtype=np.bool_)           # min_rtt is no Karn sample yet
    min_gap = np.full(n_hc, -1, dtype=np.int64)       # least time between two new requests
    run_gap = np.full(n_hc, -1, dtype=np.int64)       # ... between two packets of a run
    # ... per payload byte: the gap and payload of the tightest pair (`own_pace`)
    byte_gap = np.full((n_hc, 2), -1, dtype=np.int64)
    new_row = np.full(n_hc, -1, dtype=np.int64)       # latest request past the highest PSN
    last_resp = np.full(n_hc, -1, dtype=np.int64)     # previous response row, if no request since
    rr_row = np.full(n_hc, -1, dtype=np.int64)        # latest READ response row (any)
    seq_nak = np.full(n_hc, -1, dtype=np.int64)       # PSN the latest sequence NAK names, until
    # a request at that PSN (the expected one) or an RNR NAK refusing it passes
    # The requester's reactions: the least time from a NAK to a restart at its PSN
    # taken with no doubt, how many such restarts (`jump_decided`); the same for implied
    # NAKs (`rc_causes._note_reaction`).
    react = np.zeros((n_hc, 4), dtype=np.int64)
    late_row = np.full(n_hc, -1, dtype=np.int64)
    late_next = np.zeros(n_hc, dtype=np.int64)
    late_cause = np.zeros(n_hc, dtype=np.bool_)    # ... held back while a cause was pending
    # The requester has shown it acts on NAK p; and that READs and atomics before p
    # had their responses (an implied NAK's restart at p continued in order).
    known = np.zeros((n_hc, 2), dtype=np.int64)
    known_next = np.full((n_hc, 2), -1, dtype=np.int64)  # ... if the next request continues it
    rnr_row = np.full(n_hc, -1, dtype=np.int64)
    rnr_first = np.full(n_hc, -1, dtype=np.int64)  # first RNR NAK refusing that PSN
    rnr_req = np.full(n_hc, -1, dtype=np.int64)     # latest copy of the pending RNR PSN
    rnr_doubt = np.zeros(n_hc, dtype=np.bool_)     # its retry may have been lost before the tap
    rd_rs = np.full((n_hc, 2), -1, dtype=np.int64)  # latest READ/atomic resent: PSN, row
    rd_gap = np.full(n_hc, -1, dtype=np.int64)     # response hole marked, until resent
    ack_row = np.full(n_hc, -1, dtype=np.int64)    # last ACK, and its PSN
    copy_row = np.full(n_hc, -1, dtype=np.int64)   # a network duplicate, decided next
    copy_next = np.zeros(n_hc, dtype=np.int64)
    copy_cause = np.zeros(n_hc, dtype=np.bool_)
    lr_row = np.full(n_hc, -1, dtype=np.int64)     # a late resend that may start a run
    rnr_late = np.full((n_hc, 2), -1, dtype=np.int64)  # refused PSN a retry run skipped, row
    # A run packet past the run's next PSN, decided at the next request: row, the run's
    # last and next PSN before it, the rgaps slot it wrote, whether it filled a
    # first-transmission hole, and a copy of the run's last PSN that came right after
    # it (then decided at the request after that copy); then, once taken for a late
    # copy at the run's resume (`resume_decided`): its row, the resume's row, the run's
    # last and next PSN as it had left them, the PSNs it had counted lost, its flags.
    jmp = np.full((n_hc, 12), -1, dtype=np.int64)
    # New data amid a run short of the front, decided at the next request: row, the
    # resends taken as lost before the tap, the run's next PSN, episode, skip ring slot.
    amid = np.full((n_hc, 5), -1, dtype=np.int64)
    early_copy = np.full((n_hc, 4), -1, dtype=np.int64)   # `rc_run_shape.early_copy_noted`
    # The new request that ended the latest run: its row (-1 past a hole), the resends
    # it counted lost before the tap, the run's skip ring slot (`new_request`).
    ended = np.full((n_hc, 3), -1, dtype=np.int64)
    lr_next = np.zeros(n_hc, dtype=np.int64)
    lr_lost = np.zeros(n_hc, dtype=np.bool_)
    lr_cause = np.zeros(n_hc, dtype=np.bool_)  # ... taken while a cause was pending
    # A run taken from a copy too soon for any timer (no cause seen): its start and next
    # packet stay flagged unless a third continues it in order (late copies come singly
    # or in pairs, a run goes on).
    soon = np.zeros(n_hc, dtype=np.int64)
    soon_rows = np.full((n_hc, 2), -1, dtype=np.int64)
    ep_amb = np.zeros(n_hc, dtype=np.bool_)        # the run in progress started ambiguous
    ep_row = np.full(n_hc, -1, dtype=np.int64)     # ... at this row
    delays = np.zeros(n_hc, dtype=np.bool_)        # copies seen delayed past later ones
    last_req = np.full(n_hc, -1, dtype=np.int64)   # previous request row
    head = np.full(n_hc, -1, dtype=np.int64)       # first request row
    back2back = np.zeros(n_hc, dtype=np.bool_)     # ... the ambiguous start repeats it
    ack_u = np.zeros(n_hc, dtype=np.int64)
    # A timeout restart taken with doubt amid a run: its row, the run it cut short (episode,
    # last and next PSN, end, skip ring position, start row), the READ hold (`pin`) before.
    amb_run = np.full((n_hc, AMB_PIN + 4), -1, dtype=np.int64)
    # A READ or atomic a restart resent (the requester's oldest unacknowledged PSN
    # until its own response comes): its PSN (-1 once answered), the restart's row,
    # the answer's row (-1 before), and the PSN again (kept once answered).
    pin = np.full((n_hc, 4), -1, dtype=np.int64)
    n_ep = 0
    n_born = 0
    last_i = 0
    for i in range(len(hc)):
        h = hc[i]
        if h < 0 or not sel[h]:
            continue        # (another pass's half-connection: `rc_split`)
        # The row each episode started at (numbered as they start): the numbers of
        # passes over disjoint half-connections merge into one pass's (`rc_split`).
        while n_born < n_ep:
            if n_born < len(born):
                born[n_born] = last_i
            n_born += 1
        last_i = i
        c = cls[i]
        u = upsn[i]
        counts[h, K_PACKETS] += 1
        counts[h, K_BYTES] += paylen[i]
        if not init[h]:
            init[h] = True
            first = start_u[h] if start_u[h] >= 0 else u
            high[h] = first
            acked[h] = first
            epsn[h] = first
        if icrc[i] == CRC_BAD:
            _mark(flags, counts, i, h, F_BAD_ICRC, K_BAD_ICRC)
        if c & C_REQUEST:
            counts[h, K_REQUESTS] += 1
            last_resp[h] = -1
            if u == seq_nak[h]:
                seq_nak[h] = -1
            consume = _psns_taken(cls, dmalen, pmtu, h, i)
            d = u - high[h]
            if c & C_UC:
                uc_request(first_tx, flags, msg, gap, counts, high, msg_no, i, h, c, u, d, consume)
                continue
            if not c & C_RELIABLE:
                continue
            seen = first_tx[i] < i
            if trig_kind[h] & T_RNR and u == cz[h, CZ_RNR, 0]:
                rnr_req[h] = i      # a copy of the refused PSN since its RNR NAK
            if c & (C_READ_REQ | C_ATOMIC_REQ) and d < 0:
                if f_len[h] == 0 or u <= fifo[h, f_head[h], 1]:
                    # (A later READ resent next does not replace the resend of
                    # the oldest one's missing responses.)
                    rd_rs[h, 0] = u
                    rd_rs[h, 1] = i
                if u == rd_gap[h]:
                    rd_gap[h] = -1
                unseen_read(fifo, f_head, f_len, acked, h, u, consume, seen)
            # A copy of the request just before it: what a network duplicate looks like.
            prev_req = last_req[h]
            b2b = seen and prev_tx[i] == prev_req
            last_req[h] = i
            behind = own_pace(paylen, ts, flags, episode, min_gap, run_gap, byte_gap, new_row,
                              ep_active, ep_cur, ep_next, i, h, u, d, prev_req)
            early_copy_decided(upsn, paylen, first_tx, prev_tx, ts, flags, ref, episode, counts,
                               byte_gap, early_copy, rgaps, cz, trig_kind, ep_active, ep_last,
                               ep_cur, ep_next, i, h, u, d)
            if head[h] < 0:
                head[h] = i
            rnr_wait_over(upsn, syn, ts, trig_u, trig_kind, rnr_u, rnr_row, rnr_late, rnr_doubt,
                          late_row, ep_active, ep_last, ep_row, flags, i, h, u, seen, prev_req)
            restart_shown(known, known_next, ep_active, ep_next, h, u, d)
            nak_reached(upsn, ts, flags, trig, trig_u, trig_row, trig_kind, cz, nak_nxt, delays,
                        react, ep_row, episode, ep_active, ep_cur, i, h, u, prev_req)
            # Rows the previous request left pending, decided now.
            resume_decided(upsn, paylen, prev_tx, ts, flags, episode, gap, counts, ep_active,
                           ep_last, ep_cur, ep_next, min_rtt, min_gap, run_gap, jmp, cz,
                           trig_kind, i, h, u, d)
            n_ep = late_decided(hc, cls, icrc, upsn, syn, paylen, ts, flags, episode, trig, reason,
                                counts, high, trig_u, trig_row, trig_kind, cz, rnr_u, rnr_late,
                                ep_active, ep_last, ep_end, ep_cur, ep_next, retrying, nak_new,
                                gaps, rgaps, rgap_at, late_row, late_next, late_cause, soon,
                                soon_rows, ep_amb, ep_row, delays, pin, fifo, f_head, f_len, i, h,
                                u, d, seen, n_ep)
            jump_decided(hc, cls, upsn, paylen, first_tx, prev_tx, ts, flags, episode, gap,
                         counts, trig_u, trig_row, trig_kind, cz, nak_u, rnr_u, ep_active, ep_last,
                         ep_cur, ep_next, rgaps, rgap_at, jmp, delays, min_gap, run_gap, byte_gap,
                         react, copy_row, i, h, u, d, seen, prev_req)
            amid_decided(flags, gap, counts, ts, trig_u, ep_active, ep_cur, ep_next, rgaps, rgap_at,
                         amid, delays, i, h, u, d)
            n_ep = late_resend_decided(hc, cls, icrc, upsn, syn, paylen, prev_tx, ts, flags,
                                       episode, trig, reason, counts, high, acked, trig_u, trig_row,
                                       trig_kind, cz, rnr_u, rnr_late, ep_active, ep_last, ep_end,
                                       ep_cur, ep_next, retrying, nak_new, rgaps, rgap_at, lr_row,
                                       lr_next, lr_lost, lr_cause, ep_amb, ep_row, delays, pin,
                                       fifo, f_head, f_len, min_gap, run_gap, i, h, u, d, seen,
                                       n_ep)
            n_ep = copy_decided(hc, cls, icrc, upsn, syn, paylen, first_tx, prev_tx, ts, flags, ref,
                                episode, trig, reason, gap, counts, high, acked, trig_u, trig_row,
                                trig_kind, cz, rnr_u, rnr_late, ep_active, ep_last, ep_end, ep_cur,
                                ep_next, retrying, nak_new, rgaps, rgap_at, copy_row, copy_next,
                                copy_cause, soon, soon_rows, ep_amb, ep_row, delays, back2back, pin,
                                fifo, f_head, f_len, min_gap, rnr_first, ended, i, h, u, d, seen,
                                n_ep)
            amb_run_decided(hc, cls, icrc, upsn, syn, paylen, prev_tx, ts, flags, ref, episode,
                            trig, reason, counts, ep_active, ep_last, ep_end, ep_cur, ep_next,
                            rgaps, rgap_at, ep_amb, ep_row, amb_run, pin, i, h, u, d)
            restart_left(hc, cls, upsn, first_tx, ts, flags, episode, high, ep_active, ep_next,
                         ep_row, i, h, u, d, prev_req)
            if d >= 0:
                unseen_retry(syn, ts, flags, counts, trig_u, trig_kind, rnr_u, rnr_row, i, h, u)
                new_request(flags, msg, gap, counts, high, acked, ep_active, ep_end, ep_cur,
                            ep_next, gaps, gap_at, rgaps, rgap_at, msg_no, fifo, f_head, f_len,
                            ep_amb, soon, amid, ended, i, h, c, u, d, consume, behind)
            else:
                cause, rnr_early, in_gap, run, quick, unsure, below, stale, copy, held, early = \
                    classify(upsn, syn, first_tx, prev_tx, ts, acked, trig, trig_u, trig_row,
                             trig_kind, cz, rnr_u, ep_active, ep_last, ep_next, gaps, min_rtt,
                             known, rnr_row, rr_row, fifo, f_head, f_len, ack_row, ack_u, ep_row,
                             min_gap, rgaps, ep_cur, react, i, h, c, u, seen, prev_req, run_gap,
                             hc, cls, paylen, byte_gap, pmtu, flags)
                early_copy_noted(upsn, flags, episode, early_copy, ep_last, ep_cur, ep_next, i,
                                 h, u, run, behind, prev_req)
                late_rerun, late_amb, timer, lost_back = \
                    skipped_resend(syn, prev_tx, ts, flags, episode, trig, reason, counts, rnr_u,
                                   rgaps, rnr_row, i, h, u, seen, cause, run, quick, unsure, stale,
                                   copy, held, in_gap, prev_req, first_tx, early)
                if (late_rerun >= 0 and not timer and not held) or stale:
                    # (Held: decided at the next request, `late_resend_decided`.)
                    delays[h] = True
                if late_rerun >= 0:
                    late_resend(paylen, first_tx, prev_tx, flags, ref, episode, msg, counts,
                                lr_row, rnr_late, lr_next, lr_lost, lr_cause, i, h, u, consume,
                                timer, held, late_rerun, late_amb, lost_back, b2b)
                elif stale:
                    stale_original(hc, cls, paylen, first_tx, prev_tx, ts, flags, ref, counts, gaps,
                                   i, h, c, u, copy)
                elif copy or (held and seen):
                    network_copy(hc, cls, upsn, first_tx, prev_tx, flags, ref, episode, counts,
                                 acked, copy_row, copy_next, copy_cause, back2back, ep_active,
                                 ep_last, ep_cur, rgaps, i, h, c, u, consume, b2b, held, delays,
                                 prev_req, ts)
                elif held:
                    held_original(flags, counts, late_row, late_next, late_cause, i, h, u, consume)
                elif seen or cause or ep_active[h] or not in_gap or (
                        prev_req >= 0 and ts[i] - ts[prev_req] >= MIN_ACK_TIMEOUT_NS):
                    # (A hole fill after a pause as long as the shortest ACK timeout:
                    # the original, sent before the hole's end, would have been held
                    # that long by the network; the timer's resend, whatever follows.)
                    resent(upsn, syn, paylen, first_tx, prev_tx, ts, flags, ref, msg, counts,
                           trig_kind, cz, rnr_u, rnr_row, rnr_first, head, react, prev_req,
                           ep_row, delays, i, h, u, seen, cause, run, unsure)
                    if not run:
                        n_ep = episode_start(hc, cls, upsn, syn, icrc, ts, prev_tx, flags, trig,
                                             reason, counts, high, trig_u, trig_row, trig_kind, cz,
                                             rnr_u, ep_active, ep_last, ep_end, ep_cur, ep_next,
                                             retrying, nak_new, rgaps, rgap_at, known, known_next,
                                             rnr_late, fifo, f_head, f_len, ep_row, amb_run, pin,
                                             nak_nxt, acked, react, rd_gap, min_gap, run_gap,
                                             i, h, c, u, seen, cause, rnr_early, in_gap, run,
                                             below, n_ep)
                        _note_reaction(react, ts, flags, reason, trig, upsn, h, i, u)
                    elif u > ep_next[h]:
                        run_jump(first_tx, flags, episode, gap, reason, counts, acked, ep_last,
                                 ep_cur, ep_next, rgaps, rgap_at, jmp, ep_amb, ep_row, delays,
                                 pin, i, h, u, seen, in_gap, prev_req)
                    run_step(hc, cls, upsn, syn, first_tx, prev_tx, ts, flags, episode, counts,
                             nak_u, rnr_u, rnr_row, rnr_first, rnr_doubt, ep_last, ep_cur, ep_next,
                             soon, soon_rows, ep_amb, ep_row, delays, back2back, rgaps, cz, trig_u,
                             trig_row, trig_kind, acked, fifo, f_head, f_len, trig, reason, pin,
                             rr_row, min_gap, run_gap, dmalen, pmtu, i, h, c, u, consume, seen, b2b,
                             prev_req)
                else:
                    late_original(flags, counts, late_row, late_next, late_cause, i, h, u,
                                  consume)
                if in_gap and c & C_LAST:
                    # The first copy of a message's last packet to pass the tap.
                    _mark(flags, counts, i, h, F_MSG_END, K_MESSAGES)
                if in_gap and consume > 1:
                    _read_fills(gaps, gap_at, h, u, consume)
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
        response_row(hc, cls, icrc, upsn, syn, msn, ts, rtt, prev_tx, rtt_fb, flags, acked_n,
                     credits, counts, high, acked, epsn, trig_u, trig_row, trig_kind, cz, nak_u,
                     rnr_u, rnr_doubt, retrying, nak_new, fifo, f_head, f_len, rd_rs, rd_gap,
                     min_rtt, rnr_row, rnr_first, rnr_req, rr_row, ack_row, ack_u, ep_row,
                     pos_acked, last_resp, seq_nak, trig, reason, pin, nak_nxt, i, h, c, u)
    # At the capture's end: a resume after a late copy, no request since for an ACK
    # timeout (`resume_decided`); a run short of the front, in doubt (`restart_left`).
    for h in range(n_hc):
        if not sel[h]:
            continue
        i = len(hc) - 1
        u = high[h]
        d = 0   # (as if new data came: the run does not go on)
        prev_req = last_req[h]
        if jmp[h, 6] >= 0 and ts[i] - ts[jmp[h, 7]] >= MIN_ACK_TIMEOUT_NS:
            resume_decided(upsn, paylen, prev_tx, ts, flags, episode, gap, counts, ep_active,
                           ep_last, ep_cur, ep_next, min_rtt, min_gap, run_gap, jmp, cz,
                           trig_kind, i, h, u, d)
        if prev_req >= 0:
            restart_left(hc, cls, upsn, first_tx, ts, flags, episode, high, ep_active, ep_next,
                         ep_row, i, h, u, d, prev_req)

    while n_born < n_ep:
        if n_born < len(born):
            born[n_born] = last_i
        n_born += 1
    return n_ep

rc_pass_py = py_twin(_pass)     # the loop and its rules, all run by the interpreter
rc_pass = njit(cache=True, nogil=True)(inline_rules(_pass))     # the rules inlined: one flat loop

