"""RC engine: what the kernel's rule modules share.

The AETH syndrome's parts, the pending retry causes (bits of `trig_kind`), the ICRC
status of a damaged packet, marking a row with a flag and counting it, the least
wait an RNR NAK asks for, and which earlier resend run skipped a PSN. (How the rule
modules make up the kernel: `rc_build`.)
"""

from __future__ import annotations

from numba import njit

from ibwire.analysis.rc_rules import GAP_RING, RNR_TIMER_NS
from ibwire.headers.extended import AETH

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



@njit(cache=True, inline="always")
def _skipping_run(rgaps, h, u, slot, ep):
    """The episode of the latest resend run recorded (`rgaps`) as having skipped PSN
    u, leaving out ring slot `slot` and episode `ep` (-1: none left out); -1 if none."""
    got = -1
    for g in range(GAP_RING):
        if g != slot and rgaps[h, g, 0] <= u < rgaps[h, g, 1] and rgaps[h, g, 2] != ep:
            got = rgaps[h, g, 2]
    return got
