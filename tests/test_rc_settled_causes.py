"""RC engine (issue #13): a sequence NAK's restart taken with doubt, then shown one by
its run, settles a cause for an earlier PSN seen before the NAK when it came too soon
after the NAK for the requester to have gone back there first. Pinned with the frames
it is about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, flags_of, generate, start_of


def test_a_restart_shown_by_its_run_settles_an_implied_nak_below_it(tmp_path):
    """The capture misses the atomic acknowledgement of ..467; the next one (54)
    shows a hole there: an implied NAK. The requester had that acknowledgement and
    went on; a corrupted READ (62) draws a NAK for ..471 (68) and the restart there
    (71, 73). A restart past the implied NAK's PSN, quick after the READ's first copy,
    is first taken with doubt (the implied NAK's restart with its first packets
    missing, or a copy); its run going on in order (73) shows it one. It came 59 ns
    after the NAK, too soon to resend ..467 to ..470 first: a requester that went back
    only to ..471 had nothing older left to resend. Before, the implied NAK
    stayed pending: 57 frames later the network's duplicate of a SEND (128, right
    behind 126) stood as a restart for it, a go-back-N episode that never was. Now no
    cause is pending there, and the READ just before it has its one response (127)
    with nothing past it acknowledged: a hole there would show the requester only
    through a later response, which the tap would see. The copy is the network's,
    in no doubt (`tests/test_rc_read_holes.py`)."""
    path, truth = generate(tmp_path, "rc_clean", 55822, **{
        "ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}, "sizes": (1, 2, 8),
        "loss": 0.02, "loss_before_tap": 0.3, "rnr": 0.0, "corrupt": 0.02, "encap": "ib",
        "connections": 1, "ack_every": 1, "credits": "unlimited", "pmtu": 256,
        "tx_depth": 2, "rnr_timer": 12, "cm": False, "reorder": 0.03, "duplicate": 0.01,
        "bidirectional": True, "psn_start": None, "capture_loss": 0.01,
        "reorder_delay_ns": 300, "rate_gbps": 10.0, "loss_dir": "a2b", "ack_delay_ns": 300,
        "resp_delay_ns": 400, "max_rd_atomic": 16, "timeout": 8, "ackreq_every": 4,
        "prop_ns": 20, "udp_sport": "flow", "rq_depth": None, "max_unacked": 16,
        "fmt": "pcap", "messages": 40, "pfc": False,
    })  # extended draw 58 of master 2
    res, diff = compare(path, truth)
    assert "implied_nak" in flags_of(res, 54)
    assert start_of(res, 71) == ("nak_seq", 68) and "ambiguous" not in flags_of(res, 71)
    assert start_of(res, 95) == ("nak_seq", 93)
    assert flags_of(res, 128) == {"duplicate", "network_duplicate"}
    assert check_exact(truth, res, diff) == []
