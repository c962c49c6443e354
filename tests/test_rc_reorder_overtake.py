"""Captures where the network reordered a resend run's own packets, or delayed
originals into one (issue #13): a run's resend delayed past a later run, a restart's
first packet delayed past its second, four late originals looking like a run, two
copies of one PSN back to back, a run resuming too soon after a NAK to be its
restart, a duplicate between a late copy and the run resuming, new data amid a run, a
hole's first copy after the restart's second packet, and a later copy of that PSN.
Each capture now
equals the tap's-eye truth; the frames below are checked one by one."""

from __future__ import annotations

import numpy as np
from rc_helpers import exact, flags_of, reordered, start_of

from ibwire.analysis.rc import analyze

# Two draws of `tools`' wider sweep: one connection, reordering and loss on both sides.
SEND_GRH = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
            "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0, "corrupt": 0.02,
            "encap": "ib-grh", "connections": 1, "ack_every": 4, "credits": "unlimited",
            "pmtu": 1024, "tx_depth": 16, "rnr_timer": 6, "cm": True, "reorder": 0.01,
            "duplicate": 0.01, "messages": 20}
MIXED_IB = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (1, 2, 8), "loss": 0.05,
            "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0, "encap": "ib",
            "connections": 1, "ack_every": 4, "credits": "unlimited", "pmtu": 1024,
            "tx_depth": 2, "rnr_timer": 12, "cm": False, "reorder": 0.02, "duplicate": 0,
            "messages": 20}


# Two connections of SEND and WRITE over RoCE v2, all loss before the tap.
SEND_ROCE2 = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
              "loss": 0.05, "loss_before_tap": 1.0, "rnr": 0, "corrupt": 0, "encap": "roce2",
              "connections": 2, "ack_every": 2, "credits": "count", "pmtu": 1024,
              "tx_depth": 2, "rnr_timer": 12, "cm": True, "reorder": 0.03, "duplicate": 0.01,
              "messages": 20}


# Two connections of SEND and WRITE over native IB with a GRH: no loss, RNR NAKs,
# corruption, reordering.
SEND_GRH_NO_LOSS = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1},
                    "sizes": (4096, 9000, 20000), "loss": 0, "loss_before_tap": 1.0,
                    "rnr": 0.04, "corrupt": 0.02, "encap": "ib-grh", "connections": 2,
                    "ack_every": 4, "credits": "unlimited", "pmtu": 4096, "tx_depth": 16,
                    "rnr_timer": 6, "cm": False, "reorder": 0.01, "duplicate": 0,
                    "messages": 20}


# Two connections of SEND, WRITE and READ over RoCE v1, reordering and RNR NAKs.
READS_ROCE1 = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
               "loss": 0, "loss_before_tap": 0, "rnr": 0.04, "corrupt": 0, "encap": "roce1",
               "connections": 2, "ack_every": 2, "credits": "count", "pmtu": 1024,
               "tx_depth": 16, "rnr_timer": 12, "cm": False, "reorder": 0.03, "duplicate": 0,
               "messages": 20}

# Two connections of SEND and WRITE over native IB, reordering and duplication.
SEND_IB = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
           "loss": 0, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02, "encap": "ib",
           "connections": 2, "ack_every": 1, "credits": "unlimited", "pmtu": 256,
           "tx_depth": 2, "rnr_timer": 12, "cm": False, "reorder": 0.03, "duplicate": 0.01,
           "messages": 20}

# One connection of SEND, WRITE and READ over RoCE v2, all loss before the tap.
LARGE_ROCE2 = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
               "loss": 0.02, "loss_before_tap": 1, "rnr": 0, "corrupt": 0, "encap": "roce2",
               "connections": 1, "ack_every": 4, "credits": "count", "pmtu": 1024,
               "tx_depth": 8, "rnr_timer": 1, "cm": True, "reorder": 0.02, "duplicate": 0.01,
               "messages": 20}


