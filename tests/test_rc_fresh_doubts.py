"""Wider draws of fresh master seeds 379 and 381 of `tools/rc_sweep.py` (issue #13)
that the engine got wrong before: a later jump of a run whose start is in doubt, a
run continued in order once a later READ's response came (an implied NAK the tap
cannot see), a copy before an implied NAK that names the PSN after it, and a network
duplicate of an RNR NAK after a copy the responder never refused. Each capture now
equals the tap's-eye truth."""

from __future__ import annotations

from rc_helpers import exact, flags_of, reordered, start_of

TINY = dict(sizes=(1, 2, 8), messages=20)


def test_a_second_jump_of_a_run_in_doubt_is_in_doubt_too(tmp_path):
    """77, 80 and 82 are originals or resends held 3 us by the network: ..219,
    ..223 and ..233, each past the one before. 77 is taken for a restart with doubt
    and 80 for that run's jump. 82 (..233, first seen at 62, where the NAK restart
    at 52 ran on past the front) jumps again: it continues nothing in order, so it
    is as much the original, late, as the start is. (Before: a resend, sure.)"""
    truth, res = exact(tmp_path, 30273, name="rc_clean", ops={"send": 2, "write": 2, "read": 2},
                       loss=0.0, loss_before_tap=1.0, rnr=0.04, corrupt=0.0, encap="roce1",
                       connections=2, ack_every=1, credits="unlimited", pmtu=4096, tx_depth=16,
                       rnr_timer=12, cm=True, reorder=0.01, duplicate=0.0, **TINY)
    assert all(reordered(truth, f) for f in (77, 80, 82))
    assert all("ambiguous" in flags_of(res, f) for f in (77, 80, 82))


def test_a_run_continued_after_a_later_read_response_leaves_its_start_in_doubt(tmp_path):
    """READ ..811 (21) is its original, held 3 us: taken for a restart, with doubt
    (its response, 16, may have been lost after the tap). The response to ..813
    (22) comes next, then ..812 (24) in order. Had ..812's response (17) been lost
    after the tap, 22 is an implied NAK naming ..812, whose restart sends 24 just
    so: continuing in order shows nothing of 21, which stays flagged. (It was: 24
    is that implied NAK's restart. Before: 21 a resend, sure.)"""
    truth, res = exact(tmp_path, 33857, name="rc_clean", ops={"read": 1}, loss=0.05,
                       loss_before_tap=0.0, rnr=0.0, corrupt=0.0, encap="ib", connections=2,
                       ack_every=4, credits="count", pmtu=4096, tx_depth=2, rnr_timer=12,
                       cm=False, reorder=0.03, duplicate=0.01, **TINY)
    assert reordered(truth, 21)
    assert "ambiguous" in flags_of(res, 21)
    assert "retransmission" in flags_of(res, 24)


def test_a_copy_before_an_implied_nak_naming_the_psn_after_it_is_no_restart(tmp_path):
    """69 (..808) is a copy held 3 us; the implied NAK at 71 names ..809, and 73
    (..809) follows. A restart passes the tap after its cause, so 69, before the
    implied NAK, was none, and 73 starts that implied NAK's run, as for a sequence
    NAK. (Before: 69 the start of a run that 73 went on with.)"""
    truth, res = exact(tmp_path, 88888, name="rc_clean", ops={"send": 2, "write": 2, "read": 2},
                       sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.0, loss_before_tap=1.0,
                       rnr=0.04, corrupt=0.0, encap="ib-grh", connections=3, ack_every=4,
                       credits="count", pmtu=4096, tx_depth=8, rnr_timer=6, cm=True,
                       reorder=0.03, duplicate=0.01, messages=20)
    assert reordered(truth, 69)
    assert "retransmission" not in flags_of(res, 69)
    assert "go_back_n" in flags_of(res, 73)
    assert start_of(res, 74) == ("implied_nak", 71)


def test_an_rnr_nak_copy_after_a_copy_past_the_expected_psn(tmp_path):
    """..693 went out twice since the last RNR NAK: 161, past the PSN the responder
    expected (it NAKed ..690 at 168), and 173, which it refused (175). 176 repeats
    175 5 ns later: the network's copy, since the responder refuses only the request
    it expects. (Before: a second RNR NAK, owed to 161.)"""
    truth, res = exact(tmp_path, 16748, name="rc_clean",
                       ops={"write_imm": 1, "send_imm": 1, "send": 1}, loss=0.02,
                       loss_before_tap=1.0, rnr=0.04, corrupt=0.02, encap="ib-grh", connections=3,
                       ack_every=2, credits="unlimited", pmtu=256, tx_depth=16, rnr_timer=12,
                       cm=True, reorder=0.01, duplicate=0.01, **TINY)
    assert "responder_out_of_sequence" in flags_of(res, 161)
    assert "rnr" in flags_of(res, 175)
    assert flags_of(res, 176) == {"network_duplicate"}


def test_a_run_after_a_seen_cause_restart_is_not_held_in_doubt_by_a_read_response(tmp_path):
    """The other side of the rule above (wider draw 173 of seed 341): the atomic
    restart at 138 answers the implied NAK at 130 (its ack, 124, lost after the
    tap), and READ ..151 (141) follows after a response past it (139). Were 138 a
    late copy, the requester would still owe that implied NAK's restart at ..150,
    not one at ..151, so 141 going on in order settles 138 as before, and the NAK at
    213 starts the restart at 223."""
    _, res = exact(tmp_path, 39845, name="rc_clean",
                   ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
                   sizes=(4096, 9000, 20000), loss=0.05, loss_before_tap=0.0, rnr=0.04,
                   corrupt=0.0, encap="ib", connections=2, ack_every=2, credits="unlimited",
                   pmtu=1024, tx_depth=8, rnr_timer=1, cm=True, reorder=0.03, duplicate=0.01,
                   messages=20)
    assert "go_back_n" in flags_of(res, 138) and "ambiguous" not in flags_of(res, 138)
    assert start_of(res, 141) == ("implied_nak", 130)
    assert start_of(res, 223) == ("nak_seq", 213)
