"""Pairing request flows with response flows when several connections share two
endpoints (issue #13): each message counted once in the MSN fit, one assignment
over all flows, and the RoCEv2 UDP source port Linux gives both ends of a QP pair."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, generate

from ibwire.analysis import rc_pair as P
from ibwire.analysis.rc_input import rc_columns
from ibwire.gen.fabric import udp_source_port


def _pairs_right(truth, streams) -> bool:
    want = {}
    for c in truth["connections"]:
        for side in ("a", "b"):
            want[c[side]["dest_qpn"]] = c[side]["qpn"]
    got = {q: a for q, a in zip(streams.resp_qp, streams.req_qp, strict=True) if q in want}
    return bool(got) and all(want[q] == a for q, a in got.items())


def test_a_read_resent_part_way_is_no_new_message():
    """A READ of 4096 bytes at PSN 10 (PMTU 1024: PSNs 10-13), restarted at 12 for its
    last 2048 bytes after a SEND at 14: 2048 + 12 x 1024 = 4096 + 10 x 1024, and 12 is
    below a PSN sent before, so the restart ends no message. A new READ of 2048 at 15
    (the front) is one, though 2048 + 15 x 1024 matches nothing either way."""
    psn = np.array([10, 14, 12, 15])
    last = np.array([True, True, True, True])
    reads = np.array([True, False, True, True])
    dmalen = np.array([4096, -1, 2048, 2048])
    assert P._message_psns(psn, last, reads, dmalen, np.arange(4), 0).tolist() == [10, 14, 15]
    # The same READ sent anew at the front (nothing sent past it) is a new message.
    assert P._message_psns(psn[[0, 3]], last[:2], reads[[0, 3]], np.array([4096, 1024]),
                           np.arange(2), 0).tolist() == [10, 15]


def test_read_restarts_do_not_spoil_the_msn_fit(tmp_path):
    """Three READ-heavy connections from one starting PSN, 20 kB READs at PMTU 256
    restarted part-way under reordering. Counting each restart as a message end
    left the true pair's MSN fit below a wrong pair's (141 vs 144 responses); each
    request flow now gets its own responses."""
    path, truth = generate(tmp_path, "rc_clean", 7663, loss=0.0, loss_before_tap=1.0,
                           encap="roce1", messages=20, connections=3, ack_every=4,
                           credits="unlimited", pmtu=256, tx_depth=2, timeout=10,
                           rnr_timer=6, sizes=(4096, 9000, 20000), psn_start=16777124,
                           fmt="pcapng", reorder=0.03, duplicate=0.01,
                           ops={"send": 2, "write": 2, "read": 2})
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))


def test_one_assignment_over_all_flows():
    """Response flow 0 fits request flows 0 and 1 equally; flow 1 fits only request
    flow 1 (closely). Taking the best single fit first (0 with 1, by closeness) would
    leave response flow 1 without its own requests."""
    fit = np.array([[20, 19], [20, 19]])
    near = np.array([[19, 8], [21, 20]])
    assert sorted(P._assign(fit, near)) == [(0, 0), (1, 1)]
    assert P._assign(np.zeros((2, 2), dtype=np.int64), np.zeros((2, 2), dtype=np.int64)) == []


def test_greedy_pairing_cases_pair_right(tmp_path):
    """Two generated cases where the greedy choice paired wrongly: three connections
    from one starting PSN (RoCEv2), and two bidirectional ones (IB with GRH)."""
    path, truth = generate(tmp_path, "rc_clean", 793, loss=0.02, loss_before_tap=1.0,
                           encap="roce2", messages=40, connections=3, ack_every=4,
                           pmtu=4096, tx_depth=16, timeout=14,
                           sizes=(0, 64, 200, 256, 700, 1024, 1500), psn_start=16777100,
                           reorder=0.03, ops={"send": 2, "write": 2, "read": 2})
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))
    path, truth = generate(tmp_path, "rc_clean", 1527, loss=0.05, encap="ib-grh",
                           messages=40, bidirectional=True, connections=2, ack_every=1,
                           pmtu=256, tx_depth=16, timeout=16, sizes=(1, 2, 8),
                           psn_start=16777092, fmt="pcapng", reorder=0.03, duplicate=0.01,
                           ops={"read": 1})
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))


def test_the_udp_source_port_both_ends_share_pairs_lockstep_flows(tmp_path):
    """Four connections from PSN 0 sending alike, in lockstep: PSNs and MSNs cannot
    tell them apart. The generator gives each QP pair one RoCEv2 source port both
    ways, as Linux does (rdma_calc_flow_label is symmetric); pairing follows it."""
    kw = dict(loss=0.0, loss_before_tap=0.3, encap="roce2", messages=20, connections=4,
              ack_every=1, pmtu=1024, tx_depth=16, sizes=(1, 2, 8), psn_start=0,
              ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1})
    path, truth = generate(tmp_path, "rc_clean", 7310, **kw)
    ports = {q["udp_srcport"] for c in truth["connections"] for q in (c["a"], c["b"])}
    assert len(ports) == 4
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


def test_linux_udp_source_port():
    """rdma_get_udp_sport with no flow label: QPs 0x11 and 0x11 give 49441, the port
    both directions carry in the rxe captures; any QP pair, one port both ways."""
    assert udp_source_port(0x11, 0x11) == 49441
    assert udp_source_port(0x17, 0x2A5) == udp_source_port(0x2A5, 0x17)
    assert 0xC000 <= udp_source_port(0xFFFFFF, 0xFFFFFE) <= 0xFFFF
    assert udp_source_port(0x17, 0x2A5, "qp") != udp_source_port(0x2A5, 0x17, "qp")
