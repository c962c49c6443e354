"""RC engine (issue #13): a second RNR NAK for the same PSN that never reached the
requester does not hold back the first one's retry.

On an RNR NAK the requester waits the NAK's timer, then retries the refused PSN
(IBA 9.7.5.2.8); another RNR NAK for it arriving in the wait would start the wait again.
When the refused PSN comes again after the first NAK's timer but sooner than the
later NAK's, the later one never reached it (lost after the tap): this is the first
NAK's retry, a restart, not a network copy held back by a wait still running."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, flags_of, start_of, ts_ns, wide_draw

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import analyze


def test_retry_after_the_first_rnr_naks_timer_not_the_seconds(tmp_path):
    """RNR NAK 3593 refuses ..531 (timer 10 us); RNR NAK 3613, the same PSN, is lost
    after the tap. ..531 comes again at 3708: 10.3 us after the first NAK, 8.5 us after
    the second. Before: taken for a timer's restart (the second NAK's wait running)."""
    truth, res, diff = wide_draw(tmp_path, 473, 201)
    psn = res.cols["infiniband.bth.psn"]
    syn = res.cols["infiniband.aeth.syndrome"]
    assert psn[3593 - 1] == psn[3613 - 1] == psn[3708 - 1]
    assert "rnr" in flags_of(res, 3593) and "rnr" in flags_of(res, 3613)
    lost = {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    assert 3613 in lost and 3593 not in lost
    timer = int(R.RNR_TIMER_NS[int(syn[3593 - 1]) & 0x1F])
    assert timer == int(R.RNR_TIMER_NS[int(syn[3613 - 1]) & 0x1F]) == 10_000
    assert ts_ns(res, 3708) - ts_ns(res, 3593) == 10_321 > timer
    assert ts_ns(res, 3708) - ts_ns(res, 3613) == 8_451 < timer
    assert start_of(res, 3708) == ("rnr", 3593)
    assert {"retransmission", "go_back_n", "rnr_retry"} <= flags_of(res, 3708)
    assert start_of(res, 3711) == ("rnr", 3593)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)