def test_a_skipped_resend_delayed_into_the_next_run_is_that_runs(tmp_path):
    """The timeout run went from ..253 to ..256 (720): it skipped ..255. NAK 736's
    run is at ..243 (756) when ..255 arrives (757), delayed 67 ms after the PSN's
    previous copy the tap saw, but 3 us after the timeout run passed it; the NAK run
    goes on at ..244 (758). 757 is the timeout run's resend, late; the NAK run never
    jumped, and NAK 755 (..234) starts the next run at 760 (before: 757 a jump, 758
    a restart for NAK 755, 760 a timeout)."""
    truth, res = exact(tmp_path, 56188, name="rc_clean", **SEND_GRH)
    assert reordered(truth, 757)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 757)
    assert "psn_gap" not in flags_of(res, 757)
    assert res.episode[756] == res.episode[719] != res.episode[757]
    assert "go_back_n" not in flags_of(res, 758) and res.episode[757] == res.episode[755]
    assert start_of(res, 760) == ("nak_seq", 755)


def test_a_restart_whose_first_packet_came_after_its_second(tmp_path):
    """ACK 11 covers ..778 while READ ..777's response was lost after the tap (9): an
    implied NAK. The restart resends ..777 and ..778; the tap sees ..778 first (12)
    and the READ 3 us later (14, delayed). 12 is that restart's resend, not the
    network's copy (before: `network_duplicate`, a resend missed)."""
    truth, res = exact(tmp_path, 59990, name="rc_clean", **MIXED_IB)
    assert reordered(truth, 14)
    assert start_of(res, 14) == ("implied_nak", 11)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 12)
    assert "network_duplicate" not in flags_of(res, 12)
    assert res.episode[11] == res.episode[13]
    twin = analyze(res.cols, use_numba=False)      # the pass's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)


def test_late_originals_that_look_like_a_run_stay_in_doubt_past_a_jump(tmp_path):
    """Four originals the network delayed 3 us (214 ..620, 215 ..621, 216 ..623, 219
    ..629) come with no cause seen, too soon for a timer: a run with its start in
    doubt, or late copies. After the jump at 216, 219 (a first copy past the run's
    next PSN) is in doubt as well (before: taken for the run's resend)."""
    truth, res = exact(tmp_path, 10050)
    assert all(reordered(truth, f) for f in (214, 215, 216, 219))
    for f in (214, 215, 216, 219):
        assert "ambiguous" in flags_of(res, f), f
    assert start_of(res, 221) == ("nak_seq", 220)


def test_a_late_copy_may_be_the_original_the_tap_never_saw(tmp_path):
    """The tap never saw ..492's original: 100 (..493) showed its hole, and the first
    copy there, 117, is NAK 97's resend. NAK 124's run skipped ..492 (131: ..491 to
    ..494). 141, a copy of ..492 2.9 us after the hole showed, is that run's resend,
    late, or the original, delayed (the truth): flagged (before: the run's resend)."""
    truth, res = exact(tmp_path, 11005)
    assert reordered(truth, 141)
    assert "psn_gap" in flags_of(res, 100) and "psn_gap" in flags_of(res, 131)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 141)
    assert start_of(res, 148) == ("nak_seq", 143)


def test_two_copies_of_a_psn_back_to_back_in_a_run(tmp_path):
    """Implied NAK 230's run resends ..487 (235) and a copy of ..487 follows at once
    (238), then the run goes on (245: ..488). ..487's first copy at the tap was a
    resend, so its original was still unaccounted for: 235 may be it, delayed, and
    238 the run's (the truth), or 238 the network's copy: both flagged. The same at
    ..495 (257, 259). (Before: 235 and 257 the run's, 238 and 259 copies.)"""
    truth, res = exact(tmp_path, 11129)
    for first, second in ((235, 238), (257, 259)):
        assert reordered(truth, first)
        assert "ambiguous" in flags_of(res, first) and "ambiguous" in flags_of(res, second)
    assert start_of(res, 245) == ("implied_nak", 230)
    assert "ambiguous" not in flags_of(res, 245)


def test_a_nak_names_no_restart_sooner_than_the_requester_can_react(tmp_path):
    """NAK 666's run resends ..238 to ..240 (674, 678, 680); ..268's original, delayed,
    arrives amid it (681, past the run's next PSN). The run goes on at ..241 (683),
    13 ns after NAK 682 named ..241; on this connection the requester had never
    restarted sooner than 608 ns after a NAK (296). 683 was sent before the requester
    had NAK 682: the run's, which shows 681 a late original (before: 681 the run's
    jump, 683 NAK 682's restart)."""
    truth, res = exact(tmp_path, 18445, name="rc_clean", **READS_ROCE1)
    assert reordered(truth, 681)
    assert "out_of_sequence" in flags_of(res, 681)
    assert "retransmission" not in flags_of(res, 681)
    assert start_of(res, 296) == ("nak_seq", 293)
    assert "go_back_n" not in flags_of(res, 683)
    assert res.episode[682] == res.episode[679] == res.episode[673]


