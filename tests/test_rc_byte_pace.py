"""The requester's pace per payload byte (issue #13): a port sends one packet at a
time, so a request that comes sooner after the one before than the shorter payload
of the two takes on the wire went out before it. New data at a restart's next PSN
that came so soon after the restart's latest resend was sent before the restart
(its original, delayed): the restart resends it. Draws 199 and 342 of fresh master
389 of `tools/rc_sweep.py`, wrong before; the rule itself against streams paced at
any rate and payload mix."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rc_helpers import exact, flags_of, reordered

from ibwire.analysis.rc_rules import C_REQUEST, F_AMBIGUOUS, F_EPISODE, F_LATE, F_RETX
from ibwire.engines.rc_run_shape import PACED_PAYLOAD, _run_paced, own_pace

DRAW = dict(ops={"write_imm": 1, "send_imm": 1, "send": 1}, sizes=(4096, 9000, 20000),
            loss=0.02, loss_before_tap=1.0, rnr=0.04, connections=1, ack_every=4, pmtu=4096,
            tx_depth=8, rnr_timer=6, cm=False, reorder=0.03, duplicate=0.01, messages=20)


def test_new_data_right_behind_a_restarts_resend_is_resent_by_it(tmp_path):
    """The NAK at 34 restarts ..972 (35) and ..973 (36, 3,616 bytes). ..974 (37, new)
    comes 495 ns after 36, which takes 1,176 ns on this wire: it went out before 36,
    before the restart (the original, held 3 us). The restart resends it (38), not
    the network. (Before: 37 ended the run and 38 was the network's copy.)"""
    truth, res = exact(tmp_path, 47695, name="rc_clean", corrupt=0.02, encap="roce2",
                       credits="count", **DRAW)
    assert reordered(truth, 37)
    assert "retransmission" not in flags_of(res, 37)
    assert {"retransmission", "duplicate"} <= flags_of(res, 38)
    assert "network_duplicate" not in flags_of(res, 38)


def test_the_same_when_the_restarts_first_copy_was_in_doubt(tmp_path):
    """As above, after the restart at ..938 (34 and 35, the network's copy flagged):
    ..940 (38) comes 487 ns after 37's 4,096 bytes, which take 1,333 ns; 39 is the
    restart's resend of it."""
    truth, res = exact(tmp_path, 23987, name="rc_clean", corrupt=0.0, encap="roce1",
                       credits="unlimited", **DRAW)
    assert reordered(truth, 38)
    assert "retransmission" not in flags_of(res, 38)
    assert "retransmission" in flags_of(res, 39)


def _pace(paylen, ts, byte_gap, i, prev, new_row=None):
    """`own_pace` on row i after row `prev`, both a run's resends (the strictest case):
    whether i is behind."""
    n = len(ts)
    flags = np.full(n, F_RETX, np.int64)
    z = np.zeros(1, np.int64)
    nr = np.full(1, prev, np.int64) if new_row is None else new_row
    return bool(own_pace(paylen, ts, flags, np.zeros(n, np.int64), np.full(1, -1, np.int64),
                         np.full(1, -1, np.int64), byte_gap, nr, np.ones(1, np.bool_), z, z,
                         i, 0, i, 0, prev))


def _stream(sizes, ns_per_byte, overhead, stamp_end):
    """Back-to-back requests, each taking (payload + overhead) * rate on the wire,
    stamped as they begin or as they end: the `own_pace` verdict on each."""
    wire = [(s + overhead) * ns_per_byte for s in sizes]
    start = np.concatenate(([0.0], np.cumsum(wire)[:-1]))
    ts = np.round(start + (np.array(wire) if stamp_end else 0)).astype(np.int64)
    paylen = np.array(sizes, dtype=np.int64)
    byte_gap = np.full((1, 2), -1, np.int64)
    return [_pace(paylen, ts, byte_gap, i, i - 1) for i in range(len(sizes))], ts, paylen


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 64, 200, 256, 808, 1024, 3616, 4096]), min_size=2,
                      max_size=40),
       ns_per_byte=st.sampled_from([0.08, 0.32, 1.3, 8.0]),
       overhead=st.integers(0, PACED_PAYLOAD), stamp_end=st.booleans())
def test_a_paced_stream_is_never_behind(sizes, ns_per_byte, overhead, stamp_end):
    """Packets sent one after the other, at any rate, payload mix, header size up to
    the bytes the rate must be measured on, stamped at either end: none is taken
    for one sent before its predecessor."""
    behind, _, _ = _stream(sizes, ns_per_byte, overhead, stamp_end)
    assert not any(behind)


