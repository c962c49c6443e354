"""RC engine (issue #13): two readings of a pair of copies the tap cannot tell apart.

Where a held copy and a resend of the same PSN pass the tap one after the other,
either may be the late one: the engine flags both rather than pick. Pinned on draws
of the sweep tool (`tools/rc_sweep.py`) where it picked wrong before
(`docs/rc-analysis.md`, "Go-back-N episodes")."""

from __future__ import annotations

from rc_helpers import check_exact, extended_draw, flags_of, reordered, start_of, ts_ns, wide_draw

LOW = 0xFFF      # the PSNs' last three hex digits, as the docstrings name them


def _psn(res, frame: int) -> int:
    return int(res.cols["infiniband.bth.psn"][frame - 1]) & LOW


def test_a_late_resend_right_behind_a_first_copy_leaves_both_in_doubt(tmp_path):
    """Extended 2:62. NAK 468's run resends up to ..743 (490); ..745 comes 282 ns later
    (493, the tap's first copy of it: a resend with ..744 lost before the tap, or the
    original, held), then ..745 again 168 ns later (494), taken for an earlier run's
    resend, late. Here 493 is the original, held 3 us, and 494 the run's: the pair
    reads either way, so both are flagged. Before: 493 stood as a resend."""
    truth, res, diff = extended_draw(tmp_path, 2, 62)
    assert _psn(res, 493) == _psn(res, 494) == _psn(res, 490) + 2
    assert ts_ns(res, 494) - ts_ns(res, 493) == 168
    assert reordered(truth, 493)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 493)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 494)
    assert check_exact(truth, res, diff) == []


def test_a_copy_of_new_data_right_after_a_resend_may_be_that_runs_resend(tmp_path):
    """Extended 2:123. NAK 144's run resends ..fc3 (145) and ..fc4 (148); ..fc5 follows
    (149, its first copy at the tap, taken for new data right after the run), then new
    data ..fc6-..fc8, then ..fc5 again (153). 149 was the original and 153 the run's
    resend, both held by a network that had already delayed a copy on this stream:
    153 is that resend as much as the network's copy of 149, so it is flagged. Before:
    a network duplicate, with no doubt."""
    truth, res, diff = extended_draw(tmp_path, 2, 123)
    assert _psn(res, 153) == _psn(res, 149) == _psn(res, 148) + 1
    assert _psn(res, 150) == _psn(res, 149) + 1 and _psn(res, 152) == _psn(res, 149) + 3
    assert reordered(truth, 149) and reordered(truth, 153)
    assert "retransmission" not in flags_of(res, 149)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 153)
    assert check_exact(truth, res, diff) == []



def test_a_copy_past_a_late_resend_may_be_that_runs_next_resend(tmp_path):
    """Wide 333:342. NAK 1141's run resends ..6f1 (1142) and ..6f3 (1143); NAK 1144's
    restart follows. 3 us later ..6f2 comes (1150: the first run's resend, held), then
    ..6f4 (1151), 624 ns after it: the first run's next resend, held as well, or the
    network's copy of ..6f4's last copy (1148). Flagged. Before: a network duplicate."""
    truth, res, diff = wide_draw(tmp_path, 333, 342)
    assert _psn(res, 1150) == _psn(res, 1142) + 1 and _psn(res, 1151) == _psn(res, 1143) + 1
    assert start_of(res, 1142) == ("nak_seq", 1141) and start_of(res, 1150) == ("nak_seq", 1141)
    assert ts_ns(res, 1151) - ts_ns(res, 1150) == 624
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 1151)
    assert check_exact(truth, res, diff) == []


def test_two_copies_in_one_nanosecond_leave_both_in_doubt(tmp_path):
    """Extended 26:9. NAK 8461's run resends ..4a1-..4a3 (8465-8468); ..4a4 passes the
    tap twice in the same nanosecond (8469, 8470): a copy held since before the NAK
    and the run's resend, in an order the tap's clock cannot give. Both flagged.
    (Before: 8469 a resend, 8470 the network's duplicate of it.)"""
    truth, res, diff = extended_draw(tmp_path, 26, 9)
    assert _psn(res, 8469) == _psn(res, 8470) == _psn(res, 8468) + 1
    assert ts_ns(res, 8469) == ts_ns(res, 8470)
    assert reordered(truth, 8469) and not reordered(truth, 8470)
    assert "ambiguous" in flags_of(res, 8469) and "ambiguous" in flags_of(res, 8470)
    assert check_exact(truth, res, diff) == []
