"""RC engine (issue #13): a run packet past the run's next PSN that only many losses
would explain is an original the network held.

A resend run sends every PSN in order. A packet past the run's next PSN is either the
run going on with the PSNs between lost before the tap, or a copy the network held
(a late original). A network delay keeps the spacing the requester gave its packets,
so held originals come at the run's own pace, and no pace bound tells them apart.
What does: to reach a hole-filling packet the run would have lost every resend of the
PSNs between, each of whose originals the tap saw. Two or more such losses in a row
are a costlier story than one packet held, unless the run then goes on past it with
a PSN the tap had seen (the run did skip). Once those are late copies, the run has
stopped short; a sequence NAK naming its next PSN then restarts it there."""

from __future__ import annotations

import numpy as np
from rc_helpers import (
    check_exact,
    episode_diff,
    extended_draw,
    flags_of,
    start_of,
    ts_ns,
    wide_draw,
)

from ibwire.analysis.rc import analyze

PSN_MASK = 0xFFFFFF


def _psn(res, frame: int) -> int:
    return int(res.cols["infiniband.bth.psn"][frame - 1]) & PSN_MASK


def _twin_agrees(res) -> None:
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)


def test_held_originals_past_a_restart_are_not_its_resends(tmp_path):
    """NAK 3532 names ..422 (lost after the tap). ..422 comes at 3535, then ..540 and
    ..543 (3536, 3537): holes the tap had shown at 3530 and 3533, 2.98 us before, all
    three held 3 us by the network. Read as the run, 3536 would need 117 PSNs' resends
    (23 packets, two READs among them) lost before the tap. Before: 3536 and 3537 were
    resends with PSN gaps, and 3539 (NAK 3538's restart) no new episode."""
    truth, res, diff = wide_draw(tmp_path, 481, 164)
    assert _psn(res, 3535) == _psn(res, 3532) == _psn(res, 3507) - 1
    assert _psn(res, 3536) == _psn(res, 3530) - 1 and _psn(res, 3537) == _psn(res, 3533) - 1
    assert "psn_gap" in flags_of(res, 3530) and "psn_gap" in flags_of(res, 3533)
    assert ts_ns(res, 3536) - ts_ns(res, 3535) == 572
    assert ts_ns(res, 3536) - ts_ns(res, 3530) == 2_975
    held = {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert {3535, 3536, 3537} <= held
    assert start_of(res, 3535) == ("nak_seq", 3532)
    for f in (3536, 3537):
        assert "out_of_sequence" in flags_of(res, f)
        assert not {"retransmission", "psn_gap"} & flags_of(res, f)
        assert res.episode[f - 1] == -1
    # The run stopped at ..422: NAK 3538 names ..423, and 3539 is its restart.
    assert _psn(res, 3539) == _psn(res, 3538) == _psn(res, 3535) + 1
    assert start_of(res, 3539) == ("nak_seq", 3538)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 3539)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_a_run_that_goes_on_past_the_hole_did_skip(tmp_path):
    """NAK 4248's run resends ..206 (4288), then ..209 (4289), a hole the tap had shown
    at 4256; ..207 and ..208, whose originals the tap saw, are lost before it. Then a
    copy of an older PSN (4290), and ..210 (4291), a PSN the tap had seen: the run went
    on from 4289, which stays its resend."""
    truth, res, diff = wide_draw(tmp_path, 481, 394)
    assert _psn(res, 4289) == _psn(res, 4288) + 3 == _psn(res, 4256) - 1
    assert _psn(res, 4253) == _psn(res, 4288) + 1 and _psn(res, 4255) == _psn(res, 4288) + 2
    assert _psn(res, 4290) < _psn(res, 4288) and _psn(res, 4291) == _psn(res, 4256)
    assert {"retransmission", "psn_gap"} <= flags_of(res, 4289)
    assert start_of(res, 4289) == start_of(res, 4288) == start_of(res, 4291) == ("nak_seq", 4248)
    assert res.gap[4289 - 1] == 2
    retx = {e["frame"] for e in truth["retransmissions"]}
    assert {4288, 4289, 4291} <= retx
    assert [x for x in check_exact(truth, res, diff) if "4289" in x] == []
    _twin_agrees(res)


