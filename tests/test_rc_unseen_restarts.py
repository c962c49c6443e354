"""Restarts whose first packets the tap never saw, after a READ or atomic response
lost after it (issue #13): which hole the requester was shown, and when. Fresh
`rc_loss` seeds (6000-9099); each capture equals the tap's-eye truth, and the
episodes named below have the truth's reason and cause frame."""

from __future__ import annotations

from rc_helpers import episode_diff, exact, flags_of, start_of


def _lost_after(truth, frame):
    return any(e["frame"] == frame and e["kind"] == "loss" and e.get("where") == "after_tap"
               for e in truth["events"])


def test_a_restart_that_the_next_timeout_shows_began_at_a_read(tmp_path):
    """READ ..541 (..541-544): response ..544 (146) is lost after the tap, so ACK ..550
    (150) shows the requester the hole. Its READ re-request at ..544 is lost before
    the tap: the tap sees the restart from ..545 (156), 0.4 us after, too soon for a
    timer. The next restart, a timeout, re-requests ..544 (199): the requester never
    had it, so 156 answered the implied NAK at 150 (before: a sequence NAK the tap
    did not see, with no cause frame)."""
    truth, res = exact(tmp_path, 7056, "rc_loss")
    assert _lost_after(truth, 146)
    assert start_of(res, 156) == ("implied_nak", 150)
    assert start_of(res, 199) == ("timeout", None)
    assert "lost_after_capture" in flags_of(res, 146)
    assert episode_diff(truth, res) == []


def test_the_same_for_an_atomic(tmp_path):
    """The atomic ..513's response (171) is lost after the tap; ACK ..514 (172) shows
    the hole; the re-sent atomic is lost before the tap and the restart is seen from
    ..514 (178); the timeout later re-sends the atomic (206)."""
    truth, res = exact(tmp_path, 6042, "rc_loss")
    assert _lost_after(truth, 171)
    assert start_of(res, 178) == ("implied_nak", 172)
    assert start_of(res, 206) == ("timeout", None)
    assert episode_diff(truth, res) == []


def test_a_response_showing_two_holes_names_the_earlier_at_its_restart(tmp_path):
    """Response ..489 (40) shows READ ..484 missing ..487 and READ ..488 missing ..488;
    the requester re-requests from ..487 (46): that response is its cause (before: a
    timeout, the pending implied NAK naming only ..488)."""
    truth, res = exact(tmp_path, 8023, "rc_loss")
    assert start_of(res, 46) == ("implied_nak", 40)
    assert start_of(res, 66) == ("implied_nak", 60)


def test_a_response_before_the_restart_went_out_ends_its_hold(tmp_path):
    """ACK ..35 (179) shows atomic ..33 missing; its response (180) comes before the
    restart at ..33 goes out (184): the requester had it, its retry already decided,
    and it awaits nothing there. So response ..41 (204), after ..40 (202) lost past
    the tap, shows a hole the requester acts on: the READ re-request at ..40 (213)
    (before: a timeout, the hole taken as covered by the retry from ..33)."""
    truth, res = exact(tmp_path, 8145, "rc_loss")
    assert start_of(res, 184) == ("implied_nak", 179)
    assert start_of(res, 213) == ("implied_nak", 204)
    assert "lost_after_capture" in flags_of(res, 202)
    assert episode_diff(truth, res) == []


def test_a_response_after_the_restart_was_decided_is_passed_over(tmp_path):
    """The READ ..513 restart (174) comes 1 us after the run's copy of ..513, too soon
    for a timer; a response at ..513 (172) passed just before it, after ACK ..519
    (166) had shown the hole (its first response, 146, lost after the tap): 166 is
    the cause (before: an implied NAK with no cause frame)."""
    truth, res = exact(tmp_path, 7025, "rc_loss")
    assert start_of(res, 174) == ("implied_nak", 166)
    assert episode_diff(truth, res) == []
