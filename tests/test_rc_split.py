"""RC engine split over groups of connections (`rc_split`): the passes, on threads or
not, fill exactly what one pass fills, episode numbers included."""

from __future__ import annotations

import numpy as np
import pytest
from rc_helpers import generate

from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import rc_columns
from ibwire.engines.rc_split import SPLIT_MIN_ROWS, default_passes, groups

_ARRAYS = ("upsn", "flags", "ref", "episode", "trig", "acked", "credits", "msg", "gap",
           "reason", "rtt_ns", "counts")


def _assert_same(a, b):
    for name in _ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.episodes == b.episodes


@pytest.mark.parametrize("name,seed,kw", [
    ("rc_reorder", 3, {"connections": 3}),
    ("rc_loss", 5, {"connections": 3, "bidirectional": True, "capture_loss": 0.02}),
    ("rc_rnr", 2, {"connections": 2, "loss": 0.03}),
])
def test_passes_equal_one_pass(tmp_path, name, seed, kw):
    path, _ = generate(tmp_path, name, seed, **kw)
    cols = rc_columns(path)
    one = analyze(cols, passes=1)
    # Episodes in more than one group, numbered across them: what the merge must get right.
    ep_hc = {int(one.streams.hc[r]) for r in np.flatnonzero(one.episode >= 0)}
    assert len(ep_hc) >= 2
    for k in (2, 3, len(one.streams) + 1):
        _assert_same(one, analyze(cols, passes=k))
    # The twin runs the same passes one after the other.
    _assert_same(one, analyze(cols, use_numba=False, passes=2))


def test_groups_balance_rows():
    hc = np.repeat(np.arange(5), [50, 10, 40, 30, 20])
    g, rows = groups(np.concatenate((hc, [-1, -1])), 5, 2)
    load = [int(np.isin(hc, np.flatnonzero(g == j)).sum()) for j in range(2)]
    assert sorted(load) == [70, 80] and rows.tolist() == load
    # One group: everything in it.
    g, rows = groups(hc, 5, 1)
    assert g.tolist() == [0] * 5 and rows.tolist() == [150]


def test_default_passes(monkeypatch):
    import numba

    assert default_passes(SPLIT_MIN_ROWS - 1) == 1
    assert 1 <= default_passes(SPLIT_MIN_ROWS) <= 8
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    assert default_passes(10 * SPLIT_MIN_ROWS) == 1