def _verdict(paylen, ts, byte_gap, gap, size):
    """`own_pace` on one more request, `gap` ns after the last, of `size` bytes."""
    return _pace(np.append(paylen, size), np.append(ts, ts[-1] + gap), byte_gap.copy(),
                 len(ts), len(ts) - 1)


def test_a_packet_in_less_than_half_the_time_is_behind():
    """After 4,096-byte packets 1,330 ns apart, one 500 ns after a 4,096-byte packet
    is behind; one 700 ns after is not (within the margin for headers). The shorter
    payload of the two counts."""
    ts = np.arange(4, dtype=np.int64) * 1330
    paylen = np.full(4, 4096, np.int64)
    assert _verdict(paylen, ts, np.array([[1330, 4096]]), 500, 4096)
    assert not _verdict(paylen, ts, np.array([[1330, 4096]]), 700, 4096)
    assert _verdict(paylen, ts, np.array([[1330, 4096]]), 150, 1024)
    assert not _verdict(paylen, ts, np.array([[1330, 4096]]), 200, 1024)
    assert not _verdict(paylen, ts, np.array([[-1, -1]]), 1, 4096)     # nothing measured


def test_only_behind_the_runs_own_resend():
    """The same 500 ns gap after a packet that is no sure resend of the run in
    progress (new data, a late copy, a resend with doubt, another run's) proves
    nothing of the port."""
    ts = np.array([0, 1330, 1830], np.int64)
    paylen = np.full(3, 4096, np.int64)
    z = np.zeros(1, np.int64)
    for flags0, ep, active in ((0, 0, True), (F_RETX | F_LATE, 0, True),
                               (F_RETX | F_AMBIGUOUS, 0, True), (F_RETX, 1, True),
                               (F_RETX, 0, False)):
        flags = np.array([F_RETX, flags0, 0], np.int64)
        episode = np.array([0, ep, 0], np.int64)
        assert not own_pace(paylen, ts, flags, episode, np.full(1, -1, np.int64),
                            np.full(1, -1, np.int64), np.array([[1330, 4096]]),
                            np.full(1, -1, np.int64), np.full(1, active, np.bool_), z, z,
                            2, 0, 2, -1, 1)


def test_the_rate_is_measured_on_equal_payloads_of_256_bytes_or_more():
    """A 4,096-byte packet stamped as it ends, 1,330 ns after a 64-byte one, and a
    64-byte one 25 ns after it: no measure (the payloads differ). Two 200-byte
    packets 70 ns apart: none either (headers may outweigh them). Two of 1,024 bytes
    333 ns apart: measured."""
    _, ts, paylen = _stream([64, 4096, 64, 200, 200, 1024, 1024], 0.32, 16, True)
    byte_gap = np.full((1, 2), -1, np.int64)
    seen = []
    for i in range(len(ts)):
        _pace(paylen, ts, byte_gap, i, i - 1)
        seen.append(tuple(byte_gap[0]))
    assert seen[:6] == [(-1, -1)] * 6
    assert seen[6] == (ts[6] - ts[5], 1024)


def test_a_run_jump_sooner_than_the_bytes_between_allow_is_a_late_original(tmp_path):
    """NAK 3672's restart runs from ..460 through ..467 (3750), one 256-byte packet
    per ~66 ns (three QPs share the port). ..482 (3753) comes 64 ns after 3750 and
    2 ns before ..468 (3754): the run could not have put the 14 packets between
    (3,584 bytes, 22 ns each on this wire) out in 64 ns, so 3753 is no jump of the
    run but the original, delayed, and 3754 goes on with the run. (Before: the
    fastest gap between packets, 4 ns after a 32-byte one, allowed 16 in 64 ns.)
    Wider draw 202 of fresh master 397."""
    truth, res = exact(tmp_path, 4596, name="rc_clean", loss=0.02, loss_before_tap=0.3,
                       rnr=0.04, corrupt=0.0, encap="ib", connections=3, ack_every=1,
                       credits="count", pmtu=256, tx_depth=2, rnr_timer=12, cm=True,
                       reorder=0.03, duplicate=0.0, messages=20,
                       ops={"write_imm": 1, "send_imm": 1, "send": 1},
                       sizes=(4096, 9000, 20000))
    assert reordered(truth, 3753)
    assert "retransmission" not in flags_of(res, 3753)
    assert "out_of_sequence" in flags_of(res, 3753)
    assert "retransmission" in flags_of(res, 3754)



