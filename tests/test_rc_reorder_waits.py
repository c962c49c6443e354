"""Captures where a late copy came while the requester was waiting (issue #13): on
a retry under way, on an RNR NAK's timer, or on its ACK timeout; and a late copy
right after a new request. No cause the requester acts on can have resent it then,
so each is a late or duplicated copy, or stays in doubt. Each capture now equals the
tap's-eye truth; the frames below are checked one by one."""

from __future__ import annotations

from rc_helpers import episode_diff, exact, flags_of, reordered, start_of

# Draws of `tools`' wider sweep (seed 343): reordering with duplication.
READ_GRH = {"ops": {"read": 1}, "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0,
            "loss_before_tap": 0, "rnr": 0.04, "corrupt": 0.02, "encap": "ib-grh",
            "connections": 1, "ack_every": 1, "credits": "count", "pmtu": 1024,
            "tx_depth": 16, "rnr_timer": 12, "cm": False, "reorder": 0.02,
            "duplicate": 0.01, "messages": 20}
MIXED_GRH = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (0, 64, 200, 256, 700, 1024, 1500),
             "loss": 0.02, "loss_before_tap": 1, "rnr": 0.04, "corrupt": 0, "encap": "ib-grh",
             "connections": 1, "ack_every": 2, "credits": "count", "pmtu": 1024,
             "tx_depth": 16, "rnr_timer": 1, "cm": True, "reorder": 0.02, "duplicate": 0.01,
             "messages": 20}
SMALL_GRH = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (1, 2, 8), "loss": 0.05,
             "loss_before_tap": 1, "rnr": 0.04, "corrupt": 0.02, "encap": "ib-grh",
             "connections": 2, "ack_every": 2, "credits": "unlimited", "pmtu": 1024,
             "tx_depth": 8, "rnr_timer": 6, "cm": True, "reorder": 0.02, "duplicate": 0.01,
             "messages": 20}
SMALL_ROCE1 = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8),
               "loss": 0.05, "loss_before_tap": 0, "rnr": 0.04, "corrupt": 0.02,
               "encap": "roce1", "connections": 3, "ack_every": 2, "credits": "count",
               "pmtu": 256, "tx_depth": 8, "rnr_timer": 12, "cm": False, "reorder": 0.03,
               "duplicate": 0, "messages": 20}
READ_ROCE2 = {"ops": {"read": 1}, "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0.05,
              "loss_before_tap": 0.3, "rnr": 0, "corrupt": 0.02, "encap": "roce2",
              "connections": 3, "ack_every": 4, "credits": "unlimited", "pmtu": 256,
              "tx_depth": 2, "rnr_timer": 12, "cm": True, "reorder": 0.02,
              "duplicate": 0.01, "messages": 20}


def test_a_read_copy_while_the_retry_of_its_unanswered_read_is_under_way(tmp_path):
    """NAK 37's run re-reads ..174 to ..177 (38-41); the responses to ..175-..177 come
    (42-44), ..174's does not (delayed past them). ..174 and ..175's originals,
    delayed, come next (45, 46). The tap never saw a response at ..174, so a response
    past it showed the requester its hole at the tap (42), while the retry from ..174
    was under way: ignored. No implied NAK the tap cannot see, and too soon for a
    timer: late copies or a restart for a cause the capture missed, flagged (before:
    a restart for an unseen implied NAK, and 38 lost after the tap)."""
    truth, res = exact(tmp_path, 70345, name="rc_clean", **READ_GRH)
    assert reordered(truth, 45) and reordered(truth, 46)
    assert "ambiguous" in flags_of(res, 45) and "ambiguous" in flags_of(res, 46)
    assert "lost_after_capture" not in flags_of(res, 38)
    assert start_of(res, 38) == ("nak_seq", 37)


def test_two_late_hole_fills_then_a_timeout_67_ms_later(tmp_path):
    """..370 and ..371's originals, delayed, fill their hole 2.9 us after it showed
    (31, 32), too soon for a timer; the next request, ..372, comes 67 ms later (35),
    the timer's resend. Two late copies in a row look like a run; the third packet
    settles that only when it goes on promptly, as a run goes: both stay flagged
    (before: a timeout run 31-42, unflagged)."""
    truth, res = exact(tmp_path, 64307, name="rc_clean", **MIXED_GRH)
    assert reordered(truth, 31) and reordered(truth, 32)
    assert "ambiguous" in flags_of(res, 31) and "ambiguous" in flags_of(res, 32)
    assert "retransmission" in flags_of(res, 35) and "ambiguous" not in flags_of(res, 35)
    assert episode_diff(truth, res) == []


