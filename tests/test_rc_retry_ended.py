"""RC engine (issue #13): three readings of a resend that the protocol settles, each an
example the property test's space gave, pinned, with a guard each: a sweep capture a
first form of the rule got wrong.

- A sequence NAK past the hole a pending implied NAK names, with every READ before
  its PSN answered by then: the requester restarts at the hole first, and the NAK's
  implicit ACK passes that hole, which ends the retry (IBA 9.7.5.1.3), so it goes back
  to the NAK's PSN once more. A second copy of that PSN right behind the run's own is
  that restart, not the network's copy.
- The per-byte pace: two new requests in a row that came sooner than the rate the
  stream measured allows show that measure was no port's pace (the requester idled
  between its pair); no bound drawn from it holds until another pair measures the
  port, and a run that skipped a PSN lost before the tap is no late copy for it.
- A copy no cause explains, a timeout after the run before, then the next request past
  its next PSN: a timeout restart with that PSN lost before the tap. The other reading,
  both copies held by the network for a timeout's length, is costlier, and this
  network has shown no copy delayed past a later one; without the pause they stay
  late copies."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns, wide_draw

from ibwire.analysis.rc import analyze


def _loss(tmp_path, seed, **kw):
    kw = {"corrupt": 0.0, "bidirectional": True, "capture_loss": 0.0, "psn_start": None, **kw}
    path, truth = generate(tmp_path, "rc_loss", seed, messages=30, **kw)
    res, diff = compare(path, truth)
    return truth, res, diff


def _twin_agrees(res):
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)


def psn(res, frame):
    return int(res.cols["infiniband.bth.psn"][frame - 1]) & 0xFFFFFF


def test_a_nak_past_an_implied_naks_answered_hole_restarts_again(tmp_path):
    """Response 317 shows the READ hole at ..357; its responses come (319-323), then
    NAK 330 names ..368. The restart at ..357 (331) runs in order to ..368 (339); 11 ns
    later ..368 again (340), and the run goes on: the NAK's restart (before: the
    network's copy, and ..369-..373 resends for the implied NAK)."""
    truth, res, diff = _loss(tmp_path, 4071, loss=0.06, loss_before_tap=0.5, rnr=0.0,
                             encap="ib-grh", psn_start=16776972)
    assert "implied_nak" in flags_of(res, 317)
    assert "nak" in flags_of(res, 330) and psn(res, 330) == psn(res, 339) == psn(res, 340)
    assert start_of(res, 331) == start_of(res, 339) == ("implied_nak", 317)
    assert ts_ns(res, 340) - ts_ns(res, 339) == 11
    assert "go_back_n" in flags_of(res, 340)
    assert "network_duplicate" not in flags_of(res, 340)
    assert start_of(res, 340) == start_of(res, 345) == ("nak_seq", 330)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_the_same_with_an_ignored_nak_pending(tmp_path):
    """NAK 132 for ..417, which the retry from ..408 (131) covers, is ignored. Response
    150 shows READ ..416's hole, 154 its response, then NAK 155 names ..420. The
    restart at ..416 (157) runs in order to ..420 (161), and ..420 again 25 ns later
    (162) is NAK 155's restart (before: the network's copy)."""
    truth, res, diff = _loss(tmp_path, 8029, loss=0.06, loss_before_tap=0.5, rnr=0.0,
                             corrupt=0.02, encap="ib-grh", bidirectional=False,
                             psn_start=16777047)
    assert "nak" in flags_of(res, 132) and start_of(res, 131) == start_of(res, 133)
    assert "implied_nak" in flags_of(res, 150) and "nak" in flags_of(res, 155)
    assert psn(res, 154) == psn(res, 157) and psn(res, 155) == psn(res, 161) == psn(res, 162)
    assert start_of(res, 157) == start_of(res, 161) == ("implied_nak", 151)
    assert "go_back_n" in flags_of(res, 162) and "network_duplicate" not in flags_of(res, 162)
    assert start_of(res, 162) == start_of(res, 167) == ("nak_seq", 155)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_an_implied_nak_left_pending_while_new_data_went_keeps_no_nak_back(tmp_path):
    """Wide draw 83 of master 343: the implied NAK shown at 5395 is still pending 18 us
    later, the requester having sent new data meanwhile (5519), when NAK 5686 names
    ..513. The restart at ..513 (5689) is that NAK's: the requester did not restart
    for the hole at once, and may never (a first form of the rule kept the NAK back
    behind the implied NAK and gave its run to that)."""
    truth, res, diff = wide_draw(tmp_path, 343, 83)
    assert "implied_nak" in flags_of(res, 5395) and "nak" in flags_of(res, 5686)
    assert ts_ns(res, 5686) - ts_ns(res, 5395) > 17_000
    assert psn(res, 5519) > psn(res, 5686) == psn(res, 5689)
    assert start_of(res, 5689) == start_of(res, 5691) == ("nak_seq", 5686)
    assert check_exact(truth, res, diff) == []


