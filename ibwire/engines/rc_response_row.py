"""RC engine rule, responder side: what the loop does with a response row.

- The same NAK again with no request in between is the network's copy (an RNR
  NAK answers a request, and its retry comes no sooner than its timer: one as
  late answers a retry the capture missed); so is a sequence-error NAK naming the
  PSN the latest one named with no request at that PSN (nor an RNR NAK refusing
  it) since: a responder NAKs a hole once until its expected PSN arrives.
- A sequence NAK naming a PSN a positive acknowledgement seen before covered is
  stale: the responder's expected PSN never goes back, so the network delayed it,
  and the requester, which had that acknowledgement first, drops it (no cause).
- A sequence NAK past the pending NAK's PSN is kept back behind it (`stash`); so is
  one past a pending implied NAK's hole, all READ responses before its PSN in and no
  request sent since that hole was shown: the requester restarts at the hole first,
  and the NAK's implicit ACK then ends that retry.
- Otherwise the response goes to the rules of `rc_responses`: dropped (bad ICRC),
  READ response or atomic ACK, ACK, NAK or RNR NAK.

A rule function: a block of `rc_kernel._pass`'s loop, called with the loop's names
(see `rc_build`).
"""

from __future__ import annotations  # noqa: I001 - the rule names below stay compact

import numpy as np

from ibwire.analysis.rc_rules import (
    C_ATOMIC_ACK, C_READ_RESP, F_COPY, K_COPIES, K_RESPONSES, NAK_PSN_SEQ, SYN_ACK, SYN_NAK,
    SYN_RNR,
)
from ibwire.engines.rc_shared import (
    CRC_BAD, CZ_IMPLIED, CZ_NAK, CZ_RNR, SCAN_ROWS, SYN_VALUE_MASK, SYN_VALUE_SHIFT, T_IMPLIED,
    T_NAK, T_RNR, _mark, _request_before, _rnr_wait_ns, _rnr_waited, _syn_kind,
)
from ibwire.engines.rc_causes import _last_kept
from ibwire.engines.rc_responses import (
    _fifo_hole, _pin_hole, _rnr_owed, ack, dropped, nak, read_response,
)


