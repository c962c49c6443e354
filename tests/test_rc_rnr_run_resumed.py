"""RC engine (issue #13): where an RNR NAK's retry is, when a run passes the refused
PSN. A retry run begun at or below the refused PSN once the RNR timer ran out resends
it in order: when the run goes on past it to a new PSN, that retry was lost before the
tap, and no later copy is the RNR retry. And a restart for another cause, sent before
the requester had an RNR NAK refusing a PSN at or past the restart's, leaves that RNR
NAK's retry to come: the requester waits out the timer, then goes on, and its packet
at the refused PSN is the retry. Examples the property test's space gave, pinned."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns

from ibwire.analysis.rc import analyze


def _loss(tmp_path, seed, **kw):
    kw = {"corrupt": 0.02, "capture_loss": 0.0, **kw}
    path, truth = generate(tmp_path, "rc_loss", seed, messages=30, rnr=0.05, bidirectional=True,
                           **kw)
    res, diff = compare(path, truth)
    return truth, res, diff


def test_a_retry_run_past_the_refused_psn_answers_the_rnr_nak(tmp_path):
    """RNR NAK 128 refuses ..326 (and shows a hole at ..324). Its retry run begins at
    ..324 640.2 us later (152), ..325 (154), then the new ..327 (157): the run resent
    ..326 in order, lost before the tap. The timeout run 67 ms later at ..326 (281) is
    no RNR retry (before: taken for RNR NAK 128's, still owed)."""
    truth, res, diff = _loss(tmp_path, 7621, loss=0.02, loss_before_tap=0.5, encap="roce1",
                             psn_start=16776962)
    assert "rnr" in flags_of(res, 128)
    assert ts_ns(res, 152) - ts_ns(res, 128) == 640_242
    assert start_of(res, 152) == start_of(res, 154) == ("rnr", 128)
    assert "psn_gap" in flags_of(res, 157)
    assert start_of(res, 281) == ("timeout", None)
    assert "rnr_retry" not in flags_of(res, 281)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)


def test_a_restart_sent_before_the_rnr_nak_arrived_leaves_its_retry_due(tmp_path):
    """RNR NAK 345 refuses ..515; the implied NAK's restart at ..507 leaves 100 ns
    later (346, 348), before the requester had it. The requester then waits out the
    timer and goes on from ..509 (351, 640.3 us after 345) to ..515 (357): the RNR
    retry (before: a restart for NAK 347, which was lost after the tap)."""
    truth, res, diff = _loss(tmp_path, 5000, loss=0.06, loss_before_tap=0.0, encap="roce2",
                             psn_start=16777139)
    assert "rnr" in flags_of(res, 345)
    assert ts_ns(res, 346) - ts_ns(res, 345) == 100
    assert start_of(res, 346) == ("implied_nak", 341)
    assert ts_ns(res, 351) - ts_ns(res, 345) == 640_300
    assert {"go_back_n", "rnr_retry"} <= flags_of(res, 357)
    assert start_of(res, 357) == ("rnr", 345)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)
    np.testing.assert_array_equal(twin.flags, res.flags)

