"""RC engine on reordering networks: how a resend run goes on past copies the network
delayed or duplicated, and a NAK whose PSN a late original fills (issue #13). Each
case is a fresh draw of the wide sweep, pinned."""

from __future__ import annotations

from rc_helpers import check_exact, compare, draw, flags_of, generate, start_of

WIDE = dict(ops={"send": 2, "write": 2, "read": 2}, sizes=(4096, 9000, 20000), corrupt=0.0,
            pmtu=256, messages=20)
SENDS = dict(ops={"write_imm": 1, "send_imm": 1, "send": 1}, sizes=(4096, 9000, 20000),
             corrupt=0.02, messages=20, duplicate=0.01)


def test_an_ack_right_after_a_nak_for_a_late_original_leaves_the_nak_pending(tmp_path):
    """NAK 1352 names PSN ..594, whose original reached the responder late (1299, after
    ..595). The ACK of ..594 (1353) comes 23 ns after the NAK, with no copy of ..594
    seen since: the responder took the late original, the requester had the NAK first
    and restarts at ..594 all the same (1358). Not a network copy of 1302."""
    path, truth = generate(tmp_path, "rc_clean", 90725, loss=0.0, loss_before_tap=0.0,
                           rnr=0.0, encap="roce1", connections=3, ack_every=2,
                           credits="count", tx_depth=2, rnr_timer=6, cm=True, reorder=0.01,
                           duplicate=0.01, **WIDE)
    resent = {e["frame"]: e for e in truth["retransmissions"] if e["frame"] is not None}
    assert resent[1358]["trigger_frame"] == 1352
    res, diff = compare(path, truth)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 1358)
    assert "network_duplicate" not in flags_of(res, 1358)
    assert start_of(res, 1361) == ("nak_seq", 1352)
    assert check_exact(truth, res, diff) == []


def test_a_copy_of_the_runs_latest_resend_then_the_run_going_on_starts_nothing(tmp_path):
    """Run resends ..147 (1204), the network duplicates it (1206, 104 ns later), and the
    run goes on at ..148 (1207). An earlier run skipped ..147, so 1206 may be that run's
    resend, late, or the duplicate: flagged. Not a restart for the implied NAK pending
    (1201, naming ..087): the next request goes on with the run that never stopped,
    and the restart comes at ..087 itself (1208)."""
    truth, res, diff = draw(tmp_path, 11445, 1206, "duplicate", loss=0.0, loss_before_tap=0.0,
                             rnr=0.04, encap="roce1", connections=1, ack_every=2,
                             credits="count", tx_depth=2, rnr_timer=6, cm=False, reorder=0.01,
                             duplicate=0.01, **WIDE)
    assert "go_back_n" not in flags_of(res, 1206)
    assert "ambiguous" in flags_of(res, 1206)
    assert res.episode[1206] == res.episode[1203]      # 1207 goes on with 1204's run
    assert {"go_back_n"} <= flags_of(res, 1208)
    assert start_of(res, 1208) == ("implied_nak", 1201)
    assert check_exact(truth, res, diff) == []


def test_a_timeout_restart_sooner_than_any_timer_repeating_the_run_is_a_copy(tmp_path):
    """6671 repeats ..121 100 ns after the run resent it (6669), with only a cause the
    requester ignores pending: no timer can fire so soon, and the next request (6674,
    ..122) goes on with that run at once. 6671 is the network's copy; the run and its
    episode go on."""
    truth, res, diff = draw(tmp_path, 65625, 6671, "duplicate", loss=0.0, loss_before_tap=1.0,
                             rnr=0.0, encap="roce2", connections=3, ack_every=4,
                             credits="count", tx_depth=8, rnr_timer=1, cm=True, reorder=0.03,
                             duplicate=0.01, **WIDE)
    assert flags_of(res, 6671) >= {"network_duplicate"}
    assert not flags_of(res, 6671) & {"retransmission", "go_back_n"}
    assert res.episode[6673] == res.episode[6668]
    assert check_exact(truth, res, diff) == []


