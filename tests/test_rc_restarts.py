"""RC engine: where a restart begins and which cause it answers, when a run skips many
PSNs, a copy comes past a pending cause's PSN, a READ is re-read part-way, or the
restart's first resend was lost before the tap (issue #13). Fresh draws of the wide
sweep, pinned."""

from __future__ import annotations

from rc_helpers import check_exact, compare, episode_diff, flags_of, generate, start_of

READS = {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}
BIG = (4096, 9000, 20000)


def test_a_runs_skips_are_remembered_past_many_later_runs(tmp_path):
    """Three connections, every run skipping a few PSNs lost before the tap or delayed.
    193 is the first run's resend of ..536 (frame 60's run skipped it), delayed 3 us past
    four later runs and their skips. The engine remembers enough skips to place it:
    that run's resend, late (flagged: a later run resent ..536 too). It used to forget
    the skip and call it the network's copy, and so for 30 more resends."""
    path, truth = generate(tmp_path, "rc_clean", 98802, ops={"send": 2, "write": 2, "read": 2},
                           sizes=BIG, loss=0.05, loss_before_tap=1.0, rnr=0.04, corrupt=0.0,
                           encap="ib", connections=3, ack_every=2, credits="unlimited",
                           pmtu=256, tx_depth=8, rnr_timer=12, cm=True, reorder=0.03,
                           messages=20)
    resent = {e["frame"]: e for e in truth["retransmissions"] if e["frame"] is not None}
    assert resent[193]["trigger_frame"] == 50
    res, diff = compare(path, truth)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 193)
    assert res.episode[192] == res.episode[59]
    assert len(check_exact(truth, res, diff)) <= 3


def test_a_copy_past_the_pending_hole_is_no_restart_when_the_restart_follows(tmp_path):
    """READ ..258 (70) then its copy (73, 2.3 us later) while the implied NAK 68 names
    ..256 (its response 67 came damaged, so the requester surely restarts there, and
    the later hole 71 shows is covered by that restart). 73 is held: the next request
    (74) restarts at ..256 itself, so 73 was no restart with its first resends lost
    but a copy (the original, delayed past the restart's resend 70). 74 answers 68."""
    path, truth = generate(tmp_path, "rc_clean", 69357, ops=READS, sizes=BIG, loss=0.02,
                           loss_before_tap=1.0, rnr=0.04, corrupt=0.02, encap="ib",
                           connections=1, ack_every=1, credits="count", pmtu=4096,
                           tx_depth=2, rnr_timer=1, cm=True, reorder=0.03, messages=20)
    assert 73 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    res, diff = compare(path, truth)
    assert "retransmission" not in flags_of(res, 73)
    assert "ambiguous" in flags_of(res, 73)
    assert start_of(res, 74) == ("implied_nak", 68)
    assert check_exact(truth, res, diff) == []
    assert episode_diff(truth, res) == []


def test_a_read_re_read_inside_the_runs_last_read_is_a_new_restart(tmp_path):
    """The run re-reads READ ..877 (628, 63 PSNs). Its responses show ..887 missing
    (687), and 696 re-reads from ..887: inside the PSNs of the run's latest resend, so
    no run step (a run's next PSN comes after the whole READ) but a new restart, for
    the implied NAK 687."""
    path, truth = generate(tmp_path, "rc_clean", 86896, ops=READS, sizes=BIG, loss=0.05,
                           loss_before_tap=1.0, rnr=0.0, corrupt=0.0, encap="ib-grh",
                           connections=1, ack_every=4, credits="count", pmtu=256, tx_depth=8,
                           rnr_timer=1, cm=False, messages=20)
    res, diff = compare(path, truth)
    assert "go_back_n" in flags_of(res, 696)
    assert start_of(res, 696) == ("implied_nak", 687)
    assert check_exact(truth, res, diff) == []
    assert episode_diff(truth, res) == []


