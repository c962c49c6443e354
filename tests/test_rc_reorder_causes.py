"""RC engine on reordering networks: which pending cause a copy can answer when the
network delays or duplicates requests (issue #13). Each case is a fresh draw of the
wide sweep (seed 221), pinned."""

from __future__ import annotations

from rc_helpers import check_exact, compare, draw, episode_diff, flags_of, generate, start_of

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


READS = dict(ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}, messages=20)


def test_a_nak_starts_one_restart_even_when_its_first_resends_come_late(tmp_path):
    """NAK 40 names ..198; its restart reaches the tap from ..200 (41, then 42-43): the
    first resends missing, so taken with doubt and NAK 40 kept pending. 46, ..198
    2 us later with no new cause, is no second restart for NAK 40: the run's resend
    or the original, both late (here the original, delayed). The next NAK (48) starts
    the next episode."""
    truth, res, diff = draw(tmp_path, 12052, 46, "reorder", loss=0.05, loss_before_tap=1.0,
                            rnr=0.0, corrupt=0.0, encap="roce1", connections=2, ack_every=2,
                            credits="count", pmtu=4096, tx_depth=8, rnr_timer=1, cm=True,
                            reorder=0.03, duplicate=0.01, **SMALL)
    assert start_of(res, 41) == ("nak_seq", 40)
    assert "go_back_n" not in flags_of(res, 46)
    assert "ambiguous" in flags_of(res, 46)
    assert res.episode[45] == res.episode[40]
    assert start_of(res, 50) == ("nak_seq", 48)
    assert check_exact(truth, res, diff) == []


WIDE = dict(ops={"send": 2, "write": 2, "read": 2}, sizes=(4096, 9000, 20000), corrupt=0.0,
            pmtu=256, messages=20)


def test_a_copy_below_a_naks_psn_then_its_restart_is_no_timeout_run(tmp_path):
    """NAK 135 names ..782, restarted at once (141); NAK 154 then names ..783. 158, a
    copy of ..782 1.6 us after 141 (delayed), comes just before NAK 154's restart
    (160, ..783). The next request continues the copy in order, but it is that NAK's
    restart: the NAK acknowledged ..782, and no timer fires as soon as 158 came. 158
    stays a copy, not the start of a timeout run."""
    truth, res, diff = draw(tmp_path, 25370, 158, "reorder", loss=0.0, loss_before_tap=0.3,
                            rnr=0.0, encap="roce2", connections=3, ack_every=4,
                            credits="count", tx_depth=2, rnr_timer=1, cm=False, reorder=0.03,
                            duplicate=0.0, **WIDE)
    assert start_of(res, 141) == ("nak_seq", 135)
    assert "network_duplicate" in flags_of(res, 158)
    assert not flags_of(res, 158) & {"retransmission", "go_back_n"}
    assert start_of(res, 160) == ("nak_seq", 154)
    assert check_exact(truth, res, diff) == []
    # Unless the copy before it was a restart taken with doubt (draw 15250): 419 fills
    # ..872's hole right after NAK 417 and new data follows (flagged); 424, its copy
    # after NAK 422 (..873), is NAK 417's restart, the requester's reaction slowed by
    # its send queue. (The engine runs 428, NAK 422's restart, on from 424.)
    truth, res, diff = draw(tmp_path, 15250, 419, "reorder", loss=0.02, loss_before_tap=0.0,
                            rnr=0.0, corrupt=0.02, encap="roce1", connections=3, ack_every=2,
                            credits="unlimited", pmtu=1024, tx_depth=8, rnr_timer=12, cm=False,
                            reorder=0.03, duplicate=0.0, ops=SMALL["ops"],
                            sizes=(4096, 9000, 20000), messages=20)
    assert "ambiguous" in flags_of(res, 419)
    assert "retransmission" in flags_of(res, 424)
    assert "network_duplicate" not in flags_of(res, 424)
    assert check_exact(truth, res, diff) == []