def test_a_resume_after_a_packet_past_too_far_ahead_is_the_runs(tmp_path):
    """The run resends ..044 (3384) in the same nanosecond as ..078 (3383), 34 PSNs
    ahead, 22 ns after the run's ..043: that one cannot be the run's (the original,
    delayed, and damaged), so 3384 is, and ..079 (3386), 22 ns later with 34 PSNs
    between, is another late original, not a jump of the run. Wider draw 183 of
    master 347."""
    truth, res = exact(tmp_path, 8264, name="rc_clean", loss=0.0, loss_before_tap=1.0,
                       rnr=0.04, corrupt=0.02, encap="ib", connections=2, ack_every=2,
                       credits="count", pmtu=256, tx_depth=2, rnr_timer=12, cm=False,
                       reorder=0.03, duplicate=0.0, messages=20,
                       ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
                       sizes=(4096, 9000, 20000))
    assert reordered(truth, 3383) and reordered(truth, 3386)
    assert "out_of_sequence" in flags_of(res, 3383)
    assert "out_of_sequence" in flags_of(res, 3386)
    assert "retransmission" in flags_of(res, 3384)
    assert "retransmission" in flags_of(res, 3387)

def _jump(gap, byte_gap, pace, last=-1):
    """Originals of PSNs 10-14 (256 bytes each), a run restarting at 10, then one at 14
    `gap` ns later: whether `_run_paced` says the run could not have sent it (`last`:
    the run's latest PSN as the engine knows it; -1, the bytes between alone)."""
    ts = np.array([0, 22, 44, 66, 88, 1000, 1000 + gap], np.int64)
    upsn = np.array([10, 11, 12, 13, 14, 10, 14], np.int64)
    n = len(ts)
    flags = np.array([0] * 5 + [F_RETX | F_EPISODE, F_RETX], np.int64)
    episode = np.array([-1] * 5 + [0, 0], np.int64)
    first_tx = np.array([0, 1, 2, 3, 4, 0, 4], np.int64)
    return bool(_run_paced(np.zeros(n, np.int64), np.full(n, C_REQUEST, np.int64), upsn,
                           np.full(n, 256, np.int64), first_tx, ts, flags, episode,
                           np.array([byte_gap], np.int64), 0, 11, last, 6, pace))


def test_a_run_jump_is_paced_by_the_bytes_between_as_well_as_the_packets():
    """Three 256-byte packets (PSNs 11-13) take at least 3 x 11 ns at half a rate of
    22 ns per 256 bytes: a jump 30 ns after the run's packet is too soon, one 40 ns
    after is not. By packets alone, at the fastest gap yet of 4 ns, neither is; at
    12 ns, 30 ns is too soon. Nothing measured: nothing decided."""
    assert _jump(30, (22, 256), 4)
    assert not _jump(40, (22, 256), 4)
    assert not _jump(30, (-1, -1), 4)
    assert _jump(30, (-1, -1), 12)
    assert not _jump(30, (-1, -1), -1)


def test_a_packet_past_after_the_runs_latest_resend_counts_its_own_bytes():
    """After the run's latest resend (10, the restart), the packet past takes its own
    wire time too (the shorter of the two, 256 bytes): four packets' worth, 44 ns at
    half the rate, so 40 ns after is too soon; 50 is not."""
    assert _jump(40, (22, 256), 4, last=10)
    assert not _jump(50, (22, 256), 4, last=10)
    assert not _jump(40, (22, 256), 4, last=9)


def test_a_pair_after_a_late_packet_past_proves_nothing():
    """The run (from 10) jumped to 12, 22 ns after 10, taken for a late copy when 11
    came: 11 may be the late one as well, so 14, 6 ns after 11 with 12-13 between, is
    not judged by that pair. Without the packet past, it is; and so it is when the
    packet past came too soon after 10 to have been the run's (6 ns for 11's 256
    bytes)."""
    def paced(with_late, past_gap=22):
        upsn = [10, 11, 12, 13, 14, 10] + ([12] if with_late else []) + [11, 14]
        ts = [0, 22, 44, 66, 88, 1000] + ([1000 + past_gap] if with_late else []) + \
            [1030, 1036]
        flags = [0] * 5 + [F_RETX | F_EPISODE] + ([F_LATE] if with_late else []) + \
            [F_RETX, F_RETX]
        episode = [-1] * 5 + [0] + ([-1] if with_late else []) + [0, 0]
        first_tx = [0, 1, 2, 3, 4, 0] + ([2] if with_late else []) + [1, 4]
        n = len(ts)

        def a(v):
            return np.array(v, np.int64)
        return bool(_run_paced(np.zeros(n, np.int64), np.full(n, C_REQUEST, np.int64),
                               a(upsn), np.full(n, 256, np.int64), a(first_tx), a(ts), a(flags),
                               a(episode), np.array([[22, 256]], np.int64), 0, 12, 11, n - 1,
                               4))
    assert paced(False)
    assert not paced(True)
    assert paced(True, past_gap=6)
