"""Property tests: generated RC conversations obey the IBA rules, over many seeds.

Every example simulates a configuration drawn by Hypothesis, decodes the capture
with ibwire and checks it with the independent rule checker of test_gen_support:
request PSNs step by the PSNs each request consumes and only ever jump back (a
go-back-N restart that the ground truth lists as a retransmission); ACK PSNs are
monotone and acknowledge only PSNs already sent; every AETH's MSN counts the
messages completed up to its PSN; READ responses take exactly ceil(len/PMTU)
PSNs from the request's PSN; opcodes are the right first/middle/last/only of
their message; RNR retries wait the RNR timer; and a naive PSN-repeat scan of
the capture finds exactly the truth's retransmissions.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gen_support import check_rc, load, pdiff, repeat_scan

from ibwire.gen import GenConfig, scenario, simulate
from ibwire.gen.fabric import ENCAPS

SETTINGS = settings(max_examples=14, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

# Faults that keep the capture "complete": every transmission crosses the tap in
# the order it was sent (losses after the tap, corruption, RNR).
complete_configs = st.fixed_dictionaries({
    "seed": st.integers(0, 10**6),
    "encap": st.sampled_from(ENCAPS),
    "messages": st.integers(4, 30),
    "pmtu": st.sampled_from([256, 512, 1024]),
    "loss": st.sampled_from([0.0, 0.02, 0.06]),
    "loss_dir": st.sampled_from(["both", "a2b", "b2a"]),
    "rnr": st.sampled_from([0.0, 0.04]),
    "corrupt": st.sampled_from([0.0, 0.02]),
    "ack_every": st.integers(1, 4),
    "tx_depth": st.integers(1, 12),
    "bidirectional": st.booleans(),
    "psn_start": st.one_of(st.none(), st.integers(0xFFFFE0, 0xFFFFFF)),
    "credits": st.sampled_from(["count", "unlimited"]),
    "sizes": st.sampled_from([(0, 64, 256, 700, 1500), (8, 4096), (100, 300, 2000)]),
})


def _run(kw: dict) -> tuple:
    result = simulate(GenConfig(name="prop", **kw))
    return result, load(result.frames)


@SETTINGS
@given(complete_configs)
def test_rc_rules_hold(kw):
    result, recs = _run(kw)
    assert not [r for r in recs if r.problems]
    assert check_rc(recs, result.truth) == []
    for c in result.truth["connections"]:
        req = c["a"]["requester"]
        if req["state"] == "RTS":
            assert req["messages_completed"] == req["messages_posted"]


@SETTINGS
@given(complete_configs)
def test_truth_retransmissions_equal_naive_repeat_scan(kw):
    result, recs = _run(kw)
    truth = result.truth
    scanned = sorted(f for frames in repeat_scan(recs, kw["pmtu"]).values() for f in frames)
    listed = sorted(r["frame"] for r in truth["retransmissions"])
    assert scanned == listed
    # Every retransmission has a reason, and NAK-caused ones point at their NAK.
    naks = {n["frame"]: n for n in truth["naks"]}
    for r in truth["retransmissions"]:
        assert r["reason"] in ("nak_seq", "timeout", "rnr", "implied_nak")
        if r["reason"] == "nak_seq":
            assert r["trigger_frame"] in naks
            assert pdiff(r["psn"], naks[r["trigger_frame"]]["psn"]) >= 0


incomplete_configs = st.fixed_dictionaries({
    "seed": st.integers(0, 10**6),
    "encap": st.sampled_from(["roce2", "roce2-v6", "ib"]),
    "messages": st.integers(5, 25),
    "loss": st.sampled_from([0.02, 0.05]),
    "loss_before_tap": st.sampled_from([0.0, 0.5, 1.0]),
    "reorder": st.sampled_from([0.0, 0.04]),
    "duplicate": st.sampled_from([0.0, 0.03]),
    "capture_loss": st.sampled_from([0.0, 0.03]),
})


@SETTINGS
@given(incomplete_configs)
def test_truth_accounts_for_every_repeat_when_the_capture_is_incomplete(kw):
    """With loss before the tap, capture loss, reordering and duplication, a repeat
    scan can no longer find everything; but every repeat it finds is a truth
    retransmission, a duplicate, or a delayed original, and the per-PSN counts of
    captured transmissions agree."""
    result, recs = _run(kw)
    truth = result.truth
    assert check_rc(recs, truth, complete=False) == []
    explained = {r["frame"] for r in truth["retransmissions"]}
    explained |= {e["frame"] for e in truth["events"] if e["kind"] in ("duplicate", "reorder")}
    repeats = repeat_scan(recs, truth["params"]["pmtu"])
    for frames in repeats.values():
        assert set(frames) <= explained
    # Captured request frames per (QP, PSN) = captured originals + retransmissions + copies.
    captured = Counter((r.qp, r.psn) for r in recs if r.kind == "req")
    missing = Counter((e["destqp"], e["psn"]) for e in truth["events"]
                      if e.get("packet") == "req" and (e["kind"] == "capture_loss" or
                                                       e.get("where") == "before_tap"))
    sent = Counter()
    for c in truth["connections"]:
        for side in ("a", "b"):
            if "requester" in c[side]:
                sent[c[side]["dest_qpn"]] += c[side]["requester"]["stats"]["sent"]
    dups = Counter(e["destqp"] for e in truth["events"] if e["kind"] == "duplicate")
    for qp, n in sent.items():
        on_wire = sum(v for (q, _), v in captured.items() if q == qp)
        lost = sum(v for (q, _), v in missing.items() if q == qp)
        assert on_wire == n - lost + dups[qp]


def test_go_back_n_after_a_lost_request():
    """Requests lost after the tap: the responder NAKs the gap once, the requester
    resends everything from the NAKed PSN, and the truth says so."""
    result = simulate(scenario("rc_loss", seed=10, loss_dir="a2b", loss_before_tap=0.0))
    recs = load(result.frames)
    truth = result.truth
    assert check_rc(recs, truth) == []
    nak = truth["naks"][0]
    after = [r for r in truth["retransmissions"] if r["trigger_frame"] == nak["frame"]]
    assert after and after[0]["psn"] == nak["psn"]
    assert all(r["frame"] > nak["frame"] for r in after)
    lost = [e for e in truth["events"] if e["kind"] == "loss"]
    assert lost[0]["psn"] == nak["psn"] and lost[0]["frame"] < nak["frame"]


def test_all_retransmission_reasons_occur():
    result = simulate(scenario("rc_loss", seed=10))
    reasons = Counter(r["reason"] for r in result.truth["retransmissions"])
    assert reasons["timeout"] and reasons["nak_seq"] and reasons["implied_nak"]
    assert check_rc(load(result.frames), result.truth, complete=False) == []


def test_psn_wrap():
    result = simulate(scenario("rc_wrap", seed=2, loss_before_tap=0.0))
    recs = load(result.frames)
    psns = [r.psn for r in recs if r.kind == "req"]
    assert max(psns) >= 0xFFFFF0 and min(psns) < 0x100
    assert check_rc(recs, result.truth) == []


def test_rnr_retry_waits_the_timer():
    result = simulate(scenario("rc_rnr", seed=1))
    rnrs = result.truth["rnr_naks"]
    assert rnrs
    for r in rnrs:
        if r["retry_frame"] is not None:
            assert r["retry_wait_ns"] >= r["timer_us"] * 1000
            gap = result.frames[r["retry_frame"] - 1].ts_ns - \
                result.frames[r["frame"] - 1].ts_ns
            assert gap >= r["timer_us"] * 1000
    assert check_rc(load(result.frames), result.truth) == []


def test_ack_coalescing_and_credits():
    """With ack_every=4 the responder ACKs several messages at once: some ACK PSN
    steps cover more than one message, and the MSN steps with them."""
    result = simulate(scenario("rc_clean", seed=3, ack_every=4, ack_delay_ns=20_000,
                               ops={"send": 1}, sizes=(64,), messages=40))
    recs = load(result.frames)
    acks = [r for r in recs if r.opcode == 0x11]
    assert len(acks) < 40
    assert max(b.msn - a.msn for a, b in zip(acks, acks[1:])) >= 2
    assert {r.syndrome for r in acks} <= set(range(0x1F))         # credit counts, not 0x1F
    assert check_rc(recs, result.truth) == []
