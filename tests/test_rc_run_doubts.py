"""Wider draws (fresh master seeds 367, 369 and 375 of `tools/rc_sweep.py`) where a
late copy was taken for a resend run's start with nothing left to show it was one
(issue #13): the start stays flagged `ambiguous`, and so does a packet that
continues such a run only after another request, or at a PSN a pending cause names
with no original of it seen, or a later copy of a first copy taken for a resend
with doubt; each capture equals the tap's-eye truth."""

from __future__ import annotations

from rc_helpers import check_exact, exact, flags_of, reordered, ts_ns, wide_draw

SMALL_READS = dict(ops={"read": 1}, rnr=0.04, encap="roce2", credits="count", cm=True,
                   reorder=0.03, messages=20)
BIG_WRITES = dict(sizes=(4096, 9000, 20000), loss=0.02, corrupt=0.02, connections=3, cm=True,
                  reorder=0.03, duplicate=0.0, messages=20)


def test_a_run_continued_only_at_a_nak_named_psn_leaves_its_start_in_doubt(tmp_path):
    """READ ..870 (12) is a copy of the resend at 8, delayed 1.3 us: taken for a
    restart (an implied NAK the tap cannot see). The NAK at 13 names ..871, and the
    next request (14) is ..871, one reaction after it. That NAK's restart sends
    just that, whether 12 was a restart or not, so continuing in order shows
    nothing of 12: it stays flagged. (Before: a resend, sure.)"""
    truth, res = exact(tmp_path, 42511, name="rc_clean", sizes=(1, 2, 8), loss=0.0,
                       loss_before_tap=0.3, corrupt=0.0, connections=3, ack_every=2, pmtu=256,
                       tx_depth=2, rnr_timer=1, duplicate=0.0, **SMALL_READS)
    assert reordered(truth, 12)
    assert "ambiguous" in flags_of(res, 12)
    assert "retransmission" in flags_of(res, 14) and "ambiguous" not in flags_of(res, 14)


def test_a_run_continued_at_an_implied_nak_named_psn_leaves_its_start_in_doubt(tmp_path):
    """The implied NAK at 44 (response ..245 with ..244's first one damaged) names
    ..244. READ ..243 (47), a copy delayed from 32, was taken for a restart for it
    with the response to ..243 (41) lost after the tap; the next request, ..244
    (48), is what the implied NAK's restart sends anyway: 47 stays in doubt."""
    truth, res = exact(tmp_path, 12375, name="rc_clean", ops={"read": 1},
                       sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.05, loss_before_tap=0.0,
                       rnr=0.0, corrupt=0.02, encap="roce2", connections=2, ack_every=4,
                       credits="count", pmtu=1024, tx_depth=16, rnr_timer=12, cm=True,
                       reorder=0.03, duplicate=0.01, messages=20)
    assert reordered(truth, 47)
    assert "ambiguous" in flags_of(res, 47)
    assert "retransmission" in flags_of(res, 48)


def test_a_doubtful_start_then_the_named_psn_never_seen_before(tmp_path):
    """READ ..866 (113) and ..867 (114) come 3 ns apart: the resend of ..866 for the
    implied NAK at 86 and ..867's original, both held 3 us by the network. The NAK
    at 101 (lost after the tap) names ..867, whose original the tap never saw (..869
    at 97 jumped past it). 113 is taken for a restart with doubt; 114 is what that
    NAK's restart would send, or, with 113 late, ..867's original, late too: both
    flagged. (Before: 114 a resend, sure.)"""
    truth, res = exact(tmp_path, 89557, name="rc_clean", sizes=(0, 64, 200, 256, 700, 1024, 1500),
                       loss=0.05, loss_before_tap=0.0, corrupt=0.0, connections=3, ack_every=1,
                       pmtu=1024, tx_depth=2, rnr_timer=1, duplicate=0.0,
                       **{**SMALL_READS, "encap": "ib"})
    assert reordered(truth, 113) and reordered(truth, 114)
    assert "ambiguous" in flags_of(res, 113) and "ambiguous" in flags_of(res, 114)