def test_a_sequence_nak_at_the_next_psn_of_a_stopped_run_restarts_it(tmp_path):
    """A timer's run (3855, 3856: ..238, ..239, copies held by the network) stops; ACKs
    cover up to ..247; two originals held 3 us come (3860, 3861: late copies, not the
    run's); NAK 3862 names ..248, and ..248 comes 222 ns later (3863). Before: 3863
    went on with the timer's run (no new episode)."""
    truth, res, diff = wide_draw(tmp_path, 355, 71)
    assert start_of(res, 3855) == ("timeout", None)
    for f in (3860, 3861):
        assert "out_of_sequence" in flags_of(res, f) and res.episode[f - 1] == -1
    assert _psn(res, 3863) == _psn(res, 3862)
    assert ts_ns(res, 3863) - ts_ns(res, 3862) == 222
    assert start_of(res, 3863) == ("nak_seq", 3862)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 3863)
    assert start_of(res, 3864) == ("nak_seq", 3862)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_a_nak_before_a_slow_runs_next_packet_is_due_restarts_nothing_yet(tmp_path):
    """On a link sending a packet every 1.2-1.3 us, NAK 60's run resends ..567 (62); a
    copy of ..569 held by the network follows 1 ns later (63). NAK 64 names ..568 624 ns
    after 62, and ..568 comes 556 ns after the NAK (65): the run's next packet, not yet
    due when the NAK came. NAK 64's restart is the next copy of ..568 (66)."""
    truth, res, diff = wide_draw(tmp_path, 351, 20)
    assert _psn(res, 65) == _psn(res, 64) == _psn(res, 62) + 1 == _psn(res, 66)
    assert "out_of_sequence" in flags_of(res, 63) and _psn(res, 63) > _psn(res, 65)
    assert ts_ns(res, 64) - ts_ns(res, 62) == 624
    assert ts_ns(res, 62) - ts_ns(res, 61) == 1_333
    assert start_of(res, 65) == ("nak_seq", 60)
    assert start_of(res, 66) == ("nak_seq", 64)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 66)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)


def test_a_sequence_nak_restarts_a_stopped_run_past_its_first_resends_lost(tmp_path):
    """Extended 23:82. A timer's run of one packet (10958, ..309) stops; an original
    held 30 us comes (10960, a late copy); NAK 10961 names ..30a, the run's next PSN,
    and 72 ns later ..30b comes (10962), ..30a's resend lost before the tap: NAK 10961's
    restart, its first resend missing, as a restart at the NAK's PSN would be. Before:
    10962 went on with the timer's run, skipping ..30a (70 resends given the wrong
    cause)."""
    truth, res, _ = extended_draw(tmp_path, 23, 82)
    assert start_of(res, 10958) == ("timeout", None)
    assert "out_of_sequence" in flags_of(res, 10960) and res.episode[10960 - 1] == -1
    assert _psn(res, 10961) == _psn(res, 10958) + 1 == _psn(res, 10962) - 1
    assert ts_ns(res, 10962) - ts_ns(res, 10961) == 72
    assert {"retransmission", "go_back_n"} <= flags_of(res, 10962)
    assert "psn_gap" not in flags_of(res, 10962)
    assert start_of(res, 10962) == start_of(res, 10975) == ("nak_seq", 10961)
    assert [x for x in episode_diff(truth, res) if "10961" in x or "at 10958" in x] == []
    _twin_agrees(res)


def test_new_data_past_many_seen_originals_leaves_the_run_before_it_in_doubt(tmp_path):
    """Extended 2:174 (5 us links). ACKs cover ..f8d and on through ..f97 (136, 149-151);
    then ..f8d comes again (152, 20 us after its only copy, 130), and 240 ns later new
    data (153, ..f99). Read as a timer's restart, the run would have lost the resends
    of the 11 PSNs ..f8e-..f98 before the tap, originals the tap saw; 152 is the
    original, held 20 us (130 was the resend). Before: a timeout restart, no doubt."""
    truth, res, diff = extended_draw(tmp_path, 2, 174)
    assert _psn(res, 152) == _psn(res, 130) == _psn(res, 136)
    assert _psn(res, 153) == _psn(res, 151) + 2 == _psn(res, 152) + 12
    assert ts_ns(res, 153) - ts_ns(res, 152) == 240
    assert {"retransmission", "ambiguous"} <= flags_of(res, 152)
    assert "psn_gap" in flags_of(res, 153) and "retransmission" not in flags_of(res, 153)
    assert check_exact(truth, res, diff) == []
    _twin_agrees(res)
