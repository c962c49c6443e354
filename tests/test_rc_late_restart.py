"""A copy taken for a NAK's restart that new data followed at once, then the
restart's PSN again, followed in order (issue #13).

Go-back-N resends the PSN after its restart next, so a "restart" followed at once by
new data at the front, with PSNs still to resend, did not start a run: it was a late
copy (here the original, delayed past the NAK). When the restart's PSN comes again
sooner than any timer and the next request goes on in order, that copy is the
requester's restart. Before, the late copy kept the NAK, the new data counted the
run's resends lost before the tap, and the real restart became a timeout episode."""

from __future__ import annotations

from rc_helpers import compare, exact, flags_of, generate, reordered, start_of

# Draws of `tools`' wider sweep (seeds 355, 353).
SENDS_ROCE1 = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1},
               "sizes": (4096, 9000, 20000), "loss": 0.05, "loss_before_tap": 0, "rnr": 0,
               "corrupt": 0.02, "encap": "roce1", "connections": 2, "ack_every": 4,
               "credits": "count", "pmtu": 256, "tx_depth": 2, "rnr_timer": 1, "cm": False,
               "reorder": 0.03, "duplicate": 0, "messages": 20}
MIXED_ROCE2 = {"ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
               "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02,
               "encap": "roce2", "connections": 1, "ack_every": 2, "credits": "count",
               "pmtu": 256, "tx_depth": 8, "rnr_timer": 12, "cm": True, "reorder": 0.01,
               "duplicate": 0, "messages": 20}


def test_the_original_delayed_past_the_nak_then_new_data(tmp_path):
    """NAK 2192 names ..157, whose original (2195) the network held 3 us: it comes
    after the NAK, then new data ..166 (2196), then ..157 again (2197) and ..158: 2197
    is the NAK's restart; 2195 the late original (the tap saw ..157 first as a resend
    filling its hole, 2174), no resend; 2196 skipped nothing."""
    truth, res = exact(tmp_path, 17007, name="rc_clean", **SENDS_ROCE1)
    assert reordered(truth, 2195) and not reordered(truth, 2197)
    assert "retransmission" in flags_of(res, 2174)
    assert start_of(res, 2197) == ("nak_seq", 2192)
    assert "retransmission" in flags_of(res, 2198)
    assert "retransmission" not in flags_of(res, 2195)
    assert "out_of_sequence" in flags_of(res, 2195)
    assert "psn_gap" not in flags_of(res, 2196)
    assert "retransmission" not in flags_of(res, 2196)


def test_a_late_copy_after_the_nak_then_the_stream_goes_on(tmp_path):
    """NAK 559 names ..363; a copy of ..363 held by the network (562) comes after it,
    then new data ..373 (563), then ..363 (564) and ..364: 564 starts the NAK's run."""
    truth, res = exact(tmp_path, 91245, name="rc_clean", **MIXED_ROCE2)
    assert reordered(truth, 562)
    assert start_of(res, 564) == ("nak_seq", 559)
    assert "retransmission" not in flags_of(res, 562)
    assert "go_back_n" not in flags_of(res, 562)
    assert "psn_gap" not in flags_of(res, 563)


SMALL_GRH = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8),
             "loss": 0.05, "loss_before_tap": 0, "rnr": 0, "corrupt": 0.02, "encap": "ib-grh",
             "connections": 2, "ack_every": 1, "credits": "count", "pmtu": 4096, "tx_depth": 2,
             "rnr_timer": 6, "cm": True, "reorder": 0.02, "duplicate": 0.01, "messages": 20}


def test_a_nak_for_the_next_psn_since_keeps_the_restart(tmp_path):
    """NAK 50 names ..569: restart 52, new data ..571 (58), then ..569 again (61,
    the network's late copy) and ..570 (65). NAK 62 for ..570 came between: 65 may be
    its restart, so it proves nothing about 61, and 52 stays the NAK's restart."""
    path, truth = generate(tmp_path, "rc_clean", 4514, **SMALL_GRH)
    res, _ = compare(path, truth)
    assert reordered(truth, 61)
    assert start_of(res, 52) == ("nak_seq", 50)
    assert "retransmission" in flags_of(res, 52)
    for f in (65, 66):
        assert "retransmission" in flags_of(res, f)