def test_a_run_resuming_past_its_next_psn_after_a_late_original_never_jumped(tmp_path):
    """Run at ..088 (664); 665 is ..117, the original of new data delayed before the tap;
    the run resumes at ..090 (669: ..089 lost before the tap), below ..117. The run
    never jumped: 665 is a late original, and 669 goes on with the run's episode."""
    truth, res, diff = draw(
        tmp_path, 11887, 665, "reorder", ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
        sizes=(4096, 9000, 20000), loss=0.02, loss_before_tap=0.3, rnr=0.04, corrupt=0.02,
        encap="roce1", connections=3, ack_every=4, credits="count", pmtu=256, tx_depth=8,
        rnr_timer=1, cm=False, messages=20, reorder=0.03, duplicate=0.0)
    resent = {e["frame"] for e in truth["retransmissions"] if e["frame"] is not None}
    assert 665 not in resent and {664, 669} <= resent
    assert "out_of_sequence" in flags_of(res, 665)
    assert "retransmission" not in flags_of(res, 665)
    assert res.episode[668] == res.episode[663]
    assert "go_back_n" not in flags_of(res, 669)
    left = check_exact(truth, res, diff)
    assert not [d for d in left if d.split()[-1] in ("665", "669")]


def test_a_late_original_amid_a_run_with_only_ignored_causes_pending(tmp_path):
    """Run at ..847 (141); 145 is ..851, the READ's original delayed before the tap; the
    run resumes at ..848 at once (147). The NAK and the implied NAK pending are both
    ones the requester ignores (a retry covering them was under way), so neither can
    have restarted it there: 145 was a late original, and 147 goes on with the run."""
    truth, res, diff = draw(
        tmp_path, 87225, 145, "reorder", ops={"send": 2, "write": 2, "read": 2},
        sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.0, loss_before_tap=0.3, rnr=0.0,
        corrupt=0.0, encap="roce2", connections=3, ack_every=2, credits="unlimited", pmtu=256,
        tx_depth=8, rnr_timer=1, cm=False, messages=20, reorder=0.03, duplicate=0.01)
    assert "out_of_sequence" in flags_of(res, 145)
    assert "retransmission" not in flags_of(res, 145)
    assert "go_back_n" not in flags_of(res, 147)
    assert res.episode[146] == res.episode[140]
    assert check_exact(truth, res, diff) == []


def test_a_doubtful_restart_right_after_a_hole_fill_makes_the_fill_doubtful(tmp_path):
    """2056 is the first copy of ..864 at the tap, filling the run's next PSN (taken for
    the run's resend); 2057 repeats it 43 ns later, the restart for NAK 2053 taken with
    doubt. Either order fits: 2056 the original delayed and 2057 the run's resend (the
    truth), or the other way round, so both are flagged."""
    truth, res, diff = draw(tmp_path, 32958, 2056, "reorder", loss=0.0, loss_before_tap=0.0,
                             rnr=0.04, encap="roce1", connections=2, ack_every=2,
                             credits="unlimited", tx_depth=8, rnr_timer=1, cm=True,
                             reorder=0.03, duplicate=0.0, **dict(WIDE, corrupt=0.02))
    assert "ambiguous" in flags_of(res, 2056) and "ambiguous" in flags_of(res, 2057)
    assert check_exact(truth, res, diff) == []


SMALL = dict(ops={"write_imm": 1, "send_imm": 1, "send": 1}, corrupt=0.0, messages=20)


