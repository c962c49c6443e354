"""Fresh `rc_reorder` seeds (6000-6099) where late copies of a network that delays
them looked like resends (issue #13): each is now flagged `ambiguous` (a resend or a
late copy, the two the tap cannot tell apart) rather than called one way, and the
capture equals the tap's-eye truth."""

from __future__ import annotations

import numpy as np
from rc_helpers import compare, exact, flags_of, generate, start_of

from ibwire.analysis.rc import analyze


def _delayed(truth, frame):
    return frame in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}


def test_a_first_copy_jumping_past_a_doubtful_run_is_in_doubt(tmp_path):
    """349 and 350 (92, 93) fill a hole 7 us late, too soon for any timer: a run
    whose cause the tap missed, or two late originals. 95 (..359, never seen)
    jumps past the run's next PSN: the run skipping PSNs, or one more late
    original (it is: the network delayed it with the other two)."""
    truth, res = exact(tmp_path, 6006)
    assert all(_delayed(truth, f) for f in (92, 93, 95))
    for f in (92, 93, 95):
        assert "ambiguous" in flags_of(res, f)


def test_two_late_copies_in_a_row_on_a_delaying_network_stay_in_doubt(tmp_path):
    """READ ..298 and SEND ..304 (211, 212) are the originals, delayed 3 us past the
    NAK's resends of them (170, 171): in a row, they look like a run. The network
    had already shown it delays copies (160, a copy of ..284 no run followed), so
    the run start stays flagged however it goes on."""
    truth, res = exact(tmp_path, 6087)
    assert _delayed(truth, 160) and _delayed(truth, 211) and _delayed(truth, 212)
    assert "network_duplicate" in flags_of(res, 160)
    assert {"ambiguous"} <= flags_of(res, 211) and {"ambiguous"} <= flags_of(res, 212)


def test_an_ignored_nak_the_run_passed_starts_no_later_restart(tmp_path):
    """NAK 173 names READ ..43 while the retry from ..36 (170) covers it: ignored.
    The run resends ..43 (178) and goes on (179): the requester got there in
    order. 212, a late copy of ..43, is no restart for that NAK acted on after all
    (before: `nak_seq` at 173); it stays in doubt."""
    truth, res = exact(tmp_path, 6010)
    assert _delayed(truth, 212)
    assert "ambiguous" in flags_of(res, 212)
    assert start_of(res, 212) != ("nak_seq", 173)


def test_an_ignored_nak_is_acted_on_where_nothing_is_delayed(tmp_path):
    """No reordering: NAK 46 (..872) looked covered by the retry under way, and the
    run passed ..872 (52) 0.18 us after it, before the NAK can have reached the
    requester. The copy at ..872 right after the run (55) is that NAK's restart."""
    truth, res = exact(tmp_path, 61112, name="rc_clean", ops={"send": 2, "write": 2, "read": 2},
                       sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.05, loss_before_tap=1,
                       rnr=0, corrupt=0, encap="roce1", connections=2, ack_every=4,
                       credits="count", pmtu=256, tx_depth=8, rnr_timer=12, cm=True, reorder=0,
                       duplicate=0, messages=20)
    assert start_of(res, 55) == ("nak_seq", 46)
    assert "ambiguous" not in flags_of(res, 55)


def test_a_run_going_on_through_an_rnr_wait_never_got_the_rnr_nak(tmp_path):
    """RNR NAK 1543 (..764, a 10 us wait) was lost after the tap: the RNR retry run
    under way (1541) kept sending in order through the whole wait and past it. A
    requester that got the NAK would have stopped, so this is no retry whose first
    packet was lost before the tap: the NAK stays pending, and the first resend of
    ..764 once the wait is over (1665, the timer's, 67 ms later) is at the tap its
    retry, as the truth's tap view has it."""
    path, truth = generate(tmp_path, "rc_clean", 76233,
                           ops={"write_imm": 1, "send_imm": 1, "send": 1},
                           sizes=(4096, 9000, 20000), loss=0.05, loss_before_tap=0, rnr=0.04,
                           corrupt=0.02, encap="roce1", connections=3, ack_every=1,
                           credits="unlimited", pmtu=1024, tx_depth=16, rnr_timer=1, cm=False,
                           reorder=0.01, duplicate=0.01, messages=20)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[1543]["retry_frame"] is None and rnr[1543]["tap_retry_frame"] == 1665
    res, _ = compare(path, truth)
    assert "rnr_retry" in flags_of(res, 1665)
    assert all("rnr_retry" not in flags_of(res, f) for f in range(1544, 1665))


