"""Passes before the RC kernel: flow numbering, PSN unwrapping, copies of a PSN.

Each is Numba (`njit(cache=True)`) with its plain-Python twin (`*_py`), the same
source run by the interpreter; tests compare the two.

* `flow_keys`, `flow_ids`, `streams_of`: rows -> flow keys -> dense flow numbers by
  an open-addressing hash of the key (first-seen order), so pairing never sorts the
  capture -> each row's half-connection once flows are paired.
* `unwrap`: 24-bit PSNs -> 64-bit per half-connection (serial arithmetic against
  the highest PSN seen, so any number of wraps works); also each stream's first
  request row and its largest non-last payload (for the PMTU).
* `occurrences`: for each request, the first and the previous row with its
  (half-connection, PSN), and for each response the latest request row with its PSN
  (`prev`) and the round-trip time to it when that PSN was sent exactly once
  (Karn's rule). A per-stream ring
  of 2**ring_bits PSNs remembers the copies: a resend more than that many PSNs
  behind the front is not linked to its original.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibwire.analysis.rc_rules import C_LAST, C_READ_RESP, C_REQUEST, C_RESPONSE, PSN_HALF, PSN_MOD

TABLE_BITS = 20                 # flow hash table: up to 2**19 flows, else np.unique
MAX_FLOWS = 1 << (TABLE_BITS - 1)
BASE = 1 << 40                  # unwrapped PSNs start here (stay positive)
EMPTY = -1


def _flow_ids(keys, valid, table_bits, ids, uniq):
    """ids[i] = dense number of keys[i] (valid rows), uniq[k] = k-th distinct key.
    Returns the number of distinct keys, or -1 when the table is too small."""
    size = 1 << table_bits
    mask = size - 1
    table_key = np.full(size, EMPTY, dtype=np.int64)
    table_id = np.zeros(size, dtype=np.int64)
    n = 0
    for i in range(len(keys)):
        if not valid[i]:
            ids[i] = -1
            continue
        k = keys[i]
        slot = ((int(k) * 0x5851F42D4C957F2D) >> 17) & mask
        while True:
            if table_key[slot] == k:
                ids[i] = table_id[slot]
                break
            if table_key[slot] == EMPTY:
                if 2 * (n + 1) > size:
                    return -1
                table_key[slot] = k
                table_id[slot] = n
                uniq[n] = k
                ids[i] = n
                n += 1
                break
            slot = (slot + 1) & mask
    return n


def _unwrap(hc, cls, psn, paylen, n_hc, upsn, first_req, max_pay):
    init = np.zeros(n_hc, dtype=np.bool_)
    ref_raw = np.zeros(n_hc, dtype=np.int64)
    ref_u = np.zeros(n_hc, dtype=np.int64)
    for i in range(len(hc)):
        h = hc[i]
        if h < 0:
            upsn[i] = -1
            continue
        p = np.int64(psn[i])
        if not init[h]:
            init[h] = True
            ref_raw[h] = p
            ref_u[h] = BASE + p
        d = ((p - ref_raw[h] + PSN_HALF) & (PSN_MOD - 1)) - PSN_HALF
        u = ref_u[h] + d
        upsn[i] = u
        if d > 0:
            ref_raw[h] = p
            ref_u[h] = u
        c = cls[i]
        if c & C_REQUEST and first_req[h] < 0:
            first_req[h] = i
        if c & (C_REQUEST | C_READ_RESP) and not c & C_LAST and paylen[i] > max_pay[h]:
            max_pay[h] = paylen[i]


def _occurrences(hc, cls, upsn, ts, n_hc, ring_bits, first_tx, prev_tx, rtt):
    size = 1 << ring_bits
    mask = size - 1
    ring_u = np.full((n_hc, size), EMPTY, dtype=np.int64)
    ring_first = np.zeros((n_hc, size), dtype=np.int64)
    ring_last = np.zeros((n_hc, size), dtype=np.int64)
    ring_count = np.zeros((n_hc, size), dtype=np.int64)
    for i in range(len(hc)):
        h = hc[i]
        first_tx[i] = i
        prev_tx[i] = i
        rtt[i] = -1
        if h < 0:
            continue
        u = upsn[i]
        slot = u & mask
        if cls[i] & C_REQUEST:
            if ring_u[h, slot] == u:
                first_tx[i] = ring_first[h, slot]
                prev_tx[i] = ring_last[h, slot]
                ring_last[h, slot] = i
                ring_count[h, slot] += 1
            else:
                ring_u[h, slot] = u
                ring_first[h, slot] = i
                ring_last[h, slot] = i
                ring_count[h, slot] = 1
        elif cls[i] & C_RESPONSE and ring_u[h, slot] == u:
            prev_tx[i] = ring_last[h, slot]
            if ring_count[h, slot] == 1:
                rtt[i] = ts[i] - ts[ring_first[h, slot]]


def _flow_keys(src, dst, qp, shift_src, shift_dst, qp_mask, keys):
    """keys[i]: the row's flow key (source, destination, DestQP), in one pass."""
    for i in range(len(keys)):
        keys[i] = (np.int64(src[i]) << shift_src) | (np.int64(dst[i]) << shift_dst) | \
            (np.int64(qp[i]) & qp_mask)


def _streams_of(req_ids, resp_ids, req_hc, resp_hc, hc):
    """hc[i]: the half-connection of a request row's flow (`req_ids`, by flow number)
    or a response row's (`resp_ids`); -1 for other rows."""
    for i in range(len(hc)):
        if req_ids[i] >= 0:
            hc[i] = req_hc[req_ids[i]]
        elif resp_ids[i] >= 0:
            hc[i] = resp_hc[resp_ids[i]]
        else:
            hc[i] = -1


flow_ids_py, unwrap_py, occurrences_py = _flow_ids, _unwrap, _occurrences
flow_keys_py, streams_of_py = _flow_keys, _streams_of
flow_keys = njit(cache=True)(_flow_keys)
streams_of = njit(cache=True)(_streams_of)
flow_ids = njit(cache=True)(_flow_ids)
unwrap = njit(cache=True)(_unwrap)
occurrences = njit(cache=True)(_occurrences)


def flow_numbers(keys: np.ndarray, valid: np.ndarray, use_numba: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct keys of the `valid` rows, sorted; each one's rank by its hash
    number; and each row's hash number (-1 off `valid`): one hashing pass over the
    rows, no gather (flows are few)."""
    ids = np.empty(len(keys), dtype=np.int64)
    uniq = np.empty(min(len(keys), MAX_FLOWS), dtype=np.int64)
    run = flow_ids if use_numba else flow_ids_py
    n = run(keys, valid, TABLE_BITS, ids, uniq)
    if n < 0:
        uniq, inv = np.unique(keys[valid], return_inverse=True)
        ids = np.full(len(keys), -1, dtype=np.int64)
        ids[valid] = inv.ravel()
        return uniq, np.arange(len(uniq), dtype=np.int64), ids
    uniq = uniq[:n]
    order = np.argsort(uniq)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return uniq[order], rank, ids
