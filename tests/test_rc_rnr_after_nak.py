"""RC engine (issue #13): a sequence NAK, then an RNR NAK for the same PSN, then the
NAK's restart sooner than the RNR NAK's timer. The requester had the NAK first and
restarted at once; the restart shows no RNR NAK lost after the tap, so its retry is
still owed after the timer. Pinned with the frames it is about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, flags_of, generate, start_of


def test_an_rnr_nak_after_the_nak_whose_restart_it_overtakes_is_still_owed(tmp_path):
    """The responder NAKs ..750 (64) and refuses it with an RNR NAK that the network
    holds 3 us (69, timer 10 us). The requester had the NAK first and restarted at
    once (70, 2 us after the RNR NAK at the tap: on its way before the RNR NAK
    arrived); the RNR NAK then stopped it, and once its timer ran out it resent from
    ..750 again (99). Before, a resend of the refused PSN sooner than the timer
    meant the RNR NAK was lost after the tap: 99 stood as a timeout."""
    path, truth = generate(tmp_path, "rc_clean", 33968, **{
        "ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8),
        "loss": 0.0, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02, "encap": "ib",
        "connections": 2, "ack_every": 4, "credits": "count", "pmtu": 1024, "tx_depth": 8,
        "rnr_timer": 1, "cm": True, "reorder": 0.01, "duplicate": 0.0,
        "bidirectional": True, "psn_start": None, "capture_loss": 0.0,
        "reorder_delay_ns": 3000, "rate_gbps": 200.0, "loss_dir": "both",
        "ack_delay_ns": 20000, "resp_delay_ns": 50, "max_rd_atomic": 4, "timeout": 8,
        "ackreq_every": 64, "prop_ns": 5000, "udp_sport": "flow", "rq_depth": 4,
        "max_unacked": 128, "fmt": "erf", "messages": 20, "pfc": False,
    })  # extended draw 80 of master 2
    res, diff = compare(path, truth)
    assert {"nak"} <= flags_of(res, 64) and {"rnr"} <= flags_of(res, 69)
    assert start_of(res, 70) == ("nak_seq", 64)
    assert start_of(res, 99) == ("rnr", 69)
    assert {"go_back_n", "rnr_retry"} <= flags_of(res, 99)
    assert "ambiguous" not in flags_of(res, 99)
    assert check_exact(truth, res, diff) == []

