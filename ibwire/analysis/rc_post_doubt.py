"""RC engine, post-kernel rule: a copy that may be a restart's start carries its
doubt to the PSN after it.

A copy the kernel took for the network's but flagged (it may as well be a restart's
first packet: `rc_late_copies.network_copy`) was decided at the next request: a
resend run goes on in order, so a next request at any other PSN left it a copy.
But a restart's second packet may be delayed past the requests after it. Then the
first later copy of the PSN right after the doubted one, at the tap sooner than the
shortest ACK timeout after it and before any restart at or below that PSN, is that
run's resend, late; or, if the doubted copy was the network's, another copy (or an
original held). Whichever the doubted copy was, this one goes with it: flagged.
Found in one pass (`_continued`, Numba, with its plain-Python twin `_continued_py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ibwire.analysis import rc_rules as R

if TYPE_CHECKING:
    from ibwire.analysis.rc import RcResult


def continued_doubts(res: RcResult, first: np.ndarray, ts: np.ndarray, cls: np.ndarray, *,
                     use_numba: bool = True) -> None:
    """Flag the late copy that continues a copy in doubt (see the module)."""
    hc = res.streams.hc
    reqs = np.flatnonzero(((cls & R.C_REQUEST) != 0) & (hc >= 0))
    rows = np.empty(int(np.count_nonzero(res.flags & R.F_COPY)), dtype=np.int64)
    find = _continued if use_numba else _continued_py
    m = find(hc, reqs, first, res.upsn, ts, res.flags, len(res.streams), rows)
    res.flags[rows[:m]] |= R.F_AMBIGUOUS


def _continued_py(hc, reqs, first, upsn, ts, flags, n_hc, rows):
    """Rows of late copies continuing a copy in doubt, in one pass over the request
    rows (`reqs`, in capture order): each stream keeps its latest copy in doubt until
    the PSN after it comes again, a restart at or below that PSN passes, or the
    shortest ACK timeout runs out."""
    doubt = np.full(n_hc, -1, dtype=np.int64)
    m = 0
    for i in reqs:
        h = hc[i]
        d = doubt[h]
        if d >= 0:
            nxt = upsn[d] + 1
            if ts[i] - ts[d] >= R.MIN_ACK_TIMEOUT_NS or \
                    (flags[i] & R.F_EPISODE and upsn[i] <= nxt):
                doubt[h] = -1
            elif upsn[i] == nxt:
                doubt[h] = -1
                if first[i] != i and flags[i] & (R.F_COPY | R.F_LATE) and \
                        not flags[i] & R.F_RETX and m < len(rows):
                    rows[m] = i
                    m += 1
        if flags[i] & R.F_COPY and flags[i] & R.F_AMBIGUOUS:
            doubt[h] = i
    return m


_continued = njit(cache=True)(_continued_py)
