"""RC engine (issue #13): a packet of a resend run that passed the tap sooner after the
run's previous packet than the requester could have put it on the wire after that one
(one packet at a time, at the fastest rate per payload byte the stream has shown,
halved: `rc_run_shape.own_pace`) was sent before it: a copy the network delayed, not
the run's (`docs/rc-analysis.md`, "Go-back-N episodes"). Pinned on draws of the sweep
tool where the engine took such a copy for the run's own resend before."""

from __future__ import annotations

from rc_helpers import check_exact, flags_of, reordered, start_of, ts_ns, wide_draw


def test_a_hole_fill_too_soon_after_the_runs_resend_is_the_original(tmp_path):
    """NAK 20's run resends ..929 (frame 24) and ..930 (26), 700 bytes each, 242 ns
    apart. Frame 27, ..931's first copy at the tap, comes 31 ns after 26; frame 28,
    ..931 again, 242 ns after 26: the run's resend. 27 was sent before 26: the
    original, delayed, or the resend of NAK 13's run, which the tap saw skip ..931
    (frame 18, ..930, then 21, ..932): flagged."""
    truth, res, diff = wide_draw(tmp_path, 355, 76)
    assert ts_ns(res, 26) - ts_ns(res, 24) == ts_ns(res, 28) - ts_ns(res, 26)
    assert ts_ns(res, 27) - ts_ns(res, 26) < (ts_ns(res, 26) - ts_ns(res, 24)) // 2
    assert {"out_of_sequence", "ambiguous"} <= flags_of(res, 27)
    assert "retransmission" not in flags_of(res, 27)
    assert "retransmission" in flags_of(res, 28) and "ambiguous" not in flags_of(res, 28)
    assert start_of(res, 28) == start_of(res, 24) == ("nak_seq", 20)
    assert reordered(truth, 27)
    assert check_exact(truth, res, diff) == []


def test_a_copy_too_soon_after_the_runs_resend_is_the_networks(tmp_path):
    """NAK 92's run: ..240 at frame 96, then ..241 at 97, 111 ns later (4,096 bytes,
    330 ns a packet on this run), and ..241 again at 98, 329 ns after 96: the run's
    resend. 97 is a copy sent before 96; the tap's first copy of ..241 (frame 91) was
    taken for NAK 86's resend, so 97 may be the original or that resend: flagged."""
    truth, res, diff = wide_draw(tmp_path, 351, 13)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 97)
    assert "retransmission" not in flags_of(res, 97)
    assert "retransmission" in flags_of(res, 98) and "ambiguous" not in flags_of(res, 98)
    assert start_of(res, 98) == start_of(res, 96) == ("nak_seq", 92)
    assert reordered(truth, 97)
    assert check_exact(truth, res, diff) == []


def test_a_copy_of_an_original_too_soon_after_the_runs_resend(tmp_path):
    """NAK 210's run: ..303 at frame 214 (808 bytes), ..304 at 215 17 ns later, ..304
    again at 216, 351 ns after 214. The tap's only earlier copy of ..304 (209) was no
    resend: 215 is the network's copy, unflagged; 216 the run's resend."""
    truth, res, diff = wide_draw(tmp_path, 347, 81)
    assert flags_of(res, 215) & {"network_duplicate", "retransmission", "ambiguous"} == {
        "network_duplicate"}
    assert "retransmission" in flags_of(res, 216)
    assert start_of(res, 216) == start_of(res, 214) == ("nak_seq", 210)
    assert check_exact(truth, res, diff) == []


def test_a_packet_past_counts_its_own_wire_time(tmp_path):
    """An implied NAK's run sends 256-byte packets 44 ns apart (frames 3730, 3735);
    frame 3731, 11 PSNs past 3730's, comes 2 ns after it. Whatever the PSNs between
    (an ACK had covered them, so the run could skip them at no cost), 3731 itself
    takes a packet time after 3730 were it the run's: a late copy."""
    truth, res, diff = wide_draw(tmp_path, 349, 165)
    assert ts_ns(res, 3731) - ts_ns(res, 3730) < (ts_ns(res, 3735) - ts_ns(res, 3730)) // 2
    assert "out_of_sequence" in flags_of(res, 3731)
    assert "retransmission" not in flags_of(res, 3731)
    assert reordered(truth, 3731)
    assert check_exact(truth, res, diff) == []


def test_no_early_copy_while_a_nak_names_its_psn(tmp_path):
    """NAK 163's run resends ..771 (frame 167); NAK 169 names ..772; 172 (..772) comes
    sooner after 167 than this stream's fastest rate allows, and 174 is ..772 again.
    With NAK 169 pending for ..772, 174 may be that NAK's restart and 172 the run's
    resend (as here): no early copy. (Before: 172 the network's, 174 the run's.)"""
    truth, res, diff = wide_draw(tmp_path, 441, 28)
    assert "nak" in flags_of(res, 169)
    assert "retransmission" in flags_of(res, 172)
    assert start_of(res, 172) == ("nak_seq", 163)
    assert start_of(res, 174) == start_of(res, 175) == ("nak_seq", 169)
    assert check_exact(truth, res, diff) == []
