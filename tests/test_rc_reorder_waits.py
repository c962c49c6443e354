"""Captures where a late copy came while the requester was waiting (issue #13): on
a retry under way, on an RNR NAK's timer, or on its ACK timeout; and a late copy
right after a new request; and an RNR retry's first packets held past its run. No
cause the requester acts on can have resent it then, so each is a late or duplicated
copy, or stays in doubt. Each capture now equals the
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
# Wider draw 57 of master 345 (others vary it): every loss before the tap.
SENDS_LOST_BEFORE = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1},
                     "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0.05,
                     "loss_before_tap": 1.0, "rnr": 0.04, "corrupt": 0.0, "encap": "ib",
                     "connections": 2, "ack_every": 4, "credits": "count", "pmtu": 4096,
                     "tx_depth": 16, "rnr_timer": 1, "cm": True, "reorder": 0.01,
                     "duplicate": 0.01, "messages": 20}
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


def test_an_rnr_retry_whose_first_packet_came_after_its_run(tmp_path):
    """RNR NAK 59 refuses ..526 (timer 10 us), a sequence NAK for it follows (60).
    Once the timer ran out the requester resent from ..526; the tap sees the run from
    ..527 (62, 10.3 us after 59), held back as a hole fill until the next request (63)
    shows it the run's start, and the retry's first packet, ..526, held 3 us, after
    the run (77). 77 is that RNR retry, delayed (before: a resend of the run, not
    marked the RNR retry, when its start was decided only at the next request)."""
    truth, res = exact(tmp_path, 85435, name="rc_clean", **SENDS_LOST_BEFORE)
    assert reordered(truth, 77)
    assert "rnr" in flags_of(res, 59) and "nak" in flags_of(res, 60)
    assert start_of(res, 62) == ("rnr", 59) and "go_back_n" in flags_of(res, 62)
    assert {"retransmission", "rnr_retry"} <= flags_of(res, 77)
    assert start_of(res, 77) == ("rnr", 59)
    assert episode_diff(truth, res) == []


def test_an_rnr_nak_amid_a_run_then_the_run_seen_going_on_after_the_wait(tmp_path):
    """NAK 1369's run resends ..295 and ..296 (1373, 1374); RNR NAK 1375 refuses
    ..296 (timer code 12, 640 us). Once the timer ran out the requester resent from
    ..296; that packet was held 3 us, so the tap sees the run go on at ..297 (1384),
    the responder NAK ..296 (1386) and then ..296 itself (1393). 1384 starts the RNR
    NAK's retry run (before: the NAK's run going on), NAK 1386 comes while that retry
    covers ..296 (the requester ignores it), and 1393 is the retry's first packet,
    delayed: `rnr_retry` (before: a restart for NAK 1386)."""
    draws = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
             "loss": 0.05, "loss_before_tap": 1.0, "rnr": 0.04, "corrupt": 0.02,
             "encap": "roce1", "connections": 2, "ack_every": 4, "credits": "count",
             "pmtu": 1024, "tx_depth": 16, "rnr_timer": 12, "cm": False, "reorder": 0.03,
             "duplicate": 0.01, "bidirectional": False, "psn_start": None,
             "capture_loss": 0.01, "reorder_delay_ns": 3000, "rate_gbps": 200.0,
             "loss_dir": "both", "ack_delay_ns": 2000, "resp_delay_ns": 50,
             "max_rd_atomic": 1, "timeout": 18, "ackreq_every": 64, "prop_ns": 20,
             "udp_sport": "flow", "rq_depth": None, "max_unacked": 16, "fmt": "pcap",
             "messages": 40, "pfc": True, "drain_gbps": 8.0}    # extended draw 10 of master 1
    truth, res = exact(tmp_path, 85101, name="rc_clean", **draws)
    assert reordered(truth, 1393)
    assert start_of(res, 1373) == ("nak_seq", 1369)
    assert start_of(res, 1384) == ("rnr", 1375) and "go_back_n" in flags_of(res, 1384)
    assert {"retransmission", "rnr_retry"} <= flags_of(res, 1393)
    assert start_of(res, 1393) == ("rnr", 1375)


def test_an_rnr_retrys_first_packets_held_past_its_run_are_too_soon_for_a_timer(tmp_path):
    """RNR NAK 172 refuses ..060 (640 us). The retry's first packets, ..060 and
    ..061, are held 3 us: the tap sees the run from ..062 (176) and new data, then
    ..060 and ..061 in order (190, 191), 2.8 us after the run began. The run had resent
    them once the RNR timer ran out, so no ACK timer (8 us at least) can have fired
    since: they are the run's resends, late, 190 the RNR retry (before: a timeout's
    restart, two late copies in a row looking like a run)."""
    draws = {**SENDS_LOST_BEFORE, "encap": "roce1", "connections": 3,
             "credits": "unlimited", "pmtu": 256, "tx_depth": 8, "rnr_timer": 12,
             "cm": False, "reorder": 0.03, "duplicate": 0.0}     # wider draw 347 of master 343
    truth, res = exact(tmp_path, 31276, name="rc_clean", **draws)
    assert reordered(truth, 190) and reordered(truth, 191)
    assert start_of(res, 176) == ("rnr", 172)
    assert {"retransmission", "rnr_retry"} <= flags_of(res, 190)
    assert "go_back_n" not in flags_of(res, 190)
    assert start_of(res, 190) == ("rnr", 172) and start_of(res, 191) == ("rnr", 172)
    assert episode_diff(truth, res) == []