def test_a_hole_fill_before_the_nak_naming_it_is_the_late_original(tmp_path):
    """14 fills the hole at ..795 2.2 us after the last request, with no cause pending:
    too soon for any timer. NAK 15 (..795) comes next, and the run from ..796 (16) is its
    restart: a restart passes the tap after its NAK, so 14 was the original, delayed,
    and the restart's own ..795 is 30 (delayed too). Not a timeout run starting at 14."""
    truth, res, diff = draw(tmp_path, 16999, 14, "reorder", sizes=(1, 2, 8), loss=0.0,
                             loss_before_tap=0.3, rnr=0.04, encap="roce2", connections=1,
                             ack_every=2, credits="unlimited", pmtu=1024, tx_depth=8,
                             rnr_timer=12, cm=True, reorder=0.03, duplicate=0.01, **SMALL)
    assert "retransmission" not in flags_of(res, 14)
    assert "out_of_sequence" in flags_of(res, 14)
    assert start_of(res, 16) == ("nak_seq", 15)
    assert "retransmission" in flags_of(res, 30)
    assert check_exact(truth, res, diff) == []


def test_new_data_right_after_a_restart_that_filled_its_hole_puts_it_in_doubt(tmp_path):
    """NAK 65 names ..433; 90, the first copy of ..433 at the tap, comes 2.2 us later,
    and the next request is new data (92, ..450). A restart at ..433 resends ..434 to
    ..449 before any new PSN, so either all sixteen were lost before the tap or 90 is
    the original, delayed (here it is: the NAK was lost after the tap). Flagged."""
    truth, res, diff = draw(tmp_path, 43853, 90, "reorder",
                             sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.02,
                             loss_before_tap=0.0, rnr=0.0, encap="roce1", connections=2,
                             ack_every=2, credits="count", pmtu=256, tx_depth=16,
                             rnr_timer=12, cm=False, reorder=0.01, duplicate=0.0, **SMALL)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 90)
    assert start_of(res, 104) == ("nak_seq", 102)
    assert check_exact(truth, res, diff) == []


READS = dict(ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}, corrupt=0.0,
             messages=20)


def test_a_read_copy_below_a_restart_that_went_on_is_no_new_episode(tmp_path):
    """READ ..484: NAK restart 14, its response 21, then an implied NAK (22) restarts at
    ..485 (27) and the run goes on in order: the requester had ..484's response. 48,
    a copy of ..484 after that, is the original, delayed (here also lost after the
    tap): no restart can send it, so no new episode. Flagged all the same: the
    restart may have begun at ..484 with that packet delayed, had 21 been lost."""
    truth, res, diff = draw(tmp_path, 17553, 48, "reorder", sizes=(1, 2, 8), loss=0.02,
                             loss_before_tap=0.3, rnr=0.04, corrupt=0.02, encap="roce2",
                             connections=2, ack_every=4, credits="count", pmtu=4096,
                             tx_depth=8, rnr_timer=12, cm=True, reorder=0.03, duplicate=0.01,
                             ops={"send": 2, "write": 2, "read": 2}, messages=20)
    assert {"out_of_sequence", "ambiguous"} <= flags_of(res, 48)
    assert "go_back_n" not in flags_of(res, 48)
    assert start_of(res, 28) == ("implied_nak", 22)
    assert check_exact(truth, res, diff) == []


def test_a_nak_restart_past_a_read_shows_no_read_answered(tmp_path):
    """READ ..996's response (193) is lost after the tap; NAK 197 names ..997, and the
    run 198-200 from ..997 goes on in order. A NAK names the responder's expected PSN,
    not the oldest one the requester lacks a response for: the requester took it for
    an implied NAK of ..996 and restarted there, its ..996 (205) arriving late. 205 is
    that resend, not a stale copy (only an implied NAK's restart shows the READs
    before it answered)."""
    truth, res, diff = draw(tmp_path, 47110, 205, "reorder", ops={"read": 1},
                             sizes=(4096, 9000, 20000), loss=0.02, loss_before_tap=0.0,
                             rnr=0.0, corrupt=0.02, encap="roce2", connections=3,
                             ack_every=2, credits="unlimited", pmtu=4096, tx_depth=16,
                             rnr_timer=12, cm=False, reorder=0.03, duplicate=0.01,
                             messages=20)
    assert "retransmission" in flags_of(res, 205)
    assert check_exact(truth, res, diff) == []


