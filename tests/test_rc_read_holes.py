"""RC engine (issue #13): where an implied NAK the tap cannot see can restart the
requester. A response lost after the tap shows the requester a hole only through a
later response, which the tap sees too; and every restart begins at the requester's
oldest PSN still missing a response (`docs/rc-analysis.md`, "Retransmissions").
Pinned on draws of the sweep tool (`tools/rc_sweep.py`) the engine got wrong before."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns, wide_draw

from ibwire.analysis.rc import analyze


def _network_copy_behind_run_resend(tmp_path, master: int, n: int, copy: int, gap: int,
                                    cause: int) -> None:
    """Wide draw n of `master`: frame `copy` repeats the frame before it, a resend of
    the implied NAK run from `cause`, `gap` ns later; it is the network's copy."""
    truth, res, diff = wide_draw(tmp_path, master, n)
    assert ts_ns(res, copy) - ts_ns(res, copy - 1) == gap
    assert start_of(res, copy - 1) == ("implied_nak", cause)
    assert "go_back_n" not in flags_of(res, copy)
    assert "network_duplicate" in flags_of(res, copy)
    assert copy in {e["frame"] for e in truth["events"] if e["kind"] == "duplicate"}
    assert check_exact(truth, res, diff) == []


def test_a_read_copy_too_soon_for_a_restart_below_it_is_no_restart(tmp_path):
    """The implied NAK at 5522 starts a run of READ re-requests (5525 ..073 to 5529
    ..162, 23 ns apart); the READ at ..054 has its response ..073 since (5526) but
    not ..074. 5530 repeats ..162 23 ns after 5529, no cause pending: the requester
    lacks ..074 too, so an unseen implied NAK would restart at or before it and
    resend the READs at ..054 (part-way), ..090 and ..126 first, then ..162: at least
    4 x 23 ns (the least time between two new requests). It is the network's copy of
    5529."""
    _network_copy_behind_run_resend(tmp_path, 335, 210, 5530, 23, 5522)


def test_a_copy_behind_a_reads_only_response_with_nothing_past_it_is_no_restart(tmp_path):
    """..536 is a READ with one response (137, since ..537's last copy 117); nothing
    past ..536 has been acknowledged when ..537 passes again (139, 1.8 us after 117).
    Had 137 been lost after the tap, the requester would see that hole only through
    a later response, which the tap would see too; no timer runs out that soon
    either. So 139 restarts nothing: it is the original of ..537, delayed (its first
    copy at the tap, 91, was the NAK run's resend)."""
    truth, res, diff = wide_draw(tmp_path, 345, 288)
    assert ts_ns(res, 139) - ts_ns(res, 117) == 1768
    assert "retransmission" not in flags_of(res, 139)
    assert "go_back_n" not in flags_of(res, 139)
    assert 139 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert check_exact(truth, res, diff) == []


def test_a_read_copy_past_a_hole_may_be_a_later_packet_of_its_restart(tmp_path):
    """The guard on the rule above: ..708's response (1248) is lost after the tap and
    ..709's (1249) shows the requester the hole. Its restart re-requests the READ
    part-way at ..708 (lost before the tap), then the next READ, ..717 (1255), 3.1 us
    after that READ's original (1163). The tap's oldest hole is at ..712, below
    ..717, but with that much time ..717 may be the restart's second packet: a
    resend, and 1249 its cause, as they were."""
    truth, res, diff = wide_draw(tmp_path, 351, 51)
    assert ts_ns(res, 1255) - ts_ns(res, 1163) == 3146
    assert "lost_after_capture" in flags_of(res, 1248)
    assert "retransmission" in flags_of(res, 1255)
    assert start_of(res, 1255) == ("implied_nak", 1249)
    assert check_exact(truth, res, diff) == []


def test_a_copy_one_least_gap_behind_with_a_read_to_resend_first_is_no_restart(tmp_path):
    """11023 re-requests the READ at ..197 (the implied NAK run from 11019), 27 ns
    after the run's first READ (..136, 11022; 27 ns is the stream's least gap). 11024
    repeats ..197 27 ns later, no cause pending. The READ at ..136 still lacks a
    response at the tap, so an unseen implied NAK's restart would re-request it
    first and only then ..197: two packets after 11023, at least 2 x 27 ns. One gap
    is too soon: the network's copy."""
    _network_copy_behind_run_resend(tmp_path, 333, 181, 11024, 27, 11019)


