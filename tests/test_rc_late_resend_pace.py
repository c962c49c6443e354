"""A late resend followed, sooner than the requester could have sent the PSNs
between, by a later PSN: no run from the late resend (`rc_run_shape._too_soon`, decided in
`rc_pending.late_resend_decided`; issue #13). Packets lost before the tap still took
the requester's port, one after the other."""

from __future__ import annotations

from rc_helpers import exact, flags_of, reordered, start_of

WIDE = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
        "loss": 0.05, "loss_before_tap": 1.0, "corrupt": 0.02, "connections": 2,
        "pmtu": 256, "reorder": 0.03, "duplicate": 0.01, "messages": 20}


def _duplicated(truth, frame):
    return {e.get("original_frame") for e in truth["events"]
            if e["kind"] == "duplicate" and e["frame"] == frame}


def test_a_copy_of_the_latest_request_right_after_a_late_resend_is_no_jump(tmp_path):
    """Wider draw 50 of seed 361: 809 resends ..942, held 2 us by the network (a NAK's
    resend); 810 repeats 808 (..971) 49 ns later, and 811 (..972) follows in the same
    nanosecond. Taken for a timeout restart at 809 that jumped to ..971 (its 28 resends
    between lost before the tap), 810 was a resend. The requester needs 104 ns a packet
    here: 28 lost packets cannot fit in 49 ns. 810 is the network's copy, 809 stays a
    late resend of an earlier run."""
    truth, res = exact(tmp_path, 55492, name="rc_clean", **dict(
        WIDE, rnr=0.04, encap="roce1", ack_every=4, credits="unlimited", tx_depth=16,
        rnr_timer=6, cm=True))
    assert reordered(truth, 809) and _duplicated(truth, 810) == {808}
    ts = res.cols["frame.time_ns"]
    assert ts[810 - 1] - ts[809 - 1] == 49 and ts[811 - 1] == ts[810 - 1]
    assert flags_of(res, 810) == {"responder_out_of_sequence", "network_duplicate"}
    assert "go_back_n" not in flags_of(res, 809)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 809)


def test_a_late_resend_of_an_older_run_amid_the_current_one(tmp_path):
    """Wider draw 2 of seed 361: the run for NAK 2715 is at ..826 (2778) when 2779
    brings ..806, its own resend held back; 2780, 32 ns later, repeats 2778, and 2781
    (..827) goes on with the run in the same nanosecond. No new timeout run from 2779
    jumping to ..826: the run for NAK 2715 goes on at 2781."""
    truth, res = exact(tmp_path, 16796, name="rc_clean", **dict(
        WIDE, rnr=0.0, encap="roce2", ack_every=2, credits="count", tx_depth=8,
        rnr_timer=6, cm=False, reorder=0.01))
    assert reordered(truth, 2779) and _duplicated(truth, 2780) == {2778}
    assert "go_back_n" not in flags_of(res, 2779)
    assert "ambiguous" in flags_of(res, 2780)
    assert res.episode[2781 - 1] == res.episode[2778 - 1]
    assert start_of(res, 2781) == ("nak_seq", 2715)