def test_a_pair_faster_than_the_byte_pace_refutes_it(tmp_path):
    """The RNR retry run (174-177) resends ..790-..793, then ..795 17 ns later (178):
    ..794, 13 bytes (its original 152 took 6 ns), was lost before the tap. The stream's
    only pair of equal 256-byte new requests was 835 ns apart, which would make those
    13 bytes alone take 21 ns; new requests in a row went faster (152 to 153: 11 ns for
    13 bytes). Before, 178 was taken for a late copy."""
    truth, res, diff = _loss(tmp_path, 7225, loss=0.02, loss_before_tap=0.5, rnr=0.05,
                             encap="ib-grh")
    assert int(res.cols["ibwire.payload_len"][152 - 1]) == 13
    assert ts_ns(res, 153) - ts_ns(res, 152) == 11
    assert ts_ns(res, 178) - ts_ns(res, 177) == 17
    assert psn(res, 178) == psn(res, 177) + 2
    assert {"retransmission", "psn_gap"} <= flags_of(res, 178)
    assert "out_of_sequence" not in flags_of(res, 178)
    assert start_of(res, 174) == start_of(res, 178) == ("rnr", 156)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_a_refuted_byte_pace_is_measured_again(tmp_path):
    """Wide draw 13 of master 351 (three connections on one port): one stream's first
    equal 4,096-byte pairs were 949 ns apart (the others' packets between), refuted by
    new requests 334 ns apart (68, 3,616 bytes, and 71); measured again at 329 ns (71,
    72). 97, 111 ns after the run's 4,096-byte resend 96, came too soon to be the
    run's: the network's copy, and 98 the resend (a first form dropped the byte pace
    for good and took 97 for it)."""
    truth, res, diff = wide_draw(tmp_path, 351, 13)
    pl = res.cols["ibwire.payload_len"]
    assert (int(pl[68 - 1]), int(pl[71 - 1]), int(pl[72 - 1])) == (3616, 4096, 4096)
    assert psn(res, 68) + 1 == psn(res, 71) and psn(res, 71) + 1 == psn(res, 72)
    assert ts_ns(res, 71) - ts_ns(res, 68) == 334 and ts_ns(res, 72) - ts_ns(res, 71) == 329
    assert ts_ns(res, 97) - ts_ns(res, 96) == 111 and psn(res, 97) == psn(res, 98)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 97)
    assert "retransmission" in flags_of(res, 98)
    assert start_of(res, 96) == start_of(res, 98) == ("nak_seq", 92)
    assert check_exact(truth, res, diff) == []


def test_late_resends_with_no_pause_before_stay_late(tmp_path):
    """Wide draw 368 of master 353: the implied NAK's run (from 318) skips ..158
    (328); a copy of it comes 1.27 us after the run's latest resend (341), and one of
    ..164 2 us later (348): the run's resends, delayed, not a timer's restart (no
    pause as long as the shortest ACK timeout went before; a first form of the
    rule took 341 for one)."""
    truth, res, diff = wide_draw(tmp_path, 353, 368)
    assert "psn_gap" in flags_of(res, 328)
    assert ts_ns(res, 341) - ts_ns(res, 336) == 1270
    assert "go_back_n" not in flags_of(res, 341)
    assert start_of(res, 341) == start_of(res, 348) == ("implied_nak", 314)
    assert check_exact(truth, res, diff) == []


def test_a_timer_copy_followed_past_its_next_psn_starts_the_run(tmp_path):
    """RNR NAK 83 refuses ..365; its retry run (84-97) shows without ..365 and ..367.
    67 ms later ..365 (98), then ..367 44 ns after it (99), and on in order: a timeout
    restart, ..366 lost before the tap (before: 98 the RNR retry run's skipped resend
    held by the network, and 99 a timeout restart missing two)."""
    truth, res, diff = _loss(tmp_path, 9492, loss=0.06, loss_before_tap=1.0, rnr=0.05,
                             encap="ib", bidirectional=False, capture_loss=0.02)
    assert start_of(res, 84) == ("rnr", 83)
    assert ts_ns(res, 98) - ts_ns(res, 97) > 67_000_000
    assert psn(res, 98) == psn(res, 83) and psn(res, 99) == psn(res, 98) + 2
    assert ts_ns(res, 99) - ts_ns(res, 98) == 44
    assert "go_back_n" in flags_of(res, 98) and "rnr_retry" not in flags_of(res, 98)
    assert start_of(res, 98) == start_of(res, 99) == ("timeout", None)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)