def test_a_hole_fill_taken_for_a_restart_continued_only_by_a_timer_is_in_doubt(tmp_path):
    """Wider draws 43 and 110 of seed 361: a request jumps past PSN P (128; 23), the
    responder NAKs P (139; 27: lost after the tap, so the requester never acts on
    it), and P's original arrives 3 us late (143; 33), its first copy at the tap.
    Taken for the NAK's restart, the run should go on at once; the next request of the
    stream, P+1, comes 67 ms later: the timer's. Go-back-N sends a run back to back,
    so either the run's resends were all lost before the tap or the hole fill was
    the original, delayed (the same PSNs follow either way): flagged."""
    base = {"loss": 0.05, "rnr": 0.0, "credits": "unlimited", "pmtu": 4096, "cm": True,
            "messages": 20}
    for seed, fill, nak, nxt, kw in (
            (14671, 143, 139, 158, dict(
                ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}, corrupt=0.02,
                sizes=(0, 64, 200, 256, 700, 1024, 1500), loss_before_tap=0.3,
                encap="roce2", connections=3, ack_every=1, tx_depth=16, rnr_timer=12,
                reorder=0.01, duplicate=0.01)),
            (93038, 33, 27, 82, dict(
                ops={"send": 2, "write": 2, "read": 2}, sizes=(1, 2, 8), corrupt=0.0,
                loss_before_tap=0.0, encap="ib", connections=2, ack_every=2, tx_depth=8,
                rnr_timer=1, reorder=0.03, duplicate=0.0))):
        truth, res = exact(tmp_path, seed, name="rc_clean", **base, **kw)
        assert _delayed(truth, fill), seed
        assert {"retransmission", "go_back_n", "ambiguous"} <= flags_of(res, fill), seed
        assert start_of(res, fill) == ("nak_seq", nak), seed
        ts = res.cols["frame.time_ns"]
        assert ts[nxt - 1] - ts[fill - 1] > 60_000_000, seed
        assert res.cols["infiniband.bth.psn"][nxt - 1] == \
            (res.cols["infiniband.bth.psn"][fill - 1] + 1) % (1 << 24), seed


def test_a_run_of_late_originals_stopping_short_of_the_front_is_in_doubt(tmp_path):
    """Wider draws 248 and 192 of seed 359 (READs): the tap saw the stream jump past
    PSNs P and P+1 (13; 41), their NAK (15; 42) and its run resending P, P+1 and on
    (16-19; 43-45). The originals of P and P+1, held 3 us by the network, come next
    (28-29; 54, 57), in order: a second run, with no cause the tap saw. Go-back-N
    would resend every PSN up to the front, back to back: instead new data follows
    (34), or nothing until the capture ends. Either the rest of that run was lost
    before the tap, or the two were the originals, delayed: flagged."""
    base = {"ops": {"read": 1}, "rnr_timer": 12, "pmtu": 4096, "reorder": 0.03,
            "duplicate": 0.01, "messages": 20}
    for seed, late, then, kw in (
            (70590, (28, 29), 34, dict(
                sizes=(1, 2, 8), loss=0.05, loss_before_tap=0.0, rnr=0.0, corrupt=0.0,
                encap="roce1", connections=1, ack_every=2, credits="count", tx_depth=16,
                cm=False)),
            (11304, (54, 57), None, dict(
                sizes=(0, 64, 200, 256, 700, 1024, 1500), loss=0.0, loss_before_tap=0.3,
                rnr=0.04, corrupt=0.0, encap="roce2", connections=3, ack_every=4,
                credits="unlimited", pmtu=1024, tx_depth=16, cm=True))):
        truth, res = exact(tmp_path, seed, name="rc_clean", **dict(base, **kw))
        qp = res.cols["infiniband.bth.destqp"]
        for f in late:
            assert _delayed(truth, f), seed
            assert {"retransmission", "ambiguous"} <= flags_of(res, f), seed
        rows = [r for r in range(late[1], len(qp)) if qp[r] == qp[late[1] - 1]]
        if then is None:
            assert rows == [], seed             # nothing more of the stream
        else:
            assert rows[0] == then - 1 and "retransmission" not in flags_of(res, then), seed


# One connection of SEND and WRITE over RoCE v1, tiny messages, all loss after the tap.
TINY_ROCE1 = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (1, 2, 8),
              "loss": 0.02, "loss_before_tap": 0.0, "rnr": 0.0, "corrupt": 0.02,
              "encap": "roce1", "connections": 1, "ack_every": 2, "credits": "count",
              "pmtu": 4096, "tx_depth": 2, "rnr_timer": 12, "cm": False, "reorder": 0.03,
              "duplicate": 0.01, "messages": 20}


def test_the_psn_after_a_copy_in_doubt_comes_late_and_shares_its_doubt(tmp_path):
    """NAK 31 names ..719; 32, a copy of ..719 228 ns later, is that NAK's restart or
    the network's copy (flagged: NAK 28, for ..718, was still pending).
    The request after it is ..721 (34), new data, so no run went on in order; then
    comes a copy of ..720 (35, 3 us later). If 32 was the restart, 35 is its second
    packet, delayed past 34 (the truth); if 32 was the network's, so is 35. Flagged
    with 32 (before: the network's copy, sure)."""
    truth, res = exact(tmp_path, 88156, name="rc_clean", **TINY_ROCE1)
    assert _delayed(truth, 35)
    assert 35 in {e["frame"] for e in truth["retransmissions"]}
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 32)
    assert {"network_duplicate", "ambiguous"} <= flags_of(res, 35)
    assert "ambiguous" not in flags_of(res, 34)
    twin = analyze(res.cols, use_numba=False)      # the pass's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
