"""Pairing request flows with response flows when several connections share two
endpoints (issue #13): each message counted once in the MSN fit, one assignment
over all flows, the RoCEv2 UDP source port Linux gives both ends of a QP pair,
both halves of a QP pair decided together, and the steady delay from a request to
its response."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, generate

from ibwire.analysis import rc_pair as P
from ibwire.analysis import rc_pair_fit as F
from ibwire.analysis.rc_input import rc_columns
from ibwire.analysis.rc_rules import C_ACK, C_REQUEST, C_RESPONSE
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
    assert F.message_psns(psn, last, reads, dmalen, np.arange(4), 0).tolist() == [10, 14, 15]
    # The same READ sent anew at the front (nothing sent past it) is a new message.
    assert F.message_psns(psn[[0, 3]], last[:2], reads[[0, 3]], np.array([4096, 1024]),
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
    assert sorted(P._assign([fit], near)) == [(0, 0), (1, 1)]
    assert P._assign([np.zeros((2, 2), dtype=np.int64)], np.zeros((2, 2), dtype=np.int64)) == []


def test_evidence_levels_weigh_in_order():
    """A level decides before the next whatever the next's sums: the first level ties
    (2 + 2 either way), the second prefers the diagonal by 1 (4 + 4 against 3 + 4),
    though the third prefers the other pairing by far (0 + 0 against 900 + 900)."""
    first = np.array([[1, 1], [1, 1]])
    second = np.array([[4, 3], [4, 4]])
    third = np.array([[0, 900], [900, 0]])
    near = np.ones((2, 2), dtype=np.int64)
    assert sorted(P._assign([first, second, third], near)) == [(0, 0), (1, 1)]
    assert sorted(P._assign([first, third, second], near)) == [(0, 1), (1, 0)]


def _evidence(req_times, req_psns, resp_times, resp_psns):
    """One request flow (0) and one response flow (0) laid out in time order."""
    t = np.array(list(req_times) + list(resp_times))
    order = np.argsort(t, kind="stable")
    is_req = np.array([True] * len(req_times) + [False] * len(resp_times))[order]
    cols = {"infiniband.bth.psn": np.array(list(req_psns) + list(resp_psns))[order],
            "infiniband.aeth.msn": np.full(len(t), -1), "frame.time_ns": t[order]}
    rows = np.arange(len(t))
    cls = np.where(is_req, C_REQUEST, C_RESPONSE | C_ACK)
    return F.Evidence(cols, cls, {0: rows[is_req]}, {0: rows[~is_req]})


def test_a_steady_delay_scores_above_a_drifting_one():
    """Responses 2,000 ns after the last copy of their PSN: deviation 0, the top
    score. Jitter of 50 ns: 2,000 / (8 x 50) = 5, two halvings and one: 3. Against
    a flow that sent the same PSNs 300 ns later each time, the delays drift (median
    1,100 ns, deviation 600 ns, above an eighth): 0. Under two matched responses,
    or under half of them matched, 0: no evidence."""
    req_t, psns = [i * 1000 for i in range(8)], list(range(8))
    resp_t = [t + 2000 for t in req_t]
    assert _evidence(req_t, psns, resp_t, psns).steady(0, 0) == F._STEADY_MAX
    jitter = [t + 2000 + (50 if i % 2 else -50) for i, t in enumerate(req_t)]
    assert _evidence(req_t, psns, jitter, psns).steady(0, 0) == 3
    drift = [t + 300 * i for i, t in enumerate(req_t)]
    assert _evidence(drift, psns, resp_t, psns).steady(0, 0) == 0
    # A resend of PSN 3 at 7,500 ns: its response is timed from the resend.
    ev = _evidence(req_t + [7500], psns + [3], resp_t + [9500], psns + [3])
    assert ev.steady(0, 0) == F._STEADY_MAX
    assert _evidence(req_t[:1], psns[:1], resp_t[:1] + [500], [0, 5]).steady(0, 0) == 0
    assert _evidence(req_t[:3], psns[:3], resp_t, psns).steady(0, 0) == 0


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


def test_both_halves_of_a_qp_pair_are_decided_together(tmp_path):
    """Extended draw 91 of master 2: two connections between two hosts, both hosts
    requesting, every QP from PSN 16777208, RoCEv2 with a port per QP (none both
    ways), no CM. Decided one direction at a time, A's requests took the other
    connection's responses (MSN fits 10 + 6 against 8 + 7) while B's were right: QP
    0x35a990 had two peers. An RC QP has one (IBA 9.2.4): both halves are weighed
    together now, and the capture is exact (before: 7 RNR retries wrong)."""
    path, truth = generate(tmp_path, "rc_clean", 59050, **_DRAW_2_91)
    st = P.pair_streams(rc_columns(path))
    assert _pairs_right(truth, st)
    assert len(set(st.connection)) == 2
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


def test_the_steady_delay_pairs_lockstep_flows_with_no_shared_port(tmp_path):
    """Four connections from PSN 0 sending alike, in lockstep, RoCEv2 with a port
    per QP: neither PSNs, MSNs nor ports tell them apart. Each responder answers
    a fixed time after the request; another connection's requests drift against
    it. The steady delay pairs all four (before: two swapped)."""
    kw = dict(loss=0.0, loss_before_tap=0.3, encap="roce2", messages=20, connections=4,
              ack_every=1, pmtu=1024, tx_depth=16, sizes=(1, 2, 8), psn_start=0,
              ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}, udp_sport="qp")
    path, truth = generate(tmp_path, "rc_clean", 7310, **kw)
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))


def test_the_steady_delay_pairs_both_ways_where_msns_tie(tmp_path):
    """Extended draw 76 of master 2: two bidirectional connections on IB with GRH
    from PSN 16777208, no CM, 5 us from the tap to each host, RNR NAKs. The responses
    that fit tie (by MSN 83, by PSN tracking 120, either way) and the PSN closeness
    favoured the wrong pairing by 39 PSNs in all; the delays of the right pairs are
    steady (deviation 0 against 156-207 ns). Before: 23 RNR retries wrong; with the
    halves decided together but no delay, both directions wrong."""
    path, truth = generate(tmp_path, "rc_clean", 83358, **_DRAW_2_76)
    assert _pairs_right(truth, P.pair_streams(rc_columns(path)))
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


# Extended draws of master 2 (tools/rc_sweep.py params --extended 2 N): two
# connections between two hosts, both requesting, every QP from one PSN, no CM.
_BOTH_WAYS = {
    "ops": {"write_imm": 1, "send_imm": 1, "send": 1},
    "sizes": (0, 64, 200, 256, 700, 1024, 1500), "connections": 2, "ack_every": 4,
    "tx_depth": 8, "rnr_timer": 1, "cm": False, "reorder": 0.0, "duplicate": 0.0,
    "bidirectional": True, "psn_start": 16777208, "capture_loss": 0.0, "rq_depth": 4,
    "max_unacked": 128, "corrupt": 0.0}
_DRAW_2_91 = _BOTH_WAYS | {
    "loss": 0.05, "loss_before_tap": 0.0, "rnr": 0.0, "encap": "roce2", "credits": "count",
    "pmtu": 1024, "reorder_delay_ns": 3000, "rate_gbps": 100.0, "loss_dir": "both",
    "ack_delay_ns": 300, "resp_delay_ns": 3000, "max_rd_atomic": 4, "timeout": 14,
    "ackreq_every": 4, "prop_ns": 200, "udp_sport": "qp", "fmt": "pcapng", "messages": 20,
    "pfc": True, "drain_gbps": 8.0}
_DRAW_2_76 = _BOTH_WAYS | {
    "loss": 0.02, "loss_before_tap": 0.3, "rnr": 0.04, "encap": "ib-grh",
    "credits": "unlimited", "pmtu": 4096, "reorder_delay_ns": 300, "rate_gbps": None,
    "loss_dir": "b2a", "ack_delay_ns": 2000, "resp_delay_ns": 400, "max_rd_atomic": 16,
    "timeout": 8, "ackreq_every": 64, "prop_ns": 5000, "udp_sport": "flow", "fmt": "erf",
    "messages": 40, "pfc": False}
