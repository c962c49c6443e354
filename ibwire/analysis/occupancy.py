"""Receiver buffer occupancy at each flow-control update (docs/credits.md §1).

Receiver R advertises FCCL = (ABR + free) mod 4096 for the traffic of sender S on
a VL. ABR is what R has received of S's blocks: S's last FCTBS to reach R plus the
data packets that reached R after it (those with a bad CRC excepted: R drops them).
With the capture point's delays, every arrival time at R is known, so at the
moment R sent its update, free = (FCCL - ABR) mod 4096 and occupied = buffer - free,
the buffer being the inferred one (only when below 2048 blocks: above, the free
space is capped and the occupancy cannot be told). R computed FCCL when it queued
the packet; when it was queued behind a data packet, packets that arrived in
between make the estimate low. Loss after the capture point is not visible: the
estimate is then high until S's next FCTBS reaches R.
"""

from __future__ import annotations

import numpy as np

from ibwire.analysis.credit_input import TIME_COLUMN
from ibwire.analysis.credits import CreditReport, Geometry
from ibwire.crc import CrcStatus
from ibwire.engines.credits_kernel import EV_INIT, EV_LIMIT, EV_SEND, EV_SYNC, HALF, MOD
from ibwire.headers.link import LINK


def occupancy(cols: dict[str, np.ndarray], rep: CreditReport, geo: Geometry
              ) -> dict[tuple[int, int], np.ndarray]:
    """(sender, VL) -> rows [update frame (1-based), R's send time ns, occupied blocks,
    uncertain (1: packets missing from the capture around it)]."""
    ts = cols[TIME_COLUMN].astype(np.int64)
    bad = (cols["infiniband.invariant.crc.status"] == CrcStatus.BAD) | \
        (cols["infiniband.variant.crc.status"] == CrcStatus.BAD)
    ev = rep.events
    ser = int(geo.ser_ns(np.array([LINK.size]))[0])
    out = {}
    for (s, v), summary in rep.per_vl.items():
        buf = summary["buffer_blocks_inferred"]
        if buf is None or buf >= HALF:
            continue
        g = ev["grp"] == s * 16 + v
        fr, et, val = ev["frame"][g], ev["etype"][g], ev["val"][g]
        arrive = (et == EV_SEND) & ~bad[fr] | (et == EV_SYNC) | (et == EV_INIT)
        a_fr, a_et, a_val = fr[arrive], et[arrive], val[arrive]
        a_miss = ev["missing"][g][arrive]
        a_t = ts[a_fr] + geo.tap_to_rx_ns
        order = np.argsort(a_t, kind="stable")
        a_t, a_et, a_val, a_miss = a_t[order], a_et[order], a_val[order], a_miss[order]
        n = a_t.shape[0]
        abr = np.empty(n, np.int64)
        short = np.zeros(n, bool)        # the FCTBS that ends this stretch finds blocks missing
        cur, nxt = -1, False
        for i in range(n - 1, -1, -1):
            short[i] = nxt
            if a_et[i] != EV_SEND:
                nxt = a_miss[i] > 0
        for i in range(n):                         # ABR after each arrival at R
            if a_et[i] == EV_SEND:
                cur = -1 if cur < 0 else (cur + int(a_val[i])) % MOD
            else:
                cur = int(a_val[i])
            abr[i] = cur
        upd = et == EV_LIMIT
        u_fr, fccl, unc = fr[upd], val[upd], ev["uncertain"][g][upd]
        sent = ts[u_fr] - geo.tx_to_tap_ns - ser
        k = np.searchsorted(a_t, sent, side="right") - 1
        known = k >= 0
        got = np.where(known, abr[np.maximum(k, 0)], -1)
        known &= got >= 0
        occ = buf - (fccl - got) % MOD
        unc = (unc > 0) | (short[np.maximum(k, 0)] & (k >= 0))
        out[(s, v)] = np.stack([u_fr[known] + 1, sent[known], occ[known],
                                unc[known].astype(np.int64)], axis=1)
    return out
