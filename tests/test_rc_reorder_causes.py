"""RC engine on reordering networks: which pending cause a copy can answer when the
network delays or duplicates requests (issue #13). Each case is a fresh draw of the
wide sweep (seed 221), pinned."""

from __future__ import annotations

from rc_helpers import check_exact, draw, flags_of, start_of

SMALL = dict(ops={"write_imm": 1, "send_imm": 1, "send": 1}, sizes=(1, 2, 8), messages=20)


def test_a_nak_before_an_rnr_nak_for_its_psn_is_restarted_at_once(tmp_path):
    """..538 (62) overtakes ..537 (63, delayed): NAK 67 names ..537, then the late
    original draws RNR NAK 68 (no receive WQE). The requester had the NAK first and
    restarts at once (69, ..537, 42 ns after the RNR NAK passed the tap, then 70): the
    NAK's restart, not a copy held back for the RNR NAK's timer."""
    truth, res, diff = draw(tmp_path, 57976, 63, "reorder", loss=0.02, loss_before_tap=0.0,
                            rnr=0.04, corrupt=0.0, encap="roce2", connections=3,
                            ack_every=2, credits="unlimited", pmtu=256, tx_depth=2,
                            rnr_timer=6, cm=False, reorder=0.01, duplicate=0.0, **SMALL)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 69)
    assert "retransmission" in flags_of(res, 70)
    assert start_of(res, 70) == ("nak_seq", 67)
    assert "rnr" in flags_of(res, 68)
    assert check_exact(truth, res, diff) == []
