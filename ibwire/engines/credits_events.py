"""Frames to credit events in one pass (the input of `credits_kernel.replay`).

Per frame: a data packet (LRH, VL 0..14) is a SEND of its direction; a flow-control
packet (Op 0/1, LPCRC not bad) is a SYNC/INIT of its direction and a LIMIT of the
other. Events are bucketed by group (sender * 16 + VL), each group's two streams
(own events, LIMITs; each in frame order) merged by time with LIMIT first on equal
times. A stream whose times are not ordered (odd captures) is sorted stably first.
``build`` is the Numba kernel, ``build.py_func`` its plain-Python twin.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibwire.constants import PKTLEN_UNIT, VCRC_LEN
from ibwire.crc import CrcStatus
from ibwire.engines.credits_kernel import EV_INIT, EV_LIMIT, EV_SEND, EV_SYNC

GROUPS = 32
MGMT_VL = 15                          # VL15 (subnet management) is not flow controlled
BLOCK_BYTES = 64
LINK_OP_NORMAL, LINK_OP_INIT = 0, 1   # IBA §7.9.4 link packet operands (LINK_OPS)
LPCRC_BAD = int(CrcStatus.BAD)


@njit(cache=True)
def packet_blocks(pktlen):
    """64-byte blocks of a data packet: LRH through VCRC is PktLen * 4 + 2 bytes."""
    return (pktlen * PKTLEN_UNIT + VCRC_LEN + BLOCK_BYTES - 1) // BLOCK_BYTES


@njit(cache=True)
def _ser(nbytes, gbps):
    if gbps <= 0.0:
        return 0
    s = int(nbytes * 8 / gbps)
    return s if s > 1 else 1


@njit(cache=True)
def _stable_order(t, lo, hi):
    """Indices lo..hi-1 ordered by t, stable; O(n) when already ordered (the rule)."""
    for a in range(lo + 1, hi):
        if t[a] < t[a - 1]:
            return np.argsort(t[lo:hi], kind="mergesort") + lo
    return np.arange(lo, hi)


@njit(cache=True)
def build(ts, cap, iface, pktlen, lvl, op, fvl, fctbs, fccl, lpcrc, link_bytes, tx_tap,
          tap_rx, gbps, frame, sender, vl, etype, t, val):
    """Fill the event arrays (sized 2 * frames); returns the number of events.
    Direction: the ERF capture interface `cap`, else the pcapng interface `iface`."""
    n = ts.shape[0]
    d = np.empty(n, np.int64)
    for i in range(n):
        d[i] = (cap[i] if cap[i] >= 0 else max(iface[i], 0)) & 1
    own_n = np.zeros(GROUPS, np.int64)
    lim_n = np.zeros(GROUPS, np.int64)
    kind = np.zeros(n, np.int8)          # 0 none, 1 data, 2 flow control
    for i in range(n):
        if pktlen[i] >= 0 and lvl[i] >= 0 and lvl[i] != MGMT_VL:
            kind[i] = 1
            own_n[d[i] * 16 + lvl[i]] += 1
        elif (op[i] == LINK_OP_NORMAL or op[i] == LINK_OP_INIT) and lpcrc[i] != LPCRC_BAD \
                and fvl[i] >= 0:
            kind[i] = 2
            own_n[d[i] * 16 + fvl[i]] += 1
            lim_n[(1 - d[i]) * 16 + fvl[i]] += 1
    own_at = np.zeros(GROUPS + 1, np.int64)
    lim_at = np.zeros(GROUPS + 1, np.int64)
    for g in range(GROUPS):
        own_at[g + 1] = own_at[g] + own_n[g]
        lim_at[g + 1] = lim_at[g] + lim_n[g]
    m_own = own_at[GROUPS]
    m_lim = lim_at[GROUPS]
    o_fr = np.empty(m_own, np.int64)
    o_t = np.empty(m_own, np.int64)
    o_ty = np.empty(m_own, np.int8)
    o_v = np.empty(m_own, np.int64)
    l_fr = np.empty(m_lim, np.int64)
    l_t = np.empty(m_lim, np.int64)
    l_v = np.empty(m_lim, np.int64)
    own_fill = own_at[:GROUPS].copy()
    lim_fill = lim_at[:GROUPS].copy()
    for i in range(n):
        k = kind[i]
        if k == 0:
            continue
        s = d[i]
        if k == 1:
            g = s * 16 + lvl[i]
            nb = pktlen[i] * PKTLEN_UNIT + VCRC_LEN
            j = own_fill[g]
            o_fr[j] = i
            o_t[j] = ts[i] - tx_tap - _ser(nb, gbps)
            o_ty[j] = EV_SEND
            o_v[j] = packet_blocks(pktlen[i])
            own_fill[g] += 1
        else:
            g = s * 16 + fvl[i]
            j = own_fill[g]
            o_fr[j] = i
            o_t[j] = ts[i] - tx_tap - _ser(link_bytes, gbps)
            o_ty[j] = EV_INIT if op[i] == LINK_OP_INIT else EV_SYNC
            o_v[j] = fctbs[i]
            own_fill[g] += 1
            g2 = (1 - s) * 16 + fvl[i]
            j = lim_fill[g2]
            l_fr[j] = i
            l_t[j] = ts[i] + tap_rx
            l_v[j] = fccl[i]
            lim_fill[g2] += 1
    out = 0
    for g in range(GROUPS):
        oi = _stable_order(o_t, own_at[g], own_at[g + 1])
        li = _stable_order(l_t, lim_at[g], lim_at[g + 1])
        a = 0
        b = 0
        while a < oi.shape[0] or b < li.shape[0]:
            take_lim = b < li.shape[0] and (a >= oi.shape[0] or l_t[li[b]] <= o_t[oi[a]])
            if take_lim:
                j = li[b]
                frame[out] = l_fr[j]
                t[out] = l_t[j]
                etype[out] = EV_LIMIT
                val[out] = l_v[j]
                b += 1
            else:
                j = oi[a]
                frame[out] = o_fr[j]
                t[out] = o_t[j]
                etype[out] = o_ty[j]
                val[out] = o_v[j]
                a += 1
            sender[out] = g // 16
            vl[out] = g % 16
            out += 1
    return out
