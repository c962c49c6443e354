"""RC engine on networks that hold copies long (issue #13): 30 us, longer than the
shortest ACK timeout (8.192 us), so a copy arriving that late may still be an
original. Nothing in the protocol bounds how long a network holds a packet; the
engine used to assume it held none longer than that timeout, and took such
originals for resends. Draws of an extended space (parameters the wide sweeps do not
vary), each pinned with the frames it is about."""

from __future__ import annotations

from rc_helpers import (
    check_exact,
    compare,
    episode_diff,
    flags_of,
    generate,
    reordered,
    start_of,
)

LONG = {"reorder_delay_ns": 30000, "fmt": "pcap", "messages": 40, "pfc": False,
        "bidirectional": False}


def test_originals_held_30_us_past_resends_the_tap_took_for_new_data(tmp_path):
    """..452's original is delayed 30 us (366); a NAK's run resent ..450-..451 and went
    on to ..452 (64), the first copy the tap saw, so taken for new data. 366 may be a
    resend, delayed, or that original: flagged (before: a resend). Likewise ..483
    (438), whose first copy was a resend. Left: ..7's original (742) comes alone amid
    an RNR wait 29 us after its first copy (428, right after a run's resend): to the
    tap a timeout restart (flagging every such restart whose PSN the tap may not have
    seen sent new cost 11-22% more frames flagged on the wide sweeps, for none
    exact more)."""
    path, truth = generate(tmp_path, "rc_clean", 12959, **LONG | {
        "ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
        "loss": 0.0, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.02,
        "encap": "roce2", "connections": 3, "ack_every": 4, "credits": "unlimited",
        "pmtu": 256, "tx_depth": 8, "rnr_timer": 12, "cm": True, "reorder": 0.01,
        "duplicate": 0.0, "psn_start": 0xFFFF80, "capture_loss": 0.01, "rate_gbps": None,
        "loss_dir": "both", "ack_delay_ns": 2000, "resp_delay_ns": 400, "max_rd_atomic": 4,
        "timeout": 14, "ackreq_every": 64, "prop_ns": 20, "udp_sport": "qp", "rq_depth": 4,
        "max_unacked": 128})     # extended draw 26 of master 1
    res, diff = compare(path, truth)
    for f in (366, 438):
        assert reordered(truth, f)
        assert {"retransmission", "out_of_sequence", "ambiguous"} <= flags_of(res, f)
    assert reordered(truth, 742) and "go_back_n" in flags_of(res, 742)
    assert check_exact(truth, res, diff) == ["retransmission: extra 742"]


def test_originals_held_30_us_inside_a_runs_skip(tmp_path):
    """..21's original is delayed 30 us (288), its hole filled by a NAK's resend (33):
    flagged (before: a resend). ..331's (1181) lands in the PSNs a later run skipped,
    its first copy a resend 30 us before: that run's resend, late, or the original
    (before: only within 8.192 us of the hole). Two originals held 30 us arrive back
    to back (4292-4293, ..709-..710), in order, 30 us after the resends that filled
    their holes, then two more past them (4299, 4303): to the tap a timeout's run
    that lost PSNs before it (the tap cannot know the requester's ACK timeout, here
    1 ms; it may be as short as 8.192 us). A timer's run that skips, its start and
    the packet past the skip at PSNs the tap saw only resent, is in doubt: 4292,
    4299 and 4303 are flagged (4297, a true resend, as the packet before 4299's
    skip); so is 4293 (inside the run before its first such skip) since a re-read's
    own response sets its READ's progress forward too (`rc_responses.read_response`):
    no timer's run is made of them any more. Left: 1981, ..852's
    original held 30 us, taken for a timer's restart right after a new READ (the
    reading before had it a resend, flagged; it moved with the READ progress)."""
    path, truth = generate(tmp_path, "rc_clean", 93714, **LONG, **{
        "ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
        "loss": 0.02, "loss_before_tap": 1.0, "rnr": 0.0, "corrupt": 0.0, "encap": "ib",
        "connections": 1, "ack_every": 1, "credits": "unlimited", "pmtu": 256,
        "tx_depth": 8, "rnr_timer": 1, "cm": False, "reorder": 0.03, "duplicate": 0.0,
        "psn_start": 0xFFFFF8, "capture_loss": 0.01, "rate_gbps": 200.0, "loss_dir": "b2a",
        "ack_delay_ns": 2000, "resp_delay_ns": 50, "max_rd_atomic": 4, "timeout": 8,
        "ackreq_every": 64, "prop_ns": 200, "udp_sport": "qp", "rq_depth": None,
        "max_unacked": 16})     # extended draw 8 of master 1
    res, diff = compare(path, truth)
    for f in (288, 1181):
        assert reordered(truth, f)
        assert {"retransmission", "ambiguous"} <= flags_of(res, f)
    for f in (4292, 4293, 4297, 4299, 4303):
        assert {"retransmission", "ambiguous"} <= flags_of(res, f)
    assert check_exact(truth, res, diff) == ["retransmission: extra 1981"]


