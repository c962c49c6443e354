"""Fresh `rc_reorder` seeds (8000-8149) where a copy the network delayed or repeated
late in a run was taken for a restart, or a run's skip was forgotten (issue #13).
Each capture now equals the tap's-eye truth; the frames below are checked one by one."""

from __future__ import annotations

from rc_helpers import check_exact, compare, episode_diff, exact, flags_of, generate, start_of


def _event(truth, frame, kind="reorder"):
    return frame in {e["frame"] for e in truth["events"] if e["kind"] == kind}


def _starts(res, frame):
    return "go_back_n" in flags_of(res, frame)


def test_a_copy_of_a_psn_the_run_already_passed_does_not_restart_it(tmp_path):
    """The timeout run resends ..169 (103) and ..170 (104); 1 ns later the network's
    copy of ..169 (105) arrives and the run goes on at ..171 (106). The run never
    stopped: 105 is no restart (before: a new timeout episode from 105)."""
    truth, res = exact(tmp_path, 8006)
    assert _event(truth, 105, "duplicate")
    assert not _starts(res, 105) and not _starts(res, 106)
    assert res.episode[105] == res.episode[103]     # 106 and 104: one run
    assert "ambiguous" in flags_of(res, 105)


def test_a_late_copy_at_an_ignored_nak_psn_waits_for_the_next_request(tmp_path):
    """NAK 30 names READ ..513 while the retry from ..504 covers it (ignored); 61, the
    READ delayed 3 us, is followed by new data (..531, 62), not by ..514: no restart
    (before: `nak_seq` at 30). The next NAK's run (78: ..528, then ..530) skips
    ..529, whose resend comes late (128): that run's, in doubt."""
    truth, res = exact(tmp_path, 8037)
    assert _event(truth, 61) and _event(truth, 128)
    assert not _starts(res, 61) and "retransmission" not in flags_of(res, 61)
    assert start_of(res, 78) == ("nak_seq", 74)
    assert "ambiguous" not in flags_of(res, 78)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 128)


def test_new_data_after_a_late_copy_shows_no_restart(tmp_path):
    """NAK 48 names ..414 (ignored: the run resent ..414, 44). 2 us of new data later
    the network delivers a delayed copy of ..414 (77) and the stream goes on with
    new data (..435, 79): no restart, a copy in doubt (before: `nak_seq` at 48)."""
    truth, res = exact(tmp_path, 8071)
    assert _event(truth, 77)
    assert not _starts(res, 77)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 77)
    assert "retransmission" not in flags_of(res, 79)


def test_a_run_begun_by_a_held_copy_remembers_what_it_skipped(tmp_path):
    """168 (..626) was held back past NAK ..625's PSN, and 169 (..628) made it a run:
    the run skipped ..627. Its resend, delayed (211), is that run's late resend
    (before: called the network's copy of ..627, not a resend)."""
    truth, res = exact(tmp_path, 8095)
    assert _event(truth, 211)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 211)
    assert res.episode[210] == res.episode[167]


def test_one_cause_one_restart_after_the_run_is_over(tmp_path):
    """NAK 178 (..654) started the run from ..655 (183; ..654 unseen) that went on to
    new data (193, 194). The original ..654 delayed (195) comes after: no second
    restart for the same NAK (before: a `nak_seq` episode at 195)."""
    truth, res = exact(tmp_path, 8101)
    assert _event(truth, 195) and _event(truth, 196)
    assert start_of(res, 183) == ("nak_seq", 178)
    assert not _starts(res, 195) and not _starts(res, 196)
    assert "ambiguous" in flags_of(res, 195)


