"""RC engine (issue #13): copies around a restart the tap cannot order, and a packet
past the run that its own wire time places before the run's latest resend
(`docs/rc-analysis.md`, "Go-back-N episodes"). Pinned on draws of the sweep tool
(`tools/rc_sweep.py`) the engine got wrong before."""

from __future__ import annotations

from rc_helpers import check_exact, flags_of, reordered, start_of, ts_ns, wide_draw


def test_a_packet_past_at_a_naks_psn_still_takes_its_own_wire_time(tmp_path):
    """The implied NAK's run resends 1,024-byte packets (278: ..165); NAK 272 names
    ..177, and 279 (..177, its first copy at the tap) comes 168 ns after 278. This
    stream puts 1,024 bytes on the wire in 350 ns (250, 252): 279 went out before
    278, so it is no restart for that NAK but the original, delayed."""
    truth, res, diff = wide_draw(tmp_path, 353, 136)
    assert ts_ns(res, 252) - ts_ns(res, 250) == 350
    assert ts_ns(res, 279) - ts_ns(res, 278) == 168
    assert "nak" in flags_of(res, 272)
    assert "out_of_sequence" in flags_of(res, 279)
    assert "retransmission" not in flags_of(res, 279)
    assert reordered(truth, 279)
    assert check_exact(truth, res, diff) == []


def test_two_copies_right_after_a_nak_either_may_be_its_restart(tmp_path):
    """..709 first passes the tap late (19); NAK 20 names it; 21 (..709) comes 93 ns
    after the NAK, right behind 19, and 22 (..709) 605 ns after 21. Either 21 is the
    restart and 22 the network's copy of it, or 21 the network's copy of 19 and 22
    the restart (as here): both flagged, the run going on at 24 either way."""
    truth, res, diff = wide_draw(tmp_path, 345, 35)
    assert ts_ns(res, 21) - ts_ns(res, 20) == 93
    for f in (21, 22):
        assert "ambiguous" in flags_of(res, f)
    assert "retransmission" in flags_of(res, 21)
    assert "network_duplicate" in flags_of(res, 22)
    assert start_of(res, 24) == ("nak_seq", 20)
    assert check_exact(truth, res, diff) == []

