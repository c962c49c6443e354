"""Which response showed the requester a READ's missing response (an implied NAK,
IBA 9.7.4.1.5) when the tap cannot see it as a hole: the READ's response passed the
tap and was lost after it. Found by 100 fresh `rc_loss` seeds (issue #13): each
restart's episode names the response the generator's requester acted on."""

from __future__ import annotations

from rc_helpers import compare, episode_diff, generate, start_of


def _run(tmp_path, seed):
    path, truth = generate(tmp_path, "rc_loss", seed)
    res, _ = compare(path, truth)
    return truth, res


def _truth_cause(truth, frame):
    e = next(e for e in truth["retransmissions"] if e["frame"] == frame)
    return e["reason"], e["trigger_frame"]


def test_an_ack_of_the_reads_last_psn_shows_its_missing_response(tmp_path):
    """READ ..653 (four responses): the last one, 106 (..656), was lost after the tap.
    ACK 109 acknowledges ..656 itself, so it covers the whole READ: the requester
    finds that response missing there and re-reads ..656 (115). Before, only a
    response past ..656 counted, none came, and the restart was called a timeout."""
    truth, res = _run(tmp_path, 5012)
    assert _truth_cause(truth, 115) == ("implied_nak", 109)
    assert start_of(res, 115) == ("implied_nak", 109)
    assert episode_diff(truth, res) == []


def test_a_hole_shown_before_a_second_lost_copy_of_the_response(tmp_path):
    """The response to READ ..689 passed the tap twice (269, then 295 for the run's
    resend 273) and was lost after it both times: the requester re-reads ..689 at
    298. Duplicate ACK 294, which covers ..689 and came after the run's READ ..685
    had its answers (291-293, so no retry covered ..689 any more), showed the hole
    first; 296 after the second copy is only the latest showing."""
    truth, res = _run(tmp_path, 5047)
    assert _truth_cause(truth, 298) == ("implied_nak", 294)
    assert start_of(res, 298) == ("implied_nak", 294)
    assert episode_diff(truth, res) == []


def test_an_implied_nak_seen_while_a_restart_was_in_doubt_is_ignored(tmp_path):
    """The restart 285 (READ ..829) was taken with doubt until 288 went on with its
    run. ACK 286 showed READ ..835 missing its response while that retry from ..829
    was under way (its READ awaited its own answer, 298): the requester ignored it
    (IBA 9.7.5.1.3), and acted on ACK 299, the next showing once the retry was over.
    Before, the doubt kept 286 as the pending cause, and 305's episode named it."""
    truth, res = _run(tmp_path, 5004)
    assert _truth_cause(truth, 305) == ("implied_nak", 299)
    assert start_of(res, 305) == ("implied_nak", 299)
    assert episode_diff(truth, res) == []


def test_a_doubtful_restart_weighs_the_hold_before_its_own(tmp_path):
    """The READ ..938 restart 79, amid run 54-77 and taken with doubt, is decided at
    the next request. Responses 60-63 showed ..938's missing response while the
    retry from READ ..926 (54) awaited its own answer (68): they showed nothing
    (IBA 9.7.5.1.3). Asked at the next request, the hold had become 79's own, and
    60 was named. Now the first showing after 68 is: ACK 69. (The requester acted
    on 71: 69 was lost after the tap, which nothing at the tap shows.)"""
    truth, res = _run(tmp_path, 5059)
    assert _truth_cause(truth, 79) == ("implied_nak", 71)
    assert start_of(res, 79) == ("implied_nak", 69)


def test_an_rnr_nak_past_the_read_ends_the_hold_of_its_lost_answer(tmp_path):
    """READ ..790 re-read at 83; its answer 87 was lost after the tap, so that retry
    from ..790 never ended on its own. RNR NAK 92 (..795) moved the retry point past
    ..790 (every PSN before it acknowledged), so a later showing of the hole counts
    again: 93, re-reading ..790 right after the RNR wait, is an implied NAK's restart
    (the response that showed it was missed by the capture), not a timeout."""
    path, truth = generate(tmp_path, "rc_loss", 8141, loss=0.06, loss_before_tap=0.0,
                           rnr=0.05, corrupt=0.02, encap="ib", messages=30,
                           bidirectional=False, capture_loss=0.02, psn_start=16777001)
    res, _ = compare(path, truth)
    assert _truth_cause(truth, 93) == ("implied_nak", None)
    assert start_of(res, 93)[0] == "implied_nak"
    assert episode_diff(truth, res) == []
