"""Replay of link-level credit flow control (IBA Vol. 1 §7.9; rules in docs/credits.md).

Input is one array of *events*, grouped by (sender direction, VL) and ordered in
time inside each group (the caller sorts; `ibwire.analysis.credits` builds them):

* ``EV_LIMIT``  a flow-control packet from the peer reached the sender: CL = FCCL;
* ``EV_SEND``   the sender put a data packet of ``val`` blocks on the wire;
* ``EV_SYNC``   the sender's own flow-control packet: FCTBS = ``val`` must equal the
  running count of blocks sent; a difference is blocks the capture does not hold;
* ``EV_INIT``   the same from a Flow Control Init packet (Op 1): sets the count, no
  comparison (link initialisation restarts the counters).

Every counter is 12 bits (mod 4096). ``replay`` is the Numba kernel and
``replay.py_func`` its plain-Python twin (tests hold them equal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

EV_LIMIT, EV_SEND, EV_SYNC, EV_INIT = 0, 1, 2, 3
MOD = 4096
HALF = 2048
UNKNOWN = -32768          # credits not yet known (no FCCL or no FCTBS seen)
NO_SYNC = -1              # a SYNC without an earlier one: nothing to compare


@njit(cache=True)
def replay(grp, etype, t, val, need_next, avail, missing, uncertain, stalls):
    """Run the credit state machine over the events; fill the per-event outputs.

    need_next[i]: blocks of the next EV_SEND after event i in its group, or -1.
    avail[i]:     credits available to the sender after event i (signed), or UNKNOWN.
    missing[i]:   at EV_SYNC, (FCTBS - running count) mod 4096, NO_SYNC for the
                  first one of a group; 0 elsewhere.
    uncertain[i]: 1 when event i lies between two SYNCs that disagree (its value
                  may be off by blocks the capture lacks).
    stalls:       rows (start_t, end_t, blocks_needed, avail_at_start, first_event,
                  last_event); returns the number of rows written.
    """
    n = grp.shape[0]
    ns = 0
    cur = -1
    cl = -1
    tbs = -1
    last_sync = -1
    stall_at = -1
    stall_t = 0
    stall_need = 0
    stall_av = 0
    for i in range(n):
        if grp[i] != cur:
            cur = grp[i]
            cl = -1
            tbs = -1
            last_sync = -1
            stall_at = -1
        e = etype[i]
        v = val[i]
        missing[i] = 0
        uncertain[i] = 0
        if e == EV_LIMIT:
            cl = v % MOD
        elif e == EV_SEND:
            if tbs >= 0:
                tbs = (tbs + v) % MOD
        else:
            if e == EV_SYNC and tbs >= 0 and last_sync >= 0:
                gap = (v - tbs) % MOD
                missing[i] = gap
                if gap != 0:
                    for j in range(last_sync + 1, i + 1):
                        uncertain[j] = 1
            else:
                missing[i] = NO_SYNC
            tbs = v % MOD
            last_sync = i
        if cl < 0 or tbs < 0:
            avail[i] = UNKNOWN
            continue
        d = (cl - tbs) % MOD
        avail[i] = d if d <= HALF else d - MOD
        nn = need_next[i]
        starved = nn >= 0 and (cl - (tbs + nn)) % MOD > HALF
        if starved and stall_at < 0:
            stall_at = i
            stall_t = t[i]
            stall_need = nn
            stall_av = avail[i]
        elif not starved and stall_at >= 0:
            if t[i] > stall_t:
                stalls[ns, 0] = stall_t
                stalls[ns, 1] = t[i]
                stalls[ns, 2] = stall_need
                stalls[ns, 3] = stall_av
                stalls[ns, 4] = stall_at
                stalls[ns, 5] = i
                ns += 1
            stall_at = -1
    return ns


@njit(cache=True)
def next_need(grp, etype, val, out):
    """out[i] = blocks of the first EV_SEND after event i in the same group, else -1."""
    nxt = -1
    cur = -1
    for i in range(grp.shape[0] - 1, -1, -1):
        if grp[i] != cur:
            cur = grp[i]
            nxt = -1
        out[i] = nxt
        if etype[i] == EV_SEND:
            nxt = val[i]


def run(grp: np.ndarray, etype: np.ndarray, t: np.ndarray, val: np.ndarray,
        python: bool = False) -> dict[str, np.ndarray]:
    """Replay sorted events; returns per-event arrays and the stall rows."""
    n = grp.shape[0]
    need = np.empty(n, np.int32)
    avail = np.empty(n, np.int32)
    missing = np.empty(n, np.int32)
    uncertain = np.empty(n, np.int8)
    stalls = np.empty((n, 6), np.int64)
    nn_fn = next_need.py_func if python else next_need
    rp_fn = replay.py_func if python else replay
    nn_fn(grp, etype, val, need)
    k = rp_fn(grp, etype, t, val, need, avail, missing, uncertain, stalls)
    return {"need_next": need, "avail": avail, "missing": missing,
            "uncertain": uncertain, "stalls": stalls[:k].copy()}