def test_an_rnr_nak_held_30_us_past_an_ack_of_its_psn_is_stale(tmp_path):
    """RNR NAK 303 refuses ..436 (timer 10 us), 5 ns before a sequence NAK for it. An
    older RNR NAK for ..428, held 30 us, arrives during the wait (318), after ACK 300
    acknowledged up to ..435: the responder's expected PSN never goes back, so it is
    stale and the requester drops it. It is counted as an RNR NAK, but no cause: the
    retry at ..436 10 us after 303 (333) is 303's (before: 318 replaced 303 as the
    pending RNR cause, and 333 was taken for the sequence NAK's restart). ..445's
    original held 30 us (498), 20 us after the RNR retry the tap took for new data
    (491), is to the tap a timeout restart, as in the first test here; new data right
    after it, past PSNs whose originals the tap saw, leaves it in doubt (it used to
    stand as a resend)."""
    path, truth = generate(tmp_path, "rc_clean", 48029, **LONG | {
        "ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8), "loss": 0.02,
        "loss_before_tap": 0.0, "rnr": 0.04, "corrupt": 0.02, "encap": "roce2",
        "connections": 3, "ack_every": 1, "credits": "count", "pmtu": 256, "tx_depth": 2,
        "rnr_timer": 1, "cm": False, "reorder": 0.03, "duplicate": 0.0,
        "psn_start": 0xFFFF80, "capture_loss": 0.0, "rate_gbps": 100.0, "loss_dir": "both",
        "ack_delay_ns": 300, "resp_delay_ns": 50, "max_rd_atomic": 4, "timeout": 18,
        "ackreq_every": 64, "prop_ns": 20, "udp_sport": "qp", "rq_depth": 4,
        "max_unacked": 16, "bidirectional": True, "fmt": "pcapng"})  # extended draw 77
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []
    assert {"retransmission", "ambiguous"} <= flags_of(res, 498)
    assert reordered(truth, 318)
    assert "rnr" in flags_of(res, 318)
    assert {"retransmission", "go_back_n", "rnr_retry"} <= flags_of(res, 333)
    assert start_of(res, 333) == ("rnr", 303)
    assert [d for d in episode_diff(truth, res) if int(d.split()[1][:-1]) < 600] == []



def test_a_lone_restart_at_the_captures_end_is_in_doubt(tmp_path):
    """..529's original is held 30 us (41): the tap had only seen a NAK's resend of it
    (17), and ACKs up to ..11 since. Nothing follows it but the responder's duplicate
    ACK 0.6 us later, then the capture ends. A timeout's run would resend every PSN up
    to ..11, back to back; whether it went on the tap cannot tell, so 41 may as well be
    the original: flagged. Before, a run short of the front was doubted at the
    capture's end only 8.192 us after its latest packet, so 41 stood as a timeout
    restart."""
    path, truth = generate(tmp_path, "rc_clean", 33484, **LONG | {
        "ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8),
        "loss": 0.02, "loss_before_tap": 0.0, "rnr": 0.0, "corrupt": 0.0, "encap": "ib",
        "connections": 1, "ack_every": 4, "credits": "count", "pmtu": 256, "tx_depth": 16,
        "rnr_timer": 6, "cm": False, "reorder": 0.01, "duplicate": 0.01,
        "psn_start": 0xFFFFF8, "capture_loss": 0.0, "rate_gbps": 200.0, "loss_dir": "a2b",
        "ack_delay_ns": 300, "resp_delay_ns": 400, "max_rd_atomic": 1, "timeout": 8,
        "ackreq_every": 4, "prop_ns": 200, "udp_sport": "qp", "rq_depth": None,
        "max_unacked": 128, "fmt": "pcapng", "messages": 20})  # extended draw 165 of master 1
    res, diff = compare(path, truth)
    assert len(res.flags) == 42 and reordered(truth, 41)
    assert {"retransmission", "go_back_n", "ambiguous"} <= flags_of(res, 41)
    assert "retransmission" in flags_of(res, 17) and "ambiguous" not in flags_of(res, 17)
    assert check_exact(truth, res, diff) == []
    assert episode_diff(truth, res) == []


def test_a_timers_run_that_skips_past_resent_psns_is_in_doubt(tmp_path):
    """Both sides request. Originals of ..12, ..16, ..23 and ..60 are held 30 us
    (1029-1032), the tap having seen the first three PSNs first in a NAK's run (728,
    732, ...). To the tap: a timeout restart at ..12 whose run lost PSNs before the tap,
    or those originals, held, at the requester's pace. Flagged (before: a timeout run,
    four resends the truth does not have). ..60, a hole the tap had shown, 37 PSNs past
    ..23 whose originals it saw, is an original held (`rc_run_shape._costly_skip`)."""
    path, truth = generate(tmp_path, "rc_clean", 88104, **LONG | {
        "ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
        "loss": 0.0, "loss_before_tap": 0.0, "rnr": 0.04, "corrupt": 0.02, "encap": "roce1",
        "connections": 2, "ack_every": 4, "credits": "count", "pmtu": 256, "tx_depth": 8,
        "rnr_timer": 6, "cm": False, "reorder": 0.01, "duplicate": 0.0,
        "bidirectional": True, "psn_start": 0xFFFF80, "capture_loss": 0.0,
        "rate_gbps": 100.0, "loss_dir": "a2b", "ack_delay_ns": 20000, "resp_delay_ns": 50,
        "max_rd_atomic": 4, "timeout": 8, "ackreq_every": 64, "prop_ns": 200,
        "udp_sport": "flow", "rq_depth": None, "max_unacked": 16, "fmt": "pcapng",
        "messages": 20})  # extended draw 23 of master 2
    res, diff = compare(path, truth)
    assert all(reordered(truth, f) for f in (1029, 1030, 1031, 1032))
    assert start_of(res, 1029) == ("timeout", None)
    for f in (1029, 1030, 1031):
        assert {"retransmission", "ambiguous"} <= flags_of(res, f)
    assert "out_of_sequence" in flags_of(res, 1032) and res.episode[1032 - 1] == -1
    assert not {"retransmission", "psn_gap"} & flags_of(res, 1032)
    assert "ambiguous" not in flags_of(res, 1028) and "ambiguous" not in flags_of(res, 1033)
    assert check_exact(truth, res, diff) == []
