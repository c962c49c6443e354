"""A late original that comes amid a resend run, past the run's next PSN (issue #13).

A run goes out in PSN order, one packet after the other: to jump from its latest
PSN to one far past it, the requester must have sent every packet between (lost
before the tap, if the tap saw none), and that takes time. A copy past the run that
comes sooner after the run's previous packet than the requester's fastest pace
allows for those packets is no part of the run, whatever request follows: a late
copy (here the original, which the tap had never seen). Before, only a next request
resuming the run showed it; a restart for another cause after it left it a jump."""

from __future__ import annotations

from rc_helpers import exact, flags_of, reordered, start_of

# Draws of `tools`' wider sweep (seed 347): large messages in 256-byte packets.
MIXED_ROCE2 = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
               "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0,
               "encap": "roce2", "connections": 2, "ack_every": 1, "credits": "unlimited",
               "pmtu": 256, "tx_depth": 8, "rnr_timer": 1, "cm": True, "reorder": 0.03,
               "duplicate": 0, "messages": 20}
MIXED_GRH = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
             "loss": 0.02, "loss_before_tap": 1, "rnr": 0.04, "corrupt": 0.02,
             "encap": "ib-grh", "connections": 2, "ack_every": 4, "credits": "count",
             "pmtu": 256, "tx_depth": 2, "rnr_timer": 1, "cm": True, "reorder": 0.03,
             "duplicate": 0.01, "messages": 20}


def test_a_late_original_amid_a_run_then_a_restart_for_a_later_nak(tmp_path):
    """The original of ..568 never passed the tap in turn (..569 came with a gap,
    5861). NAK 5875's run resends ..516 to ..528 (5879-5893), 100 ns apart; ..568
    comes 72 ns after ..528 (5894): 39 packets could not have gone between. The next
    request is NAK 5890's restart at ..521 (5895), not the run going on: ..568 is the
    original, late (before: the run's jump, a resend)."""
    truth, res = exact(tmp_path, 88996, name="rc_clean", **MIXED_ROCE2)
    assert reordered(truth, 5894)
    assert "retransmission" in flags_of(res, 5893)
    assert "retransmission" not in flags_of(res, 5894)
    assert "out_of_sequence" in flags_of(res, 5894) and res.episode[5893] == -1
    assert start_of(res, 5895) == ("nak_seq", 5890)
    assert "go_back_n" in flags_of(res, 5895)


def test_a_late_original_amid_a_run_that_goes_on_past_a_lost_resend(tmp_path):
    """NAK 5142's run is at ..725 (5181) when ..742, whose original the tap never saw
    (5184), comes 13 ns later: 16 packets could not have gone between. The run goes
    on at ..727 (5191; its resend of ..726 lost before the tap), so the next request
    did not resume it at its next PSN either: ..742 is the original, late, and the
    run's own gap stays counted lost."""
    truth, res = exact(tmp_path, 54779, name="rc_clean", **MIXED_GRH)
    assert reordered(truth, 5184)
    assert "retransmission" not in flags_of(res, 5184) and res.episode[5183] == -1
    assert "out_of_sequence" in flags_of(res, 5184)
    assert {"retransmission", "psn_gap"} <= flags_of(res, 5191)
    assert start_of(res, 5191) == ("nak_seq", 5142)