def response_row(hc, cls, icrc, upsn, syn, msn, ts, rtt, prev_tx, rtt_fb, flags, acked_n, credits,
                 counts, high, acked, epsn, trig_u, trig_row, trig_kind, cz, nak_u, rnr_u,
                 rnr_doubt, retrying, nak_new, fifo, f_head, f_len, rd_rs, rd_gap, min_rtt,
                 rnr_row, rnr_first, rnr_req, rr_row, ack_row, ack_u, ep_row, pos_acked,
                 last_resp, seq_nak, trig, reason, pin, nak_nxt, i, h, c, u):
    counts[h, K_RESPONSES] += 1
    s = np.int64(syn[i])
    kind = _syn_kind(s)
    q = last_resp[h]
    last_resp[h] = i
    seq_err = kind == SYN_NAK and (s >> SYN_VALUE_SHIFT) & SYN_VALUE_MASK == NAK_PSN_SEQ
    if ((kind == SYN_NAK or kind == SYN_RNR) and q >= 0 and upsn[q] == u and
            syn[q] == syn[i] and msn[q] == msn[i] and
            (kind == SYN_NAK or ts[i] - ts[q] < _rnr_wait_ns(s)) and
            not (kind == SYN_RNR and _rnr_owed(hc, cls, upsn, syn, flags, q, h, u))) or (
                seq_err and seq_nak[h] == u):
        _mark(flags, counts, i, h, F_COPY, K_COPIES)
    else:
        nak_stale = (seq_err or kind == SYN_RNR) and u < pos_acked[h]
        kept_psn = _last_kept(nak_nxt, h)
        stash = seq_err and not nak_stale and trig_kind[h] & T_NAK != 0 and \
            cz[h, CZ_NAK, 2] == 0 and 0 <= cz[h, CZ_NAK, 0] < u and \
            (seq_nak[h] == cz[h, CZ_NAK, 0] or nak_nxt[h, 3] == cz[h, CZ_NAK, 0] or
             (0 <= kept_psn < u and seq_nak[h] == kept_psn))
        # So one past a pending implied NAK's hole with no READ or atomic before it
        # missing a response now (those came after the response that showed the hole),
        # the requester having sent nothing since that response: it restarts at the
        # hole first, and this NAK's implicit ACK passes it, ending that retry (IBA
        # 9.7.5.1.3), so it goes back here as well. (No other cause pending but a NAK
        # the requester ignored.)
        only_imp = trig_kind[h] & ~T_NAK == T_IMPLIED and \
            (not trig_kind[h] & T_NAK or cz[h, CZ_NAK, 2] == 1)
        stash = stash or (seq_err and not nak_stale and only_imp and
                          cz[h, CZ_IMPLIED, 2] == 0 and 0 <= cz[h, CZ_IMPLIED, 0] < u and
                          _request_before(hc, cls, h, i) < cz[h, CZ_IMPLIED, 1] and
                          i - cz[h, CZ_IMPLIED, 1] < SCAN_ROWS and
                          not _fifo_hole(fifo, f_head, f_len, h, u) and
                          _pin_hole(flags, pin, h, u) < 0)
        if seq_err and u >= seq_nak[h]:
            # (Not one naming a PSN below the pending one: the responder's expected
            # PSN never goes back, so that is an older NAK the network delayed.)
            seq_nak[h] = u
        elif kind == SYN_RNR and not nak_stale:
            seq_nak[h] = -1
        if icrc[i] == CRC_BAD:
            dropped(flags, counts, epsn, i, h, c, u, s, kind)
        else:
            if c & C_READ_RESP:
                rr_row[h] = i
            if c & C_READ_RESP or c & C_ATOMIC_ACK:
                read_response(hc, cls, icrc, upsn, ts, rtt, prev_tx, rtt_fb, flags, counts,
                              acked, trig_u, trig_row, trig_kind, cz, retrying, fifo, f_head,
                              f_len, rd_rs, rd_gap, min_rtt, ep_row, trig, reason, pin, i, h, u)
            if (kind == SYN_ACK or c & C_READ_RESP) and u >= pos_acked[h]:
                # Forward progress (a positive acknowledgement of a PSN no ACK covered
                # before; a NAK's implied acknowledgement does not count): the retry is
                # over and the next hole starts a new one.
                retrying[h] = False
                pos_acked[h] = u + 1
            if kind == SYN_ACK:
                ack(hc, cls, upsn, ts, rtt, prev_tx, rtt_fb, flags, acked_n, credits, counts,
                    acked, epsn, trig_u, trig_row, trig_kind, cz, retrying, fifo, f_head, f_len,
                    rd_gap, min_rtt, ack_row, ack_u, ep_row, trig, reason, pin, seq_nak, nak_nxt,
                    i, h, c, u, s)
            elif kind == SYN_RNR or kind == SYN_NAK:
                if kind == SYN_RNR and trig_kind[h] & T_RNR and cz[h, CZ_RNR, 0] == u and (
                        rnr_req[h] > cz[h, CZ_RNR, 1] or _rnr_waited(cz, syn, ts, h, i)):
                    # The PSN refused again after a copy of it went out (seen, or unseen
                    # once the pending NAK's timer is over): the requester waits on this
                    # NAK now (rxe restarts its RNR timer), and its next retry answers it.
                    cz[h, CZ_RNR, 0] = -1
                nak(upsn, flags, counts, high, acked, epsn, trig_u, trig_row, trig_kind, cz,
                    nak_u, rnr_u, rnr_doubt, retrying, nak_new, fifo, f_head, f_len, rd_gap,
                    rnr_row, rnr_first, ep_row, trig, reason, pin, nak_nxt, i, h, u, s, kind,
                    stash, nak_stale)
