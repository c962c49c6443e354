"""RC engine (issue #13): what a timer's restart shows, and a READ restart decided
before its late fill came. A local ACK timeout sends the requester back to its
oldest unacknowledged PSN, a READ's missing response included, so every READ before
that PSN had its responses, whatever the tap saw (unless the tap saw one arrive
damaged or lost after it). Pinned with the frames they are about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, flags_of, generate, reordered, start_of


def test_a_timer_restart_shows_every_read_before_it_answered(tmp_path):
    """The timer's run restarts at PSN 815 (8757). A READ's response at PSN 682
    never passed the tap (the capture missed it), and ACK 815 (8804, lost after the
    tap) passed it: a stale hole. The requester had those responses, or
    it would have gone back to 682, not 815. NAK 8816 names 825, a PSN the timer's
    run had passed: its implicit ACK ends that retry, and the requester goes back
    to 825 (8836); the run's copy of 827 there (8838) has a bad ICRC, so NAK 8890
    names 827 and the requester goes back once more (8910). Before, the stale hole
    held the oldest unacknowledged PSN at 682, so both NAKs were taken as covered
    by the retry under way, their restarts as late copies, and the runs as an
    implied NAK's: 912 resends with the wrong cause, 3 frames wrong."""
    path, truth = generate(tmp_path, "rc_clean", 81244, **{
        "ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
        "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02,
        "encap": "ib-grh", "connections": 3, "ack_every": 4, "credits": "unlimited",
        "pmtu": 256, "tx_depth": 8, "rnr_timer": 1, "cm": False, "reorder": 0.01,
        "duplicate": 0.01, "bidirectional": False, "psn_start": 0xFFFFF8,
        "capture_loss": 0.01, "reorder_delay_ns": 30000, "rate_gbps": 200.0,
        "loss_dir": "b2a", "ack_delay_ns": 2000, "resp_delay_ns": 400, "max_rd_atomic": 1,
        "timeout": 18, "ackreq_every": 64, "prop_ns": 200, "udp_sport": "qp",
        "rq_depth": 4, "max_unacked": 128, "fmt": "pcap", "messages": 20, "pfc": False,
    })  # extended draw 118 of master 1
    res, diff = compare(path, truth)
    assert "go_back_n" in flags_of(res, 8757) and start_of(res, 8757) == ("timeout", None)
    assert "nak" in flags_of(res, 8816) and "nak" in flags_of(res, 8890)
    assert "bad_icrc" in flags_of(res, 8838)
    for frame, nak in ((8836, 8816), (8910, 8890)):
        assert "go_back_n" in flags_of(res, frame) and "ambiguous" not in flags_of(res, frame)
        assert start_of(res, frame) == ("nak_seq", nak)
    assert start_of(res, 8909) == ("nak_seq", 8816) and start_of(res, 8912) == ("nak_seq", 8890)
    # (8492, a network copy held past its resend, is flagged now: the READ progress
    # a re-read shows, `tests/test_rc_reread_progress.py`.)
    assert check_exact(truth, res, diff) == []



def test_no_timer_restart_clears_a_read_whose_response_was_lost_after_the_tap(tmp_path):
    """The READ re-request at PSN ..933 that began a timer's run (6489) stands as a
    late copy, ambiguous, and the packet after it (6490, ..959) as the timer's
    restart. That READ still lacks its response at ..933, which the tap saw arrive
    damaged (6345, bad ICRC): the requester surely has not got it, so 6490 was not
    at its oldest unacknowledged PSN and clears no READ. The READ's later hole at
    ..945, shown at 6503, is the cause of the re-read there (6506); with the READ
    cleared, that re-read stood as a timeout's."""
    path, truth = generate(tmp_path, "rc_clean", 87994, **{
        "ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
        "sizes": (4096, 9000, 20000), "loss": 0.05, "loss_before_tap": 1.0, "rnr": 0.0,
        "corrupt": 0.02, "encap": "roce2", "connections": 3, "ack_every": 4,
        "credits": "unlimited", "pmtu": 256, "tx_depth": 2, "rnr_timer": 6, "cm": True,
        "reorder": 0.01, "duplicate": 0.0, "messages": 20,
    })  # wider draw 8 of seed 353
    res, diff = compare(path, truth)
    assert "ambiguous" in flags_of(res, 6489) and "bad_icrc" in flags_of(res, 6345)
    assert "go_back_n" in flags_of(res, 6490) and start_of(res, 6490) == ("timeout", None)
    assert "go_back_n" in flags_of(res, 6506) and start_of(res, 6506) == ("implied_nak", 6503)
    assert check_exact(truth, res, diff) == []

def test_a_late_fill_after_the_restart_was_decided_is_not_lost_and_shows_the_next_hole(
        tmp_path):
    """READ responses for PSNs 148 (401), 147 (402, held back by the network), 149
    (403). The requester re-reads 147 on 401's showing of its hole (404, 233 ns after,
    as it reacts to every implied NAK here); 147's response came 158 ns before that
    restart, once the retry was decided, and filled the hole: the requester, having
    dropped 148 (out of sequence), finds it missing when 149 comes and re-reads 148
    (406, 233 ns after 403). Before, 147's response stood as lost after the tap and
    406 as a timeout's restart. The same three times more in this capture (454, 527, 598)."""
    path, truth = generate(tmp_path, "rc_clean", 38148, **{
        "ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
        "sizes": (4096, 9000, 20000), "loss": 0.02, "loss_before_tap": 0.3, "rnr": 0.04,
        "corrupt": 0.0, "encap": "ib", "connections": 3, "ack_every": 4,
        "credits": "unlimited", "pmtu": 256, "tx_depth": 8, "rnr_timer": 12, "cm": False,
        "reorder": 0.01, "duplicate": 0.0, "bidirectional": False, "psn_start": 0xFFFFF8,
        "capture_loss": 0.0, "reorder_delay_ns": 300, "rate_gbps": 10.0, "loss_dir": "both",
        "ack_delay_ns": 300, "resp_delay_ns": 3000, "max_rd_atomic": 1, "timeout": 8,
        "ackreq_every": 64, "prop_ns": 200, "udp_sport": "qp", "rq_depth": 4,
        "max_unacked": 128, "fmt": "erf", "messages": 40, "pfc": False,
    })  # extended draw 155 of master 2
    res, diff = compare(path, truth)
    assert reordered(truth, 402) and "lost_after_capture" not in flags_of(res, 402)
    assert start_of(res, 404) == ("implied_nak", 401)
    assert "go_back_n" in flags_of(res, 406) and start_of(res, 406) == ("implied_nak", 403)
    for frame, shown in ((454, 452), (527, 524), (598, 595)):
        assert start_of(res, frame) == ("implied_nak", shown)
    assert check_exact(truth, res, diff) == ["retransmission: missing 8970"]