def test_a_copy_too_soon_for_a_restart_with_only_ignored_causes_pending_is_no_restart(
        tmp_path):
    """739 sends the SEND at ..172 while the READ at ..168 (first response 735) is
    still answered in order (740 is ..170). 741 repeats ..172 346 ns later, no request
    between. The causes pending below it (the NAKs and implied NAK of 608 and 611) are
    ones the requester ignored: a retry covering them was under way. A restart for
    any of them, or for a hole in ..168's responses lost after the tap, re-requests
    that READ first, then ..172: two packets after 739, at least 2 x 300 ns (the
    stream's least gap). It is the network's copy of 739."""
    truth, res, diff = wide_draw(tmp_path, 355, 101)
    assert ts_ns(res, 741) - ts_ns(res, 739) == 346
    assert "retransmission" not in flags_of(res, 741)
    assert "network_duplicate" in flags_of(res, 741)
    assert 741 in {e["frame"] for e in truth["events"] if e["kind"] == "duplicate"}
    assert check_exact(truth, res, diff) == []


def test_a_runs_resends_set_the_pace_when_faster_than_new_requests(tmp_path):
    """The guard on the rule above: new READs here go out at least 593 ns apart, but
    the runs' re-requests 6 ns apart (320-322). 341 repeats the READ at ..581 1,003 ns
    after 337, the READ at ..576 still missing responses at the tap: at the runs' pace
    a restart resends both in 12 ns. 339's response was lost after the tap, 340 showed
    the hole, and 341 is that restart's resend (its re-request of ..577 lost before
    the tap)."""
    truth, res, diff = wide_draw(tmp_path, 333, 137)
    assert ts_ns(res, 321) - ts_ns(res, 320) == 6
    assert ts_ns(res, 341) - ts_ns(res, 337) == 1003
    assert "lost_after_capture" in flags_of(res, 339)
    assert "retransmission" in flags_of(res, 341)
    assert check_exact(truth, res, diff) == []


def test_a_response_that_reached_the_requester_after_its_restart_resent_the_read(tmp_path):
    """READ ..430 (four PSNs) is answered at the tap (139-142), but 139, its first
    response, is lost after the tap. NAK 132 (..428) restarts the requester at 144,
    222 ns after it; the run re-requests the READ (146) 115 ns after 140, the next
    response, passed the tap: sooner than that reaction, so 140 may have reached the
    requester only after 146 went out. It showed the hole then: the READ again (151)
    and on in order from ..434 (152) is its implied NAK's restart, and NAK 143 (..434,
    seen before 151) is not what 152 answers (before: 151 the network's copy, 152
    NAK 143's restart)."""
    path, truth = generate(tmp_path, "rc_loss", 2916, messages=30, loss=0.02,
                           loss_before_tap=0.0, rnr=0.05, corrupt=0.02, encap="ib-grh",
                           bidirectional=True, capture_loss=0.0, psn_start=16777069)
    res, diff = compare(path, truth)
    psn = res.cols["infiniband.bth.psn"]
    assert psn[139 - 1] == psn[146 - 1] == psn[151 - 1] and psn[143 - 1] == psn[152 - 1]
    assert start_of(res, 144) == start_of(res, 146) == ("nak_seq", 132)
    assert ts_ns(res, 144) - ts_ns(res, 132) == 222
    assert ts_ns(res, 146) - ts_ns(res, 140) == 115
    assert "lost_after_capture" in flags_of(res, 139)
    assert "go_back_n" in flags_of(res, 151) and "network_duplicate" not in flags_of(res, 151)
    assert start_of(res, 151) == start_of(res, 152) == start_of(res, 165) == (
        "implied_nak", 140)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)


def test_a_restart_long_after_the_response_that_passed_a_run_is_not_its_implied_nak(tmp_path):
    """The guard on the rule above: the implied NAK run from 362 starts 206 ns after it
    (370) and re-requests the READ at ..278 (371) 161 ns after response 364 passed.
    480 re-requests ..278 2,981 ns after 364: far more than twice that reaction, so
    364 is not what it answers; 473, which showed the hole at ..251 just before, is
    (a first form of the rule, with no bound, took 364)."""
    truth, res, diff = wide_draw(tmp_path, 345, 327)
    assert ts_ns(res, 370) - ts_ns(res, 362) == 206
    assert ts_ns(res, 371) - ts_ns(res, 364) == 161
    assert ts_ns(res, 480) - ts_ns(res, 364) == 2981
    assert start_of(res, 370) == ("implied_nak", 362)
    assert start_of(res, 480) == start_of(res, 481) == ("implied_nak", 473)
    assert check_exact(truth, res, diff) == []