def test_a_duplicate_between_a_late_copy_and_the_run_resuming(tmp_path):
    """NAK 3505's run resends ..36 to ..45 (3507-3516); ..84's original, delayed, comes
    amid it (3517), then the network's copy of ..45 (3518, 10 ns later), then the run
    goes on at ..46 (3519). The copy of the run's latest packet right behind the packet
    past leaves the decision to the request after it: 3517 a late original, 3518 the
    network's duplicate (before: 3517 the run's jump, 3518 a timeout restart)."""
    truth, res = exact(tmp_path, 47287, name="rc_clean", **SEND_IB)
    assert reordered(truth, 3517)
    assert 3518 in {e["frame"] for e in truth["events"] if e["kind"] == "duplicate"}
    assert "out_of_sequence" in flags_of(res, 3517)
    assert "retransmission" not in flags_of(res, 3517)
    assert "network_duplicate" in flags_of(res, 3518)
    assert "go_back_n" not in flags_of(res, 3518)
    assert res.episode[3518] == res.episode[3515] == res.episode[3506]


def test_new_data_amid_a_run_then_the_run_resuming(tmp_path):
    """Implied NAK 340's run resends ..843 to ..852 (342-356); ..857, the PSN after the
    front, comes next (357), then the run goes on at ..853 (359) up to ..856 (365) and
    ..857 (367). The requester sends no new data before its run is through: 357 was
    ..857's original, delayed past the run's start, and 367 the run's resend (before:
    357 new data that ended the run, 367 the network's copy of it)."""
    truth, res = exact(tmp_path, 63688, name="rc_clean", **LARGE_ROCE2)
    assert reordered(truth, 357)
    assert "out_of_sequence" in flags_of(res, 357)
    assert "retransmission" not in flags_of(res, 357)
    assert "retransmission" in flags_of(res, 367)
    assert res.episode[366] == res.episode[358] == res.episode[341]


def test_a_holes_first_copy_after_the_restarts_second_packet_is_in_doubt(tmp_path):
    """The tap never saw ..010's original: ..011 (240) showed the hole and NAK 242
    names it. Then come a copy of ..011 (246), the first copy of ..010 (248) and ..012
    (249). Either the restart's first packet came after its second (the original lost
    before the tap), or 248 is the original, delayed past the NAK it drew, and the
    restart's first packet was lost before the tap (the truth): one loss and one delay
    either way. 248 is flagged as well as 246 (before: 248 the restart, unflagged)."""
    truth, res = exact(tmp_path, 9927, name="rc_clean", **SEND_ROCE2)
    assert reordered(truth, 248)
    assert "psn_gap" in flags_of(res, 240)
    assert {"retransmission", "go_back_n", "ambiguous"} <= flags_of(res, 248)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 246)
    assert start_of(res, 246) == start_of(res, 248) == ("nak_seq", 242)
    twin = analyze(res.cols, use_numba=False)      # the pass's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)


def test_a_later_copy_of_a_doubted_starts_psn_is_in_doubt_too(tmp_path):
    """NAK 16 names ..791, whose original the tap never saw (14, ..792, showed the
    hole). Then come a copy of ..792 (20), the first copy of ..791 (22) and ..793 (23):
    22 is the restart's start, in doubt (it was the original). NAK 25's restart
    begins at ..792 (28). 30, a copy of ..791 2 us after 22, is that first restart's
    packet, delayed (the truth), if 22 was the original; or the network's copy of 22.
    Flagged (before: the network's copy, sure)."""
    truth, res = exact(tmp_path, 2864, name="rc_clean", **SEND_GRH_NO_LOSS)
    assert reordered(truth, 22) and reordered(truth, 30)
    assert 30 in {e["frame"] for e in truth["retransmissions"]}
    assert {"retransmission", "go_back_n", "ambiguous"} <= flags_of(res, 22)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 30)
    assert start_of(res, 28) == ("nak_seq", 25)
    twin = analyze(res.cols, use_numba=False)      # the pass's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
