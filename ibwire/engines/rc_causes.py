"""RC engine helpers: the pending retry causes (`trig_u`, `trig_kind`, `cz`; see
`rc_shared`) that a restart leaves pending or settles.

- `_rnr_still_due`: an RNR NAK whose retry is still to come after a restart that
  answered another cause (the requester had that cause first).
- `_settled_before`: a NAK's restart taken with doubt, shown one by its run going on
  in order (`rc_episodes.run_step`), settles the causes for earlier PSNs that it
  shows the requester had nothing left to resend for.
- `_before_reaction`: a request sent before the requester had a NAK, by the fastest
  reaction to one it has shown: no answer to that NAK.
- `_note_reaction`: the requester's fastest reactions, kept as restarts show them.
"""

from __future__ import annotations

from numba import njit

from ibwire.analysis.rc_rules import F_AMBIGUOUS, REASON_IMPLIED, REASON_NAK_SEQ
from ibwire.engines.rc_run_shape import _too_soon
from ibwire.engines.rc_shared import CZ_IMPLIED, CZ_NAK, CZ_RNR, T_RNR


@njit(inline="always")
def _rnr_still_due(cz, trig_u, trig_row, trig_kind, h):
    """The pending RNR NAK's retry is still to come after a restart that answered
    another cause: it stays a pending cause at the refused PSN (beside any other the
    restart left pending)."""
    trig_kind[h] |= T_RNR
    if trig_u[h] < 0 or cz[h, CZ_RNR, 0] < trig_u[h]:
        trig_u[h] = cz[h, CZ_RNR, 0]
    trig_row[h] = cz[h, CZ_RNR, 1]


@njit(inline="always")
def _settled_before(hc, cls, upsn, ts, trig, reason, cz, trig_u, trig_row, trig_kind, min_gap,
                    run_gap, h, s):
    """Row s, a restart at exactly the PSN p of the sequence NAK it answers (row t),
    taken with doubt and now shown one. A cause seen before t naming an earlier PSN q
    would have sent the requester back to q (go-back-N restarts at the oldest request
    not complete, IBA 9.7.4.1.5): when s came too soon after t for it to have resent
    q..p-1 first, it had nothing there left to resend, and that cause is settled. (Were
    those resends sent before the NAK came, every one was lost before the tap: the
    engine takes the reading with fewer losses. Not an RNR NAK: its retry waits out
    its timer, `rc_requests.rnr_wait_over`.)"""
    t = trig[s]
    p = upsn[s]
    if reason[s] != REASON_NAK_SEQ or t < 0 or upsn[t] != p:
        return
    cleared = False
    for j in (CZ_NAK, CZ_IMPLIED):
        q = cz[h, j, 0]
        if trig_kind[h] & (1 << j) and cz[h, j, 1] <= t and (q == p or (
                q < p and _too_soon(hc, cls, upsn, ts, min_gap, run_gap, h, q, p, t, s))):
            trig_kind[h] &= ~(1 << j)
            cleared = True
    if cleared:
        trig_u[h] = -1
        trig_row[h] = -1
        for j in (CZ_NAK, CZ_RNR, CZ_IMPLIED):
            if trig_kind[h] & (1 << j) and (trig_u[h] < 0 or cz[h, j, 0] < trig_u[h]):
                trig_u[h] = cz[h, j, 0]
                trig_row[h] = cz[h, j, 1]


@njit(inline="always")
def _before_reaction(react, ts, h, r, nak_row):
    """Row r passed the tap sooner after the NAK at `nak_row` than the requester has
    yet reacted to one (`react`: the least time from a sequence NAK to a restart at its
    PSN taken with no doubt): it was sent before the requester had that NAK."""
    return react[h, 1] > 0 and ts[r] - ts[nak_row] < react[h, 0]


@njit(inline="always")
def _note_reaction(react, ts, flags, reason, trig, upsn, h, i, u):
    """Row i, a restart taken with no doubt for the cause at row trig[i]: the time
    between is one of the requester's reactions. The least, and how many: columns 0-1
    for a sequence NAK naming u, 2-3 for a response or ACK showing an implied NAK's
    hole (the requester acts on either as it arrives)."""
    t = trig[i]
    if flags[i] & F_AMBIGUOUS or t < 0:
        return
    j = 0 if reason[i] == REASON_NAK_SEQ and upsn[t] == u else \
        2 if reason[i] == REASON_IMPLIED else -1
    if j >= 0:
        if react[h, j + 1] == 0 or ts[i] - ts[t] < react[h, j]:
            react[h, j] = ts[i] - ts[t]
        react[h, j + 1] += 1
