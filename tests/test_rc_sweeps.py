"""Cases the 1,000-draw sweeps of the generator's scenario space found (issue #13),
pinned: each frame set equals the tap's-eye truth, and the frame the sweep caught
is what the protocol makes it."""

from __future__ import annotations

from rc_helpers import check_exact, compare, generate

from ibwire.analysis import rc_rules as R

WIDE = dict(sizes=(4096, 9000, 20000), loss=0.05, loss_before_tap=0.3, rnr=0.0,
            ack_every=2, credits="unlimited", tx_depth=2, rnr_timer=6, cm=False, messages=20)


def _flags_of(res, frame):
    return R.flag_names(int(res.flags[frame - 1]))


def test_rnr_retry_lost_before_the_tap_then_a_timeout(tmp_path):
    """The requester waited out the RNR NAK (frame 337, 0.64 ms) and resent PSN 16,
    lost before the tap; its timeout resent it again 67 ms later (338), its first
    request once the wait was over. At the tap that is the RNR retry, as for an RNR
    NAK lost after the tap: the two look the same."""
    path, truth = generate(tmp_path, "rc_loss", 3755, loss=0.06, loss_before_tap=1.0,
                           rnr=0.05, corrupt=0.02, encap="roce2", messages=30,
                           bidirectional=True, capture_loss=0.0, psn_start=16777169)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[337]["retry_frame"] is None and rnr[337]["retry_wait_ns"] is not None
    assert rnr[337]["tap_retry_frame"] == 338
    res, diff = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 338)
    assert check_exact(truth, res, diff) == []


def test_damaged_rnr_nak_lost_after_the_tap_has_no_retry(tmp_path):
    """An RNR NAK the tap saw with a bad ICRC, then lost: the requester would have
    dropped it anyway, so the timeout's resend of its PSN 67 ms later is no RNR retry,
    in the truth's tap view as in the engine."""
    path, truth = generate(
        tmp_path, "rc_clean", 37976, ops={"write_imm": 1, "send_imm": 1, "send": 1},
        sizes=(1, 2, 8), loss=0.05, loss_before_tap=0.0, rnr=0.04, corrupt=0.02, encap="ib",
        connections=3, ack_every=1, credits="count", pmtu=256, tx_depth=16, rnr_timer=12,
        cm=True, messages=20)
    kinds = {e["kind"] for e in truth["events"] if e["frame"] == 127}
    assert {"corrupt", "loss"} <= kinds
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[127]["retry_frame"] is None and rnr[127]["tap_retry_frame"] is None
    res, diff = compare(path, truth)
    assert {"rnr", "bad_icrc"} <= set(_flags_of(res, 127))
    assert "rnr_retry" not in _flags_of(res, 154)
    assert R.REASON_NAMES[res.reason[153]] == "timeout"
    assert check_exact(truth, res, diff) == []


def test_late_resend_of_a_run_older_than_the_last_resend_is_no_run_start(tmp_path):
    """A copy of the PSN an RNR retry run skipped, 67 ms later (the requester's
    timeout), then a later PSN at once (those between lost before the tap): a timeout
    restart. Not the RNR retry, late: the PSN it moves on to was skipped only by a run
    older than the latest one that resent it."""
    path, truth = generate(tmp_path, "rc_loss", 3741, loss=0.02, loss_before_tap=1.0,
                           rnr=0.05, corrupt=0.02, encap="roce2", messages=30,
                           bidirectional=True, capture_loss=0.02, psn_start=16777213)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []
    assert "rnr_retry" not in _flags_of(res, 309)
    assert {"retransmission", "go_back_n"} <= set(_flags_of(res, 309))
    assert R.REASON_NAMES[res.reason[308]] == "timeout"
    assert res.episode[309] == res.episode[308]     # 310 goes on with its run