def test_a_hole_fill_taken_for_a_restart_the_run_never_follows_is_in_doubt(tmp_path):
    """NAK 133 names ..596, a hole (..597 came first, 132). 134 fills it 1.6 us later:
    the NAK's restart, or the original, delayed (here: the NAK was lost after the
    tap). A restart would resend ..597 at once, back to back; the next request is
    instead ..596 again (136, the RNR NAK's retry 640 us later). So 134 is in doubt."""
    truth, res, diff = draw(tmp_path, 66642, 134, "reorder", sizes=(1, 2, 8), loss=0.05,
                            loss_before_tap=0.3, rnr=0.04, corrupt=0.0, encap="roce1",
                            connections=3, ack_every=4, credits="count", pmtu=4096,
                            tx_depth=2, rnr_timer=12, cm=False, reorder=0.03, duplicate=0.01,
                            **READS)
    assert "ambiguous" in flags_of(res, 134)
    assert {"rnr_retry", "go_back_n"} <= flags_of(res, 136)
    assert start_of(res, 137) == ("rnr", 135)
    assert check_exact(truth, res, diff) == []


def test_no_implied_nak_while_a_restarts_read_awaits_its_own_response(tmp_path):
    """NAK 111 restarts at READ ..152 (112); its first response (118) is lost after the
    tap. Had the requester missed it, its retry from ..152 would still be under way,
    and it ignores the hole the responses after it show (IBA 9.7.5.1.3): so those are
    no implied NAK. 132, ..152 again (a delayed copy of 112), has no cause, and the
    resends the requester's timer sends much later (137-140) go on in its episode as
    a timeout, as the generator's requester has it."""
    path, truth = generate(tmp_path, "rc_loss", 2130, loss=0.02, loss_before_tap=0.5, rnr=0.0,
                           corrupt=0.02, encap="roce2", messages=30, bidirectional=False,
                           capture_loss=0.0, psn_start=16777093, reorder=0.03,
                           duplicate=0.01)
    res, diff = compare(path, truth)
    assert start_of(res, 112) == ("nak_seq", 111)
    assert "ambiguous" in flags_of(res, 132)
    assert start_of(res, 138) == ("timeout", None)
    reasons = {e["frame"]: e["reason"] for e in truth["retransmissions"]}
    assert {reasons[f] for f in range(137, 141)} == {"timeout"}
    assert [d for d in episode_diff(truth, res) if int(d.split()[1][:-1]) in range(132, 141)] == []
    assert check_exact(truth, res, diff) == []


def test_a_delayed_older_nak_leaves_the_pending_one_to_match_its_copy(tmp_path):
    """NAK 594 names ..027; NAK 596, naming ..026, is an older one the network delayed
    (a responder's expected PSN never goes back); 597 repeats 594, the network's copy.
    The delayed NAK does not replace the pending one, so 597 is still known for a copy
    (the responder NAKs a hole once until its expected PSN arrives)."""
    truth, res, diff = draw(tmp_path, 37405, 597, "duplicate", ops=SMALL["ops"],
                            sizes=(4096, 9000, 20000), loss=0.02, loss_before_tap=0.0,
                            rnr=0.0, corrupt=0.0, encap="roce1", connections=2, ack_every=1,
                            credits="count", pmtu=256, tx_depth=8, rnr_timer=6, cm=False,
                            messages=20, reorder=0.03, duplicate=0.01)
    assert "nak" in flags_of(res, 594)
    assert "network_duplicate" in flags_of(res, 597)
    assert "nak" not in flags_of(res, 597)
    assert check_exact(truth, res, diff) == []


def test_a_nak_behind_an_unanswered_one_restarts_again_once_the_run_passed_it(tmp_path):
    """NAK 75 names ..175; NAK 78, ..176, comes before any copy of ..175 (the responder
    got a late ..175 in between). The requester restarts for NAK 75 first (79, ..175;
    82, ..176); NAK 78's implicit ACK then ends that retry, and as its resend had
    passed ..176, it restarts there again (84). NAK 78 is kept back, not lost as the
    newer NAK, until the restart for NAK 75 comes."""
    path, truth = generate(tmp_path, "rc_clean", 12361, sizes=(4096, 9000, 20000), loss=0.0,
                           loss_before_tap=0.0, rnr=0.04, corrupt=0.02, encap="roce1",
                           connections=2, ack_every=1, credits="count", pmtu=4096,
                           tx_depth=16, rnr_timer=1, cm=False, reorder=0.01, duplicate=0.01,
                           **READS)
    res, diff = compare(path, truth)
    assert start_of(res, 79) == ("nak_seq", 75)
    assert res.episode[81] == res.episode[78]
    assert {"retransmission", "go_back_n"} <= flags_of(res, 84)
    assert start_of(res, 84) == ("nak_seq", 78)
    assert check_exact(truth, res, diff) == []