def test_a_doubtful_run_going_on_after_new_data_stays_in_doubt(tmp_path):
    """..511 (130) fills the hole the NAK at 128 names, and new data (..514, 131)
    follows at once: a restart cut short, or the original, delayed (it is). ..512
    (135), no original of it seen either, goes on from 130 only after 131: a run's
    resends go back to back, so it is as much the original, delayed, as 130 is.
    (Before: a resend, sure; the NAK's restart is 136.)"""
    truth, res = exact(tmp_path, 54472, ops={"write_imm": 1, "send_imm": 1, "send": 1},
                       loss_before_tap=0.0, rnr=0.04, encap="roce1", ack_every=4,
                       credits="count", pmtu=1024, tx_depth=2, rnr_timer=1, name="rc_clean",
                       **BIG_WRITES)
    assert reordered(truth, 130) and reordered(truth, 135)
    assert "ambiguous" in flags_of(res, 130) and "ambiguous" in flags_of(res, 135)


def test_a_doubtful_run_going_on_after_another_request_on_an_ib_link(tmp_path):
    """The same on native IB with SENDs, WRITEs and READs: ..544 (141) after the NAK
    at 139, new data (142), then ..545 (146), both originals delayed; the NAK's
    restart is 152."""
    truth, res = exact(tmp_path, 23357, ops={"send": 2, "write": 2, "read": 2},
                       loss_before_tap=0.3, rnr=0.0, encap="ib-grh", ack_every=1,
                       credits="unlimited", pmtu=4096, tx_depth=8, rnr_timer=1, name="rc_clean",
                       **BIG_WRITES)
    assert reordered(truth, 141) and reordered(truth, 146)
    assert "ambiguous" in flags_of(res, 146)
    assert "retransmission" in flags_of(res, 152)


def test_a_later_copy_after_a_doubtful_hole_fill_is_in_doubt_too(tmp_path):
    """..847 (142) fills the hole the NAK at 140 names: taken for its restart, with
    doubt (new data right after it). It is the original, delayed; the restart's
    resend of ..847 is 148, 1 us later, with two requests between. A later copy
    after such a first copy may be that resend, late, as much as the network's
    copy: flagged. (Before: a network duplicate, sure.)"""
    truth, res = exact(tmp_path, 84792, ops={"write_imm": 1, "send_imm": 1, "send": 1},
                       loss_before_tap=1.0, rnr=0.04, encap="roce1", ack_every=2,
                       credits="count", pmtu=1024, tx_depth=16, rnr_timer=6, name="rc_clean",
                       **BIG_WRITES)
    assert reordered(truth, 142) and not reordered(truth, 148)
    assert "ambiguous" in flags_of(res, 142) and "ambiguous" in flags_of(res, 148)


def test_a_run_going_on_in_order_after_a_jump_in_doubt_is_in_doubt_too(tmp_path):
    """Wide 351:329. ..ed0 and ..ed1 (124, 125) come after ACKs covering up to ..ed9:
    taken for a run whose start stays in doubt. The run then jumps to ..ed9 (128), in
    doubt as much as its start, and ..eda (129) follows it in order 26 ns later. A
    burst the network held keeps its order as a run does, so 129 is flagged too:
    here all four are originals, held 3 us. (Before: 129 a resend, sure.)"""
    truth, res, diff = wide_draw(tmp_path, 351, 329)
    psn = res.cols["infiniband.bth.psn"]
    assert int(psn[128]) == int(psn[127]) + 1 == int(psn[124]) + 9
    assert ts_ns(res, 129) - ts_ns(res, 128) == 26
    assert all(reordered(truth, f) for f in (124, 125, 128, 129))
    assert "ambiguous" in flags_of(res, 128)
    assert {"retransmission", "ambiguous"} <= flags_of(res, 129)
    assert check_exact(truth, res, diff) == []