def test_nak_after_a_jump_makes_the_resume_its_restart(tmp_path):
    """Run 326-334 resends ..024-..032, then 335 ..034 (..033 lost before the tap);
    NAK 338 names ..032 (334 lost after the tap) and the requester acts on it: 339
    (..033) is that restart's, its ..032 lost before the tap too, not the run
    resuming at its next PSN (which would make 335 a late copy)."""
    path, truth = generate(tmp_path, "rc_loss", 4471, loss=0.06, loss_before_tap=0.5,
                           rnr=0.05, corrupt=0.0, encap="roce1", messages=30,
                           bidirectional=True, capture_loss=0.02, psn_start=None)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []
    assert "retransmission" in _flags_of(res, 335)
    assert "go_back_n" in _flags_of(res, 339)
    assert R.REASON_NAMES[res.reason[338]] == "nak_seq" and res.trig[338] == 337


def test_read_copy_after_the_previous_reads_responses_is_no_sure_duplicate(tmp_path):
    """A READ sent again 0.2-0.7 us after its first copy, sooner than a round trip:
    but responses of the READ just before it came in between. One lost after the tap
    (50; 4430; 591, answered since but re-read) made the next an implied NAK, and
    this is the restart's (its first packets lost before the tap). Not a sure
    network copy: a resend, flagged."""
    for seed, frame, kw in (
            (68714, 609, dict(ops={"read": 1}, corrupt=0.02, encap="ib", connections=2,
                              ack_every=1, pmtu=1024, rnr_timer=1)),
            (59573, 52, dict(ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
                             corrupt=0.0, encap="ib", connections=2, pmtu=4096)),
            (40299, 4441, dict(ops={"read": 1}, corrupt=0.02, encap="ib-grh",
                               connections=3, pmtu=256))):
        path, truth = generate(tmp_path, "rc_clean", seed, **dict(WIDE, **kw))
        res, diff = compare(path, truth)
        assert check_exact(truth, res, diff) == [], seed
        assert {"retransmission", "ambiguous"} <= set(_flags_of(res, frame)), seed
        assert frame in {e["frame"] for e in truth["retransmissions"]}, seed


def test_rnr_retry_lost_then_a_new_psn_sent_before_the_wait(tmp_path):
    """RNR NAK 104 (timer 0.08 ms); 107, a new PSN, left before the requester
    processed it; its retry after the wait was lost before the tap, and 119, 67 ms
    later, resends the refused PSN: the first request once the wait was over, so at
    the tap the RNR retry."""
    path, truth = generate(
        tmp_path, "rc_clean", 81930, **dict(
            WIDE, ops={"write_imm": 1, "send_imm": 1, "send": 1}, sizes=(1, 2, 8),
            loss_before_tap=1.0, rnr=0.04, corrupt=0.02, encap="ib-grh", connections=3,
            ack_every=1, pmtu=4096))
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[104]["retry_frame"] is None and rnr[104]["tap_retry_frame"] == 119
    res, diff = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 119)
    assert check_exact(truth, res, diff) == []


def test_first_copy_after_a_quick_copy_makes_it_a_run_start(tmp_path):
    """354 resends ..649 0.85 us after 341 (lost after the tap), for a NAK the capture
    missed; 355 is ..650, whose original was lost before the tap, so its first copy
    there. A network copy followed by the next PSN in order is a run's start, also
    when that next packet is a first copy at the tap (flagged: it may be the
    original, delayed)."""
    path, truth = generate(tmp_path, "rc_loss", 4471, loss=0.06, loss_before_tap=0.0,
                           rnr=0.0, corrupt=0.02, encap="ib", messages=30,
                           bidirectional=True, capture_loss=0.02, psn_start=None)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []
    assert {"retransmission", "go_back_n", "ambiguous"} <= set(_flags_of(res, 354))
    assert res.episode[354] == res.episode[353]     # 355 goes on with its run