def test_a_psn_below_the_first_one_seen_soon_after_it_is_in_doubt(tmp_path):
    """The capture has no CM exchange; the stream's first request at the tap is ..953
    (2). 15, ..952, comes 2.9 us later with nothing pending: the original, delayed, or
    a timeout's resend of one sent before the capture began. Flagged."""
    truth, res, diff = draw(tmp_path, 93173, 15, "reorder",
                             sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.02,
                             loss_before_tap=0.3, rnr=0.0, encap="roce1", connections=2,
                             ack_every=2, credits="unlimited", pmtu=1024, tx_depth=2,
                             rnr_timer=12, cm=False, reorder=0.01, duplicate=0.01, **READS)
    assert "ambiguous" in flags_of(res, 15)
    assert check_exact(truth, res, diff) == []


def test_a_second_copy_of_an_original_amid_a_run_is_in_doubt(tmp_path):
    """Run 148 restarts at READ ..666; 149 (..669, the second copy of 142) jumps past
    the run's next PSN ..668, which comes 2.9 us later (154). A second copy of an
    original is the network's duplicate, or the run's own resend with ..668 delayed
    (here: no network duplicates in this draw). The run resuming at ..668 does not
    tell them apart: 149 is flagged, and 154 stays the run's resend."""
    truth, res, diff = draw(tmp_path, 12479, 154, "reorder",
                             sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.05,
                             loss_before_tap=0.3, rnr=0.04, corrupt=0.02, encap="roce1",
                             connections=3, ack_every=2, credits="unlimited", pmtu=1024,
                             tx_depth=16, rnr_timer=12, cm=False, reorder=0.03,
                             duplicate=0.0, ops={"send": 2, "write": 2, "read": 2},
                             messages=20)
    assert "ambiguous" in flags_of(res, 149)
    assert "retransmission" in flags_of(res, 154)
    assert res.episode[153] == res.episode[147]
    assert check_exact(truth, res, diff) == []


def test_a_duplicated_request_draws_a_second_rnr_nak(tmp_path):
    """RNR retry 133 (..896) and the network's copy of it (134) both reach a responder
    with no receive WQE: each is refused, so RNR NAK 142, identical to 141 and 100 ns
    after it with no request between, answers 134. Not the network's copy of 141."""
    truth, res, diff = draw(tmp_path, 48854, 134, "duplicate",
                             sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.02,
                             loss_before_tap=0.3, rnr=0.04, corrupt=0.0, encap="roce2",
                             connections=3, ack_every=4, credits="unlimited", pmtu=256,
                             tx_depth=2, rnr_timer=1, cm=True, reorder=0.01, duplicate=0.01,
                             ops={"send": 2, "write": 2, "read": 2}, messages=20)
    assert "rnr" in flags_of(res, 141)
    assert "rnr" in flags_of(res, 142)
    assert "network_duplicate" not in flags_of(res, 142)
    assert check_exact(truth, res, diff) == []


def test_a_copy_before_the_nak_whose_restart_follows_is_the_networks(tmp_path):
    """250 repeats ..760 (246) 350 ns later, with no cause pending; NAK 253 for ..761
    comes next, and 257 resends ..761. 257 starts that NAK's restart (a restart passes
    the tap after its NAK), so 250 was no run start: the network's copy. (158 is the
    exception below.)"""
    truth, res, diff = draw(tmp_path, 97188, 250, "duplicate", sizes=(4096, 9000, 20000),
                             loss=0.02, loss_before_tap=0.3, rnr=0.04, corrupt=0.02,
                             encap="roce1", connections=2, ack_every=2, credits="unlimited",
                             pmtu=1024, tx_depth=2, rnr_timer=12, cm=True, reorder=0.03,
                             duplicate=0.01, **{k: v for k, v in READS.items()
                                                if k != "corrupt"})
    assert "network_duplicate" in flags_of(res, 250)
    assert "go_back_n" in flags_of(res, 257)
    # Unless the copy's previous one was a restart taken with doubt: 153 filled the
    # hole at ..730 right after NAK 152 and new data followed; 158, its copy before
    # NAK 160 (..731), is NAK 152's restart, and 161 goes on with it.
    assert "ambiguous" in flags_of(res, 153)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 158)
    assert start_of(res, 257) == ("nak_seq", 253)
    assert check_exact(truth, res, diff) == []