def test_a_late_copy_of_the_refused_psn_during_its_rnr_wait(tmp_path):
    """RNR NAK 30 refuses ..206 (timer code 6), then NAK 31 names ..206: the requester
    waits out the RNR timer. ..206's original, delayed, comes 1.6 us later (35) and
    draws another RNR NAK (37). A READ just before it was answered since, so a lost
    response may have been an implied NAK: not quick, but held all the same, and the
    next request (75, 80 us on) shows it no run: the network's copy. The RNR NAK it drew
    only restarted the wait, so the retry run (75-78) answers RNR NAK 30 (before: 35 a
    restart for NAK 31, and the retry run NAK 31's)."""
    truth, res = exact(tmp_path, 90077, name="rc_clean", **SMALL_GRH)
    assert reordered(truth, 35)
    assert "retransmission" not in flags_of(res, 35)
    assert "network_duplicate" in flags_of(res, 35)
    assert start_of(res, 75) == ("rnr", 30)
    assert episode_diff(truth, res) == []


def test_a_read_start_in_doubt_stays_so_after_a_timer_long_pause(tmp_path):
    """..260's original READ, delayed, comes (38) after NAK 32's re-read of it was
    answered (35): too soon for a timer, and no hole shown since; taken for a restart
    in doubt. Its stream's next request, ..261, comes 67 ms later (171): the timer's.
    Going on in order settles a doubtful start only promptly, as a run goes (real
    runs may pause that long, so 171 stays in the same run): 38 stays flagged
    (before: unflagged, a restart for an implied NAK the tap did not see)."""
    truth, res = exact(tmp_path, 57144, name="rc_clean", **READ_ROCE2)
    assert reordered(truth, 38)
    assert "ambiguous" in flags_of(res, 38)
    assert "retransmission" in flags_of(res, 171) and "ambiguous" not in flags_of(res, 171)


def test_a_skipped_resend_delayed_into_an_rnr_wait(tmp_path):
    """RNR NAK 108's retry run (118-124) skips ..136 (its resend delayed); NAK 127's
    run resends it (133), and RNR NAK 148 refuses it again (timer code 12). The
    delayed resend arrives 1.5 us later (162). With that RNR NAK the only cause
    pending, nothing the requester acts on can resend ..136 before the timer: 162 is
    the skipping run's resend, late, and the copy 640 us on (164) the RNR retry
    (before: 162 a restart, taken to show the RNR NAK lost, and 164 a timeout)."""
    truth, res = exact(tmp_path, 55016, name="rc_clean", **SMALL_ROCE1)
    assert reordered(truth, 162)
    assert "retransmission" in flags_of(res, 162) and "go_back_n" not in flags_of(res, 162)
    assert res.episode[161] == res.episode[117]
    assert "rnr_retry" in flags_of(res, 164)
    assert start_of(res, 164) == ("rnr", 148)


def test_an_rnr_nak_for_a_copy_in_flight_lost_then_the_first_ones_retry(tmp_path):
    """RNR NAK 124 refuses ..241 (timer code 6, 80 us); a resend run sent before it
    reached the requester (116-123) draws a second one for the same PSN (132, lost
    after the tap), then a sequence NAK (133, delayed). The retry (134) comes 80.2 us
    after 124, 79.8 us after 132: sooner than the second one's timer, so that one
    never reached the requester, but not the first one's, which it waited out. 134 is
    RNR NAK 124's retry (before: the second RNR NAK's timer taken to void both, and
    134 a restart for NAK 133)."""
    draws = {"ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
             "loss": 0.05, "loss_before_tap": 0.0, "rnr": 0.04, "corrupt": 0.0,
             "encap": "ib-grh", "connections": 2, "ack_every": 2, "credits": "count",
             "pmtu": 256, "tx_depth": 8, "rnr_timer": 6, "cm": False, "reorder": 0.03,
             "duplicate": 0.0, "messages": 20}     # wider draw 272 of master 403
    truth, res = exact(tmp_path, 154, name="rc_clean", **draws)
    assert reordered(truth, 133)
    assert "rnr" in flags_of(res, 124) and "rnr" in flags_of(res, 132)
    assert {"retransmission", "go_back_n", "rnr_retry"} <= flags_of(res, 134)
    assert start_of(res, 134) == ("rnr", 124)
    assert episode_diff(truth, res) == []


def test_a_copy_right_after_a_first_copy_that_followed_the_run(tmp_path):
    """NAK 140's run resends ..350 to ..353 (141-144), the front the tap knew. ..354
    comes next (145), taken for new data, then again 45 ns later (146). 145 is ..354's
    original, sent before the NAK reached the requester and held 3 us, and 146 the
    run's resend of it; or 145 the requester's new data and 146 the network's copy:
    the tap cannot tell the two apart. 146 is flagged (before: a network copy, sure);
    145 is new data either way."""
    draws = {"ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
             "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0.02,
             "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02, "encap": "ib",
             "connections": 3, "ack_every": 4, "credits": "unlimited", "pmtu": 4096,
             "tx_depth": 8, "rnr_timer": 6, "cm": False, "reorder": 0.03, "duplicate": 0.0,
             "messages": 20}     # wider draw 138 of master 335
    truth, res = exact(tmp_path, 96048, name="rc_clean", **draws)
    assert reordered(truth, 145)
    assert start_of(res, 141) == ("nak_seq", 140)
    assert "retransmission" not in flags_of(res, 145) and "ambiguous" not in flags_of(res, 145)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 146)