def test_two_late_originals_with_a_seen_psn_between_make_no_run(tmp_path):
    """PSNs 837 and 839 missing at the tap (838 between them seen) come 2.2 us after
    the last new PSN, in order, 0.2 us apart: both originals, delayed. Not a resend
    run from 837 (it would resend 838 next). Nor an RNR NAK's retry: the RNR NAK for
    830 came 2.4 us before, and its timer asks 0.64 ms; its retry is the restart at
    830 (43)."""
    path, truth = generate(tmp_path, "rc_loss", 2728, loss=0.02, loss_before_tap=1.0,
                           rnr=0.05, corrupt=0.0, encap="roce2", messages=30,
                           bidirectional=False, capture_loss=0.0, psn_start=None,
                           reorder=0.03, duplicate=0.01)
    assert {e["kind"] for e in truth["events"] if e["frame"] in (40, 41)} == {"reorder"}
    res, diff = compare(path, truth)
    for f in (40, 41):
        assert "retransmission" not in _flags_of(res, f) and res.episode[f - 1] == -1
    assert {"rnr_retry", "go_back_n"} <= set(_flags_of(res, 43))
    assert R.REASON_NAMES[res.reason[42]] == "rnr" and res.trig[42] + 1 == 35
    assert check_exact(truth, res, diff) == []


def test_read_copy_right_after_its_runs_resend_may_be_a_restart(tmp_path):
    """A run resends READ 117 (41) and, 27 ns later, READ 117 again (42). The READ's
    response (29) was lost after the tap and ACKs past it came (36..40): an implied
    NAK the tap cannot see, which the requester acted on as its run sent 117. So 42
    is that restart or the network's copy: flagged, not a sure copy."""
    path, truth = generate(tmp_path, "rc_loss", 3183, loss=0.06, loss_before_tap=0.5,
                           rnr=0.0, corrupt=0.0, encap="roce1", messages=30,
                           bidirectional=False, capture_loss=0.0, psn_start=16777102)
    assert {e["kind"] for e in truth["events"] if e["frame"] == 29} == {"loss"}
    res, diff = compare(path, truth)
    assert {"network_duplicate", "ambiguous"} <= set(_flags_of(res, 42))
    assert check_exact(truth, res, diff) == []


def test_copy_after_a_read_answered_earlier_than_the_latest_response(tmp_path):
    """READ 136..139 lost its first response after the tap (63), so the response past
    it (64) was an implied NAK: the requester re-reads from 136 (lost before the tap)
    and resends 140 (73) 1.5 us after its first copy. A later READ (144) was answered
    in between, so the READ just before 140 is not the latest one answered; its
    responses still came after 140's last copy: no sure network copy, a resend,
    flagged."""
    path, truth = generate(tmp_path, "rc_loss", 5650, loss=0.06, loss_before_tap=0.5,
                           rnr=0.0, corrupt=0.02, encap="roce2", messages=30,
                           bidirectional=False, capture_loss=0.0, psn_start=None)
    assert {e["kind"] for e in truth["events"] if e["frame"] == 63} == {"loss"}
    res, diff = compare(path, truth)
    assert {"retransmission", "ambiguous"} <= set(_flags_of(res, 73))
    assert check_exact(truth, res, diff) == []


def test_rnr_nak_again_after_its_timer_answers_a_retry_the_capture_missed(tmp_path):
    """RNR NAK 285 refuses ..934; the same RNR NAK again (295), with no request seen
    between, comes 0.64 ms later: the timer it asked for. A network duplicate would
    come sooner; this one answers the retry the capture missed, and the resend after
    its own timer (296) is its retry."""
    path, truth = generate(tmp_path, "rc_loss", 9569, loss=0.0, loss_before_tap=0.5, rnr=0.05,
                           corrupt=0.02, encap="ib", messages=30, bidirectional=True,
                           capture_loss=0.02, psn_start=None)
    assert {e["frame"] for e in truth["rnr_naks"]} >= {285, 295}
    res, diff = compare(path, truth)
    assert "rnr" in _flags_of(res, 295) and "network_duplicate" not in _flags_of(res, 295)
    assert R.REASON_NAMES[res.reason[295]] == "rnr" and res.trig[295] + 1 == 295
    assert check_exact(truth, res, diff) == []