def test_a_nak_kept_back_that_the_run_reaches_in_order_is_spent(tmp_path):
    """The other side of the rule above (draw 52876): a NAK kept back behind another
    whose restart then resends its PSN and goes straight on to the next one was
    ignored (the requester's resend reached it in order): no later copy of that PSN
    is its restart."""
    truth, res, diff = draw(tmp_path, 52876, 685, "reorder", loss=0.0, loss_before_tap=0.3,
                            rnr=0.04, encap="roce2", connections=3, ack_every=1,
                            credits="count", tx_depth=16, rnr_timer=6, cm=True, reorder=0.03,
                            duplicate=0.01, **{**WIDE, "pmtu": 1024})
    assert "retransmission" not in flags_of(res, 685)
    assert check_exact(truth, res, diff) == []


def test_a_late_rnr_retry_then_a_timer_long_pause_starts_no_run(tmp_path):
    """RNR NAK 25 refuses ..503; its retry run passes the tap from ..504 (30-42), the
    retry of ..503 itself delayed past it (43). The next request, ..504 (45), comes
    67 ms later: in order after 43, but no run pauses that long: it is the timer's
    restart. 43 stays the RNR NAK's delayed retry, not a timeout run's start."""
    truth, res, diff = draw(tmp_path, 6809, 43, "reorder", ops={"send": 2, "write": 2,
                            "read": 2}, sizes=(1, 2, 8), loss=0.02, loss_before_tap=1.0,
                            rnr=0.04, corrupt=0.0, encap="roce2", connections=1, ack_every=1,
                            credits="unlimited", pmtu=256, tx_depth=16, rnr_timer=6, cm=True,
                            messages=20, reorder=0.01, duplicate=0.01)
    assert {"retransmission", "rnr_retry"} <= flags_of(res, 43)
    assert "go_back_n" not in flags_of(res, 43)
    assert start_of(res, 43) == ("rnr", 25)
    assert start_of(res, 45) == ("timeout", None)
    assert check_exact(truth, res, diff) == []


def test_a_copy_after_a_restart_in_doubt_then_a_nak_for_the_next_psn_is_in_doubt(tmp_path):
    """NAK 77 names ..569; its hole is filled at 78, taken with doubt (the original may
    be late). ..569 again at 81, then NAK 82 for ..570 and a run from it (83-84). The
    NAK shows 83 is its restart, whatever 81 was: 81 may be the restart for NAK 77 (78
    the original, delayed), or that original itself, late (so here, by 3 us). Either
    way 81 starts a run that nothing settles: flagged, not taken for a resend. Wider
    draw 394 of fresh master 397. (Before: 81 a sure resend, and 83's order settled it.)"""
    truth, res, diff = draw(tmp_path, 35037, 81, "reorder", loss=0.05, loss_before_tap=0.3,
                            rnr=0.04, corrupt=0.0, encap="ib-grh", connections=2, ack_every=1,
                            credits="count", pmtu=4096, tx_depth=2, rnr_timer=1, cm=True,
                            reorder=0.03, duplicate=0.01, **SMALL)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 78)
    assert "ambiguous" in flags_of(res, 81)
    assert "nak" in flags_of(res, 82)
    assert "retransmission" in flags_of(res, 83)
    assert check_exact(truth, res, diff) == []


def test_a_restart_for_a_cause_older_than_its_psns_last_resend_is_in_doubt(tmp_path):
    """READs: NAK 146 names ..212, resent at 150 (the tap never saw its original). 163,
    ..212 again 2 us later, could only be a restart for that NAK, which 150 may
    already have answered: it may as well be the original, delayed (so here, by
    3 us). Flagged, not a sure resend. Wider draw 222 of master 337."""
    truth, res, diff = draw(tmp_path, 3429, 163, "reorder", loss=0.0, loss_before_tap=0.3,
                            rnr=0.0, corrupt=0.0, encap="roce1", connections=3, ack_every=1,
                            credits="count", pmtu=256, tx_depth=16, rnr_timer=6, cm=False,
                            reorder=0.03, duplicate=0.01, ops={"read": 1}, sizes=(1, 2, 8),
                            messages=20)
    assert "nak" in flags_of(res, 146)
    assert "retransmission" in flags_of(res, 150)
    assert {"go_back_n", "ambiguous"} <= flags_of(res, 163)
    assert check_exact(truth, res, diff) == []
