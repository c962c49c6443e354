"""RC engine (issue #13): an RNR NAK the requester never had. A resend run under way
before the requester could have had the RNR NAK (begun sooner after it than the
requester's least reaction to a NAK) that goes on in order after it would have (the
request before no sooner than that), at the refused PSN or past it once it resent
the refused PSN after the RNR NAK, was sent by a requester that did not stop: the
RNR NAK was lost after the tap, and it owes no retry (the refused PSN was resent
early, so the tap sees none). A run that stops at the refused PSN, or one begun after
the requester's reaction, leaves the RNR NAK pending (`test_rc_rnr_after_nak.py`).
And a retry sooner than a later RNR NAK's timer shows that one never arrived: the
retry answers the first; a retry after a copy of the refused PSN that no response
answered at the tap, or amid a run begun below the refused PSN after the wait, is in
doubt. Examples random scenarios found, pinned with their frames."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns

from ibwire.analysis.rc import analyze


def _rnr_loss(tmp_path, seed, **kw):
    kw = {"capture_loss": 0.02, "loss_before_tap": 0.5, "bidirectional": True, **kw}
    path, truth = generate(tmp_path, "rc_loss", seed, loss=0.06, rnr=0.05, messages=30, **kw)
    res, diff = compare(path, truth)
    return truth, res, diff


def test_the_refused_psn_resent_after_the_requesters_reaction_spends_the_rnr_nak(tmp_path):
    """RNR NAK 136 refuses ..361 and is lost after the tap. The implied NAK's run begins
    122 ns after it (139), sooner than the requester's least reaction to a NAK (235
    ns), resends ..361 at 143 (304 ns) and goes on to ..362 (145) with ..361 already
    past that reaction: the requester never stopped. 67 ms later a timeout resends
    ..361 (219): no RNR retry (before: 219 taken for RNR NAK 136's retry)."""
    truth, res, diff = _rnr_loss(tmp_path, 5062, corrupt=0.0, encap="roce2", psn_start=None)
    lost = {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    assert "rnr" in flags_of(res, 136) and 136 in lost
    assert ts_ns(res, 139) - ts_ns(res, 136) == 122
    assert ts_ns(res, 143) - ts_ns(res, 136) == 304
    assert start_of(res, 143) == start_of(res, 145) == ("implied_nak", 131)
    assert start_of(res, 219) == ("timeout", None)
    assert "rnr_retry" not in flags_of(res, 219)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)


def test_a_run_going_on_past_the_refused_psn_it_resent_spends_the_rnr_nak(tmp_path):
    """RNR NAK 413 refuses ..064 and is lost after the tap. The implied NAK's run,
    begun 52 ns after it (415), resends ..064 74 ns after it (416: sooner than the
    requester reacts, maybe on its way) but goes on in order past it: ..076 (426) 254
    ns after it, then ..077 (427; its least reaction to a NAK is 237 ns): the
    requester never stopped. The timeout run at ..064 67 ms later (438) is no RNR retry (before:
    taken for RNR NAK 413's)."""
    truth, res, diff = _rnr_loss(tmp_path, 9889, corrupt=0.02, encap="ib",
                                 psn_start=16777214)
    assert "rnr" in flags_of(res, 413)
    assert ts_ns(res, 416) - ts_ns(res, 413) == 74
    assert ts_ns(res, 415) - ts_ns(res, 413) == 52
    assert ts_ns(res, 426) - ts_ns(res, 413) == 254
    assert start_of(res, 416) == start_of(res, 428) == ("implied_nak", 408)
    assert start_of(res, 438)[0] == "timeout"
    assert "rnr_retry" not in flags_of(res, 438)
    assert check_exact(truth, res, diff) == []


def test_a_retry_sooner_than_a_later_rnr_naks_timer_answers_the_first(tmp_path):
    """RNR NAK 251 refuses ..002 (timer 640 us); the run under way resends it 15 ns
    later (254, on its way before the NAK arrived) and the responder refuses that copy
    too (RNR NAK 304, lost after the tap). The retry (318) comes 640.2 us after 251 but
    639.5 us after 304: a requester that had 304 would still be waiting, so it waited
    on 251, and 318 is that one's retry (before: a restart for NAK 253, sequence
    error, with the RNR NAK taken as never heard)."""
    truth, res, diff = _rnr_loss(tmp_path, 3233, corrupt=0.0, encap="ib-grh",
                                 capture_loss=0.0, psn_start=16777148)
    assert "rnr" in flags_of(res, 251) and "rnr" in flags_of(res, 304)
    assert ts_ns(res, 318) - ts_ns(res, 251) == 640_225
    assert ts_ns(res, 318) - ts_ns(res, 304) == 639_504
    assert {"go_back_n", "rnr_retry"} <= flags_of(res, 318)
    assert start_of(res, 318) == ("rnr", 251)
    assert check_exact(truth, res, diff) == []


def test_a_refused_psns_copy_with_no_answer_leaves_the_retry_in_doubt(tmp_path):
    """RNR NAK 104 refuses ..623 while an implied NAK's run is under way; the run,
    begun before the requester could have the NAK, resends ..623 (108) and ..624
    (109), then stops. No response naming ..623 passes the tap after 108: its answer
    was an RNR NAK the capture missed, restarting the wait (the truth: the resend
    640 us later, 118, answers that one), or 108 was lost after the tap (118 then
    answers 104). One fault either way: 118 is an RNR retry flagged in doubt
    (before: RNR NAK 104's, sure)."""
    truth, res, diff = _rnr_loss(tmp_path, 7820, loss_before_tap=1.0, corrupt=0.0,
                                 encap="roce1", bidirectional=False, psn_start=None)
    missed = {e["after_frame"] for e in truth["events"] if e["kind"] == "capture_loss"}
    assert "rnr" in flags_of(res, 104) and 114 in missed     # (the RNR NAK for 108)
    assert ts_ns(res, 108) > ts_ns(res, 104)
    assert "go_back_n" in flags_of(res, 115)
    assert {"rnr_retry", "ambiguous"} <= flags_of(res, 118)
    assert check_exact(truth, res, diff) == []


def test_a_timer_run_from_below_the_refused_psn_is_no_sure_rnr_retry(tmp_path):
    """RNR NAK 145 refuses ..506 (timer 640 us). Nothing more of that stream passes
    the tap until a run 67 ms later from ..488 (146), a READ whose responses never
    came, through ..506 (160). An RNR retry begins at the refused PSN (IBA
    9.7.5.2.8): this run answers another cause (the local ACK timeout), and the RNR
    retry was lost before the tap (the truth); or the RNR NAK was lost after the tap,
    and at the tap 160, the first resend of ..506 after its timer, is its retry. One
    fault either way: 160 is flagged (before: RNR NAK 145's retry, sure)."""
    truth, res, diff = _rnr_loss(tmp_path, 9275, loss_before_tap=1.0, corrupt=0.0,
                                 encap="ib-grh", bidirectional=False, capture_loss=0.0,
                                 psn_start=None)
    assert "rnr" in flags_of(res, 145)
    assert ts_ns(res, 146) - ts_ns(res, 145) > 67_000_000
    assert start_of(res, 146) == start_of(res, 160) == ("timeout", None)
    assert {"rnr_retry", "ambiguous"} <= flags_of(res, 160)
    assert check_exact(truth, res, diff) == []
