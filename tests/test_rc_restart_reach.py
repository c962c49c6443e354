"""RC engine (issue #13): a restart for a sequence NAK begins at the NAK's PSN once the
requester has the NAK, and reaches a later PSN only a packet time per PSN after that
(`rc_run_shape._before_restart_reached`). A copy past the NAK's PSN that came sooner
after the NAK was sent before the requester had it: an earlier run's resend (or the
original) the network delayed, not the restart. Pinned with the frames they are about."""

from __future__ import annotations

from rc_helpers import compare, flags_of, generate, start_of, sweep_tool

# The draw pinned below is the sweep tool's (`tools/rc_sweep.py`): seed, parameters.
rc_sweep = sweep_tool()
REORDER_SEED, REORDER = rc_sweep.extended_params(1, 34)


def test_a_delayed_resend_past_a_naks_psn_is_not_its_restart(tmp_path):
    """NAK 7748 names PSN 633; frame 7763, PSN 656, comes 2.88 us after it: a restart
    from 633 reaching 656 would take the requester's fastest reaction (2.15 us) and 23
    packet times more. It is the resend of the run for NAK 7690, delayed by the
    network, and the restart is at 633 (7774); before, 7763 stood as NAK 7748's
    restart and the real one as a timeout's (43 resends on another cause). Likewise
    frame 9737 (PSN 885, 4.23 us after NAK 9719 for 856): its 28 packets between take
    longer than the stream's 40-byte packets alone show, so the originals' sizes
    count (the byte pace)."""
    path, truth = generate(tmp_path, "rc_clean", REORDER_SEED, **REORDER)
    res, _ = compare(path, truth)
    late = {r["frame"]: r["trigger_frame"] for r in truth["retransmissions"]}
    assert late[7763] == 7690 and late[9737] == 9670
    for frame, nak, restart, its_nak, run_end in ((7763, 7690, 7774, 7748, 7862),
                                                  (9737, 9670, 9742, 9719, 9826)):
        assert "go_back_n" not in flags_of(res, frame)
        assert "retransmission" in flags_of(res, frame)
        assert start_of(res, frame) == ("nak_seq", nak)
        assert "go_back_n" in flags_of(res, restart)
        assert start_of(res, restart) == start_of(res, run_end) == ("nak_seq", its_nak)


def test_a_delayed_hole_fill_past_a_naks_psn_is_not_its_restart(tmp_path):
    """The same for a PSN the tap had not seen: frame 1982 (PSN 65, its original lost
    before the tap) comes 4.45 us after NAK 1959 for PSN 47, too soon for a restart
    from 47 to reach it. It fills the hole the run for NAK 1918 skipped (its resend,
    delayed), and the restart at 47 (1987) answers NAK 1959; before, 1982 stood as
    that restart and the run from 47 as a timeout's (23 resends on another cause)."""
    path, truth = generate(tmp_path, "rc_clean", REORDER_SEED, **REORDER)
    res, _ = compare(path, truth)
    assert "go_back_n" not in flags_of(res, 1982) and "retransmission" in flags_of(res, 1982)
    assert "go_back_n" in flags_of(res, 1987) and start_of(res, 1987) == ("nak_seq", 1959)
    assert start_of(res, 2048) == ("nak_seq", 1959)

