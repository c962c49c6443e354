"""RC engine (issue #13): a restart long after an RNR NAK's timer is no RNR retry.

A requester that had the RNR NAK waits its timer (IBA 9.7.5.2.8) and retries at the
refused PSN as it runs out; Linux rxe waits whole jiffies, so a retry comes up to two
jiffies late (`RNR_LATE_NS`, 20 ms at HZ=100). A restart past the refused PSN (its
first resends lost before the tap) later than that is a timer's: the RNR NAK was lost
after the tap, and the next resend of the refused PSN is its retry as far as the tap
can know. Examples the property test's space gave, pinned with their frames."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import analyze


def _rnr_loss(tmp_path, seed, **kw):
    kw = {"loss": 0.06, "loss_before_tap": 0.5, "rnr": 0.05, "encap": "ib",
          "bidirectional": True, **kw}
    path, truth = generate(tmp_path, "rc_loss", seed, messages=30, **kw)
    res, diff = compare(path, truth)
    return truth, res, diff


def _late_run(truth, res, diff, nak, run, retry):
    """RNR NAK `nak` (lost after the tap), a timer's run from one past the refused PSN
    at `run`, far past the NAK's timer, then the refused PSN again at `retry`."""
    psn = res.cols["infiniband.bth.psn"]
    lost = {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    assert "rnr" in flags_of(res, nak) and nak in lost
    assert psn[run - 1] == psn[nak - 1] + 1 and psn[retry - 1] == psn[nak - 1]
    timer = int(R.RNR_TIMER_NS[int(res.cols["infiniband.aeth.syndrome"][nak - 1]) & 0x1F])
    assert timer == 640_000
    assert ts_ns(res, run) - ts_ns(res, nak) > timer + R.RNR_LATE_NS
    assert start_of(res, run) == ("timeout", None)
    assert "rnr_retry" not in flags_of(res, run)
    assert "rnr_retry" in flags_of(res, retry)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)


def test_a_run_past_the_refused_psn_67_ms_after_the_rnr_nak_is_a_timers(tmp_path):
    """RNR NAK 174 refuses ..751 (640 us timer). 67.1 ms later a run begins at ..752
    (262; ..751 lost before the tap), and 67 ms after that ..751 itself (358), the
    retry the tap sees (before: 262 taken for the RNR retry, its first packet lost)."""
    truth, res, diff = _rnr_loss(tmp_path, 5440, corrupt=0.02, capture_loss=0.0,
                                 psn_start=None)
    assert ts_ns(res, 262) - ts_ns(res, 174) == 67_108_284
    _late_run(truth, res, diff, 174, 262, 358)


def test_the_same_with_capture_loss_and_psn_wrap(tmp_path):
    """RNR NAK 333 refuses ..480; the run at ..481 (334) comes 67.1 ms later, and
    ..480 again (346) 67.1 ms after that (before: 334 the RNR retry)."""
    truth, res, diff = _rnr_loss(tmp_path, 5121, corrupt=0.0, capture_loss=0.02,
                                 psn_start=16777114)
    assert ts_ns(res, 334) - ts_ns(res, 333) == 67_108_281
    _late_run(truth, res, diff, 333, 334, 346)