def test_a_held_resend_past_a_nak_starts_its_run_across_a_lost_resend(tmp_path):
    """NAK 2472 names ..371 (2464 came damaged). Its restart lost ..371 and ..373 before
    the tap: 2476 (..372, a run skipped it before) then 2477 (..374). 2476, held as an
    old run's resend or the restart, is the restart: the next request goes on with it
    promptly, the PSN between lost before the tap, as a timeout's run may."""
    path, truth = generate(tmp_path, "rc_clean", 14787,
                           ops={"write_imm": 1, "send_imm": 1, "send": 1}, sizes=BIG, loss=0.05,
                           loss_before_tap=1.0, rnr=0.04, corrupt=0.02, encap="roce2",
                           connections=3, ack_every=2, credits="unlimited", pmtu=256,
                           tx_depth=16, rnr_timer=1, cm=True, messages=20)
    res, diff = compare(path, truth)
    assert "ambiguous" not in flags_of(res, 2476)
    assert start_of(res, 2476) == ("nak_seq", 2472)
    assert start_of(res, 2485) == ("nak_seq", 2472)
    assert check_exact(truth, res, diff) == []
    assert episode_diff(truth, res) == []


def test_a_read_copy_with_only_ignored_causes_pending_restarts_nothing(tmp_path):
    """NAK 31's run resends READ ..718 (34); NAK 42 (..719) then shows ..718's response
    missing, but the retry from ..718 under way covers both it and the hole: ignored.
    56 repeats READ ..718 1.8 us after 34 (the original, delayed): no cause it could
    answer. Nor an implied NAK the tap cannot see: the tap never saw a response at
    ..718 (one lost after it would be that), so a copy, not a resend in doubt."""
    path, truth = generate(tmp_path, "rc_clean", 35126, ops=READS,
                           sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.05,
                           loss_before_tap=1.0, rnr=0.04, corrupt=0.02, encap="roce2",
                           connections=2, ack_every=4, credits="unlimited", pmtu=4096,
                           tx_depth=8, rnr_timer=12, cm=False, reorder=0.03,
                           duplicate=0.01, messages=20)
    assert 56 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    res, diff = compare(path, truth)
    assert "network_duplicate" in flags_of(res, 56)
    assert "retransmission" not in flags_of(res, 56)
    assert check_exact(truth, res, diff) == []


def test_the_refused_psn_after_the_wait_is_the_rnr_retry_not_a_run_begun_before(tmp_path):
    """RNR NAK 101 refuses ..050 (timer 10 us). 108, the atomic ..049 again (the
    original, delayed), comes before the wait is over: whatever it is, no retry for
    that RNR NAK. 119, ..050 once the wait is over, is the RNR NAK's retry, a new
    episode, not 108's run going on in order (which made 108 a resend)."""
    path, truth = generate(tmp_path, "rc_clean", 36316, ops=READS,
                           sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.0,
                           loss_before_tap=0.3, rnr=0.04, corrupt=0.02, encap="roce2",
                           connections=3, ack_every=4, credits="unlimited", pmtu=1024,
                           tx_depth=2, rnr_timer=1, cm=True, reorder=0.02, messages=20)
    assert 108 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    res, diff = compare(path, truth)
    assert {"retransmission", "go_back_n", "rnr_retry"} <= flags_of(res, 119)
    assert start_of(res, 119) == ("rnr", 101)
    assert res.episode[107] != res.episode[118]
    assert check_exact(truth, res, diff) == []
    assert episode_diff(truth, res) == []



def test_two_hole_fills_past_a_pending_nak_stay_in_doubt_until_a_third(tmp_path):
    """NAK 17 (..802, lost after the tap) is pending when 22 and 23 fill the hole
    ..809-..810 in order: the NAK's restart with seven resends lost before the tap, or
    two originals the network delayed together. No third packet goes on with them
    (24 is the timer's restart 67 ms later, at ..802): both stay flagged. (24's own
    run going on in order settles nothing of theirs.)"""
    path, truth = generate(tmp_path, "rc_clean", 89794, ops={"send": 2, "write": 2, "read": 2},
                           sizes=(1, 2, 8), loss=0.05, loss_before_tap=0.0, rnr=0.0,
                           corrupt=0.0, encap="ib", connections=1, ack_every=2,
                           credits="unlimited", pmtu=4096, tx_depth=16, rnr_timer=6, cm=False,
                           reorder=0.03, duplicate=0.01, messages=20)
    assert {22, 23} <= {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    res, diff = compare(path, truth)
    assert "ambiguous" in flags_of(res, 22) and "ambiguous" in flags_of(res, 23)
    assert start_of(res, 24) == ("timeout", None)
    assert check_exact(truth, res, diff) == []