def test_an_ignored_cause_puts_no_restart_at_a_nak_psn_in_doubt(tmp_path):
    """No reordering (`rc_loss`): an implied NAK at ..952 was ignored (a retry
    covered it). The first copy of ..969 (317) after NAK 314 names it is that NAK's
    restart, sure; so the NAK is spent, and the implied NAK at 340 starts the next
    restart (343), as the truth has it. (Guard: a hole fill past an ignored cause
    must not hold the NAK's restart in doubt.)"""
    path, truth = generate(tmp_path, "rc_loss", 6001)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == [] and episode_diff(truth, res) == []
    assert start_of(res, 317) == ("nak_seq", 314)
    assert "ambiguous" not in flags_of(res, 317)
    assert start_of(res, 343) == ("implied_nak", 340)


def test_a_nak_older_than_an_acknowledgement_seen_is_no_cause(tmp_path):
    """NAK 35 names ..109 after the atomic response of ..109 (34) passed: the
    responder's expected PSN never goes back, so the network delayed it, and the
    requester dropped it. The restart at ..110 (40) answers NAK 36, naming ..110
    (before: NAK 35)."""
    truth, res = exact(tmp_path, 8097)
    assert _event(truth, 35)
    assert "nak" in flags_of(res, 35)
    assert start_of(res, 40) == ("nak_seq", 36)
    assert episode_diff(truth, res) == []


def test_a_hole_fill_with_only_ignored_causes_pending_is_a_late_original(tmp_path):
    """A wide draw (3 connections, reordering): 1129 fills a hole at ..729 while
    only causes the requester ignores are pending before it. As with no cause, the
    next request decides: new data (1132), so a late original, as the truth has it
    (before: held as a restart in doubt)."""
    truth, res = exact(tmp_path, 95134, name="rc_clean",
                       ops={"send": 2, "write": 2, "read": 2}, sizes=(4096, 9000, 20000),
                       loss=0.05, loss_before_tap=0.3, rnr=0, corrupt=0, encap="roce1",
                       connections=3, ack_every=4, credits="unlimited", pmtu=256, tx_depth=16,
                       rnr_timer=6, cm=True, reorder=0.01, duplicate=0, messages=20)
    assert _event(truth, 1129)
    assert "out_of_sequence" in flags_of(res, 1129)
    assert not flags_of(res, 1129) & {"retransmission", "ambiguous", "go_back_n"}


def test_a_hole_fill_at_an_ignored_nak_psn_waits_for_the_next_request(tmp_path):
    """NAK 166 names ..986 while the retry from READ ..963 covers it (ignored). 170,
    the original of ..986 delayed 2.3 us, fills the hole: held, not taken at once for
    that NAK acted on after all. 171 jumps to ..988, a first copy too, so no run
    settles it: 170 stays a late original in doubt, 171 a late original, and NAK
    172's restart is 173. (Guard for the hold of copies at an ignored NAK's PSN.)"""
    truth, res = exact(tmp_path, 9033)
    assert _event(truth, 170) and _event(truth, 171)
    assert {"out_of_sequence", "ambiguous"} <= flags_of(res, 170)
    for f in (170, 171):
        assert not flags_of(res, f) & {"retransmission", "go_back_n"}
    assert start_of(res, 173) == ("nak_seq", 172)


_SMALL = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1},
          "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0, "loss_before_tap": 0,
          "ack_every": 4, "credits": "count", "pmtu": 256, "duplicate": 0, "messages": 20}


def test_a_jump_from_a_doubtful_start_is_as_doubtful(tmp_path):
    """The original ..764 arrives 2 us late (129), after the NAK run resent ..764-769;
    0.5 us later so does the original ..769 (130). 129 is held, then taken for a
    restart in doubt (its run jumping to ..769, or a late copy); 130 hangs on the
    same doubt: flagged too (before: a resend, ..765-768 lost before the tap)."""
    kw = dict(_SMALL, rnr=0, corrupt=0, encap="roce2", connections=2, tx_depth=2,
              rnr_timer=6, cm=True, reorder=0.02)
    truth, res = exact(tmp_path, 50391, "rc_clean", **kw)
    assert _event(truth, 129) and _event(truth, 130)
    assert "ambiguous" in flags_of(res, 129) and "ambiguous" in flags_of(res, 130)