def test_a_copy_long_after_the_psns_first_is_a_delayed_resend(tmp_path):
    """733, ..432, comes amid NAK 714's run, below the PSN that run restarted at, so
    no restart sends it now: a copy delayed before the tap. Its PSN first passed the
    tap 391 rows earlier (340), far longer ago than the shortest ACK timeout: no
    network holds the original that long, so 733 is a resend delayed (here one of
    the timeout run that 708-718 belong to), not the original."""
    truth, res, diff = draw(tmp_path, 78060, 733, "reorder", loss=0.02, loss_before_tap=0.0,
                            rnr=0.04, encap="ib-grh", connections=2, ack_every=2,
                            credits="unlimited", pmtu=1024, tx_depth=8, rnr_timer=1, cm=True,
                            reorder=0.01, **SENDS)
    assert {"retransmission", "out_of_sequence"} <= flags_of(res, 733)
    assert "ambiguous" not in flags_of(res, 733)
    assert start_of(res, 734) == ("nak_seq", 714)
    assert check_exact(truth, res, diff) == []


def test_a_round_trip_from_resent_psns_when_none_was_sent_once(tmp_path):
    """A READ-only stream whose first READs were all resent (NAK 10): Karn's rule gives
    it no round trip. 33 repeats 32 (the implied NAK's restart, ..607) 23 ns later. The
    time from a PSN's latest copy to its response (15 - 11, 2.4 us) is never longer
    than a round trip, so 33 came far too soon for any cause to act: the network's
    copy, not a second restart."""
    truth, res, diff = draw(tmp_path, 59075, 33, "duplicate", ops={"read": 1},
                            sizes=(4096, 9000, 20000), loss=0.02, loss_before_tap=0.0, rnr=0.0,
                            corrupt=0.0, encap="roce2", connections=2, ack_every=4,
                            credits="unlimited", pmtu=4096, tx_depth=16, rnr_timer=6, cm=False,
                            messages=20, reorder=0.03, duplicate=0.01)
    assert "network_duplicate" in flags_of(res, 33)
    assert "retransmission" not in flags_of(res, 33)
    assert start_of(res, 34) == ("implied_nak", 31)
    assert check_exact(truth, res, diff) == []


def test_a_repeat_right_behind_the_runs_packet_is_no_restart_past_the_naks_psn(tmp_path):
    """NAK 195 names ..042 while NAK 188's run is at ..043 (194). 196 repeats ..043
    right behind 194 (no request between, 1.3 us later): NAK 195's restart begins at
    ..042, so it reaches ..043 this soon only with ..042 lost before the tap too. The
    network's copy needs nothing lost: held back and flagged, not a restart; the run
    goes on (197) and NAK 195's restart follows at ..042 (198)."""
    truth, res, diff = draw(tmp_path, 86961, 196, "duplicate", loss=0.05, loss_before_tap=0.3,
                            rnr=0.0, encap="roce2", connections=2, ack_every=4,
                            credits="unlimited", pmtu=4096, tx_depth=16, rnr_timer=6, cm=False,
                            reorder=0.01, **SENDS)
    assert "ambiguous" in flags_of(res, 196)
    assert "go_back_n" not in flags_of(res, 196)
    assert start_of(res, 197) == ("nak_seq", 188)
    assert start_of(res, 198) == ("nak_seq", 195)
    assert check_exact(truth, res, diff) == []
