"""A resend episode with no trigger row (`trig` -1: a cause the tap never saw) must
not be read as if its trigger were the capture's last row: Numba, like NumPy, reads
index -1 as the last element (issue #13). `_late_restart` moves a NAK's restart to a
later copy only when the NAK named the restart's PSN."""

from __future__ import annotations

import numpy as np

from ibwire.analysis.rc_rules import (
    C_REQUEST,
    COUNT_NAMES,
    F_EPISODE,
    F_LATE,
    F_RETX,
    GAP_RING,
    REASON_NAK_SEQ,
)
from ibwire.engines.rc_pending_copies import _late_restart


def _moved(trigger_row: int) -> tuple[bool, int]:
    """Rows: 0 a NAK naming PSN 100, 1 the restart at 100 (the run's start), 2 new data
    that ended the run, 3 a copy of 100 continued in order, 4 the capture's last row,
    at PSN 100 as well. Whether the episode moved to row 3, and row 1's flags."""
    n = 5
    i64 = np.int64
    upsn = np.array([100, 100, 101, 100, 100], i64)
    cls = np.full(n, C_REQUEST, i64)
    ts = np.array([0, 1000, 1100, 1200, 1300], i64)
    flags = np.array([0, F_RETX | F_EPISODE, 0, 0, 0], i64)
    first_tx = np.array([0, 1, 2, 1, 4], i64)
    trig = np.array([-1, trigger_row, -1, -1, -1], i64)
    reason = np.array([0, REASON_NAK_SEQ, 0, 0, 0], i64)
    episode = np.array([-1, 0, -1, -1, -1], i64)
    cz = np.full((1, 3, 3), -1, i64)
    cz[0, 0, 1] = 0
    ended = np.full((1, 3), -1, i64)
    ended[0, 0] = 2
    ended[0, 1] = 0
    ep_row = np.array([1], i64)
    moved = _late_restart(cls, upsn, np.zeros(n, i64), first_tx, np.array([0, 0, 2, 1, 4], i64),
                          ts, flags, np.full(n, -1, i64), episode, trig, reason,
                          np.zeros(n, i64), np.zeros((1, len(COUNT_NAMES)), i64),
                          np.array([101], i64), np.zeros(1, np.bool_), np.array([100], i64),
                          np.array([101], i64), np.zeros(1, i64), np.array([101], i64), ep_row,
                          np.zeros(1, np.bool_), cz, np.full((1, GAP_RING, 6), -1, i64),
                          np.zeros(1, i64), ended, 3, 0, 101)
    return bool(moved), int(flags[1])


def test_a_restart_at_the_naks_psn_moves_to_its_repeat():
    moved, f = _moved(0)
    assert moved
    assert f & F_LATE and not f & F_EPISODE


def test_no_trigger_row_is_not_the_last_row():
    moved, f = _moved(-1)
    assert not moved
    assert f == F_RETX | F_EPISODE