def test_first_copy_at_the_refused_psn_after_the_timer_is_the_rnr_retry(tmp_path):
    """RNR NAK 239 refuses ..514, whose copy the capture missed; the first copy the tap
    sees (255) comes after the NAK's timer: at the tap a first transmission, but the
    NAK shows the responder had one, so it is the RNR retry."""
    path, truth = generate(tmp_path, "rc_loss", 6033, loss=0.06, loss_before_tap=1.0, rnr=0.05,
                           corrupt=0.0, encap="ib", messages=30, bidirectional=True,
                           capture_loss=0.02, psn_start=None)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[239]["tap_retry_frame"] == 255
    res, diff = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 255) and "retransmission" not in _flags_of(res, 255)
    assert check_exact(truth, res, diff) == []


def test_rnr_nak_refusing_a_held_restart_waits_for_its_retry(tmp_path):
    """A restart at ..446 (122) comes 2.6 us after an RNR NAK for it that was lost after
    the tap (102): held as a possible copy, then taken as the NAK 111's restart. RNR
    NAK 125 refuses that restart itself; the requester waits its timer and retries
    (390): the RNR retry, answering 125, not a timeout."""
    path, truth = generate(
        tmp_path, "rc_clean", 95593, **dict(
            WIDE, ops={"send": 2, "write": 2, "read": 2}, loss_before_tap=0.0, rnr=0.04,
            corrupt=0.02, encap="roce2", connections=3, ack_every=1, pmtu=1024, cm=True))
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[125]["tap_retry_frame"] == 390
    res, diff = compare(path, truth)
    assert {"rnr_retry", "go_back_n"} <= set(_flags_of(res, 390))
    assert R.REASON_NAMES[res.reason[389]] == "rnr" and res.trig[389] + 1 == 125
    assert "lost_after_capture" not in _flags_of(res, 122)
    assert check_exact(truth, res, diff) == []


def test_rnr_retry_timed_from_the_first_rnr_nak_when_a_later_one_was_lost(tmp_path):
    """RNR NAKs 116 and 125 both refuse ..163 (a run copy, 121, went between); 125 was
    lost after the tap. The run's resend of ..163 (127) comes 0.64 ms after 116 but
    just short of 125's timer: the requester waited on 116, so 127 is its RNR retry.
    Likewise 166 then 179 (lost) for ..840, retried at 185. Fresh property draws."""
    path, truth = generate(tmp_path, "rc_loss", 8514, loss=0.06, loss_before_tap=0.0, rnr=0.05,
                           corrupt=0.02, encap="roce2", messages=30, bidirectional=False,
                           capture_loss=0.0, psn_start=16777120)
    assert 125 in {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    res, diff = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 127)
    assert check_exact(truth, res, diff) == []
    (tmp_path / "b").mkdir()
    path, truth = generate(tmp_path / "b", "rc_loss", 2441, loss=0.06, loss_before_tap=0.0,
                           rnr=0.05, corrupt=0.0, encap="ib", messages=30, bidirectional=False,
                           capture_loss=0.0, psn_start=None)
    res, diff = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 185)
    assert check_exact(truth, res, diff) == []


def test_hole_fill_after_a_timer_long_pause_then_a_later_first_copy_is_a_timeout(tmp_path):
    """..058 and ..059 went unseen (lost before the tap); 67 ms of silence later the
    first copy of ..058 (290) fills the hole, and the next request is ..060, also a
    first copy (..059's resend lost too). No network holds two originals that long:
    the requester's timer restarted at ..058 (a go-back-N run), not two late
    originals."""
    path, truth = generate(tmp_path, "rc_loss", 9410, loss=0.06, loss_before_tap=1.0, rnr=0.05,
                           corrupt=0.02, encap="roce2", messages=30, bidirectional=True,
                           capture_loss=0.0, psn_start=16777003)
    resent = {e["frame"]: e for e in truth["retransmissions"] if e["frame"] is not None}
    assert resent[290]["reason"] == "timeout"
    res, diff = compare(path, truth)
    assert {"retransmission", "go_back_n"} <= set(_flags_of(res, 290))
    assert R.REASON_NAMES[res.reason[289]] == "timeout"
    assert check_exact(truth, res, diff) == []
