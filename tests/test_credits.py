"""Link-level credits: the replay kernel, its twin, and exactness against the generator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PCAPS
from hypothesis import given, settings
from hypothesis import strategies as st

from ibwire.analysis.credit_input import credit_columns
from ibwire.analysis.credits import Geometry, analyze_credits
from ibwire.engines.credits_events import packet_blocks
from ibwire.engines.credits_kernel import (
    EV_INIT,
    EV_LIMIT,
    EV_SEND,
    EV_SYNC,
    NO_SYNC,
    UNKNOWN,
    run,
)
from ibwire.gen.config import scenario
from ibwire.gen.sim import simulate


def _ev(rows):
    grp, et, t, val = zip(*rows)
    return (np.array(grp, np.int32), np.array(et, np.int8), np.array(t, np.int64),
            np.array(val, np.int32))


def test_wrap_gate_and_mismatch_vector():
    # TBS 4090 after init; CL 10 (wrapped): 16 credits. After a 10-block send (TBS wraps
    # to 4) a 20-block packet is short of credits; CL 14 still leaves it short; a SYNC
    # then says 27 blocks were sent, 3 more than the capture shows.
    rows = [(0, EV_INIT, 0, 4090), (0, EV_LIMIT, 1, 10), (0, EV_SEND, 2, 10),
            (0, EV_LIMIT, 5, 14), (0, EV_SEND, 6, 20), (0, EV_SYNC, 7, 27)]
    out = run(*_ev(rows))
    assert out["avail"].tolist() == [UNKNOWN, 16, 6, 10, -10, -13]
    assert out["missing"].tolist() == [NO_SYNC, 0, 0, 0, 0, 3]
    assert out["uncertain"].tolist() == [0, 1, 1, 1, 1, 1]
    # short from the first send until the second (which went without credits: a
    # violation the capture shows, closed there)
    assert out["stalls"].tolist() == [[2, 6, 20, 6, 2, 4]]
    rows[3] = (0, EV_LIMIT, 5, 40)
    out = run(*_ev(rows))
    assert out["stalls"].tolist() == [[2, 5, 20, 6, 2, 3]]


def test_blocks_count_lrh_through_vcrc():
    # PktLen in 4-byte words from LRH to ICRC; +2 bytes VCRC; 64-byte blocks.
    pktlen = [15, 16, 31, 32, 1023, 2047]
    assert [packet_blocks(n) for n in pktlen] == [1, 2, 2, 3, 64, 128]
    assert [packet_blocks.py_func(n) for n in pktlen] == [1, 2, 2, 3, 64, 128]


events = st.lists(st.tuples(st.integers(0, 3), st.sampled_from([EV_LIMIT, EV_SEND, EV_SYNC,
                                                                  EV_INIT]),
                            st.integers(0, 50), st.integers(0, 4095)), max_size=60)


@settings(max_examples=60, deadline=None)
@given(events)
def test_kernel_agrees_with_python_twin(rows):
    rows = sorted(rows, key=lambda r: (r[0], r[2]))
    if not rows:
        return
    args = _ev(rows)
    a, b = run(*args), run(*args, python=True)
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def _compare(cfg):
    """Every certain reconstructed value equals the generator's truth."""
    import os
    import tempfile

    res = simulate(cfg)
    path = os.path.join(tempfile.mkdtemp(), "c.pcap")
    res.write(path)
    half = cfg.prop_ns // 2
    cols = credit_columns(path)
    geo = Geometry(half, cfg.prop_ns - half, cfg.link_rate)
    rep = analyze_credits(cols, geo)
    twin = analyze_credits(cols, geo, python=True)
    assert rep.stalls == twin.stalls
    ev = rep.events
    seen = {"stalls": 0, "missing": 0, "points": 0}
    for di, dname in enumerate(("a2b", "b2a")):
        for vl, tr in res.truth["link"]["per_direction"][dname].items():
            m = ev["grp"] == di * 16 + int(vl)
            unc = np.flatnonzero(m & (ev["uncertain"] == 1))
            runs = np.split(unc, np.flatnonzero(np.diff(unc) != 1) + 1) if unc.size else []
            spans = [(ev["t"][r[0]], ev["t"][r[-1]]) for r in runs]

            def inspan(a, b, spans=spans):
                return any(not (b < s or a > e) for s, e in spans)

            sel = m & np.isin(ev["etype"], [EV_SEND, EV_LIMIT]) & (ev["avail"] != UNKNOWN)
            mine = {int(f) + 1: [int(t), int(a)] for f, t, a, u in
                    zip(ev["frame"][sel], ev["t"][sel], ev["avail"][sel], ev["uncertain"][sel])
                    if not u}
            truth = {f: [t, a] for f, t, a in tr["timeline"]}
            assert all(truth[f] == v for f, v in mine.items())
            assert all(f in mine for f, (t, _) in truth.items() if not inspan(t, t))
            got = {(s["start_ns"], s["end_ns"], s["blocks_needed"]) for s in rep.stalls
                   if (s["sender"], s["vl"]) == (di, int(vl)) and not s["uncertain"]}
            want = {tuple(x) for x in tr["starved"] if not inspan(x[0], x[1])}
            assert got == want
            miss = {int(f) + 1: int(x) for f, x, e in
                    zip(ev["frame"][m], ev["missing"][m], ev["etype"][m])
                    if e == EV_SYNC and x > 0}
            assert miss == {f: b for f, b in tr["missing_blocks"]}
            assert bool(spans) == bool(tr["missing_blocks"])
            seen["stalls"] += len(got)
            seen["missing"] += len(miss)
            seen["points"] += len(mine)
    seen["max_blocks_sent"] = max(v["blocks_sent"] for v in rep.per_vl.values())
    return seen


@pytest.mark.parametrize("seed,buf,extra", [
    (1, 9, {}), (2, 24, {}), (3, 100, {}), (4, 2048, {}), (5, 3000, {}),
    (6, 12, {"capture_loss": 0.05}), (7, 24, {"capture_loss": 0.08, "vls": 3,
                                              "connections": 3}),
    (8, 24, {"loss": 0.05, "loss_before_tap": 0.5, "timeout": 4}),
    (9, 40, {"corrupt": 0.05, "timeout": 4}),
    (10, 30, {"fc_period_ns": 1_000, "bidirectional": True}),
    (11, 16, {"prop_ns": 2_001, "rate_gbps": 25.0}),
])
def test_reconstruction_equals_truth(seed, buf, extra):
    seen = _compare(scenario("link_credits", seed=seed, link_credits=buf, **extra))
    assert seen["points"] > 50
    if buf <= 40:
        assert seen["stalls"] > 0
    if extra.get("capture_loss") or extra.get("loss"):
        assert seen["missing"] > 0


def test_reconstruction_across_12_bit_wrap():
    cfg = scenario("link_credits", seed=12, link_credits=96, messages=120, capture_loss=0.02,
                   sizes=(2000, 4000), pmtu=2048)
    seen = _compare(cfg)
    assert seen["max_blocks_sent"] > 4096 and seen["missing"] > 0


def test_sample_capture_and_vl15():
    rep = analyze_credits(credit_columns(str(PCAPS / "link_credits_ib.pcap")))
    assert rep.has_link_packets and rep.link_packets == 88
    assert {k for k in rep.per_vl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(v["buffer_blocks_inferred"] == 24 for v in rep.per_vl.values())
    assert all(v["mismatches"] == 0 for v in rep.per_vl.values())
    mads = analyze_credits(credit_columns(str(PCAPS / "fabric_mads_ib.pcap")))
    assert mads.vl15_packets > 0 and not mads.has_link_packets
    assert not (mads.events["vl"] == 15).any()


def test_linktype_247_pcapng_two_interfaces_equals_erf():
    """The same link as raw InfiniBand (LINKTYPE 247), one pcapng interface per
    direction: 6-byte frames are link packets; the replay gives the same answers."""
    import os
    import tempfile

    import ibwire
    from ibwire.capture.pcapng_writer import PcapngWriter
    from ibwire.constants import LINKTYPE_INFINIBAND

    src = str(PCAPS / "link_credits_ib.pcap")
    path = os.path.join(tempfile.mkdtemp(), "ib247.pcapng")
    with PcapngWriter(path) as w:
        w.add_interface(LINKTYPE_INFINIBAND)
        w.add_interface(LINKTYPE_INFINIBAND)
        for pkt in ibwire.read(src):
            body = pkt.data[pkt.ib_offset:]
            w.write(body, ts_ns=pkt.frame.ts_ns, interface=pkt["erf.flags.cap"])
    pkts = list(ibwire.read(path))
    assert sum(p.has("infiniband_link") for p in pkts) == 88
    assert not any(p.problems for p in pkts)
    geo = Geometry(100, 100, 100.0)
    a = analyze_credits(credit_columns(src), geo)
    b = analyze_credits(credit_columns(path), geo)
    assert a.per_vl == b.per_vl and a.stalls == b.stalls and a.link_packets == 88


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 10**6), st.integers(12, 4000), st.sampled_from([0.0, 0.05]),
       st.integers(1, 3))
def test_reconstruction_property(seed, buf, capture_loss, vls):
    """Any seed, buffer, capture loss and VL count: certain values equal the truth."""
    _compare(scenario("link_credits", seed=seed, link_credits=buf, capture_loss=capture_loss,
                      vls=vls, connections=vls, messages=15))


@pytest.mark.parametrize("seed,extra", [(1, {}), (2, {"link_credits": 100, "capture_loss": 0.05}),
                                        (3, {"corrupt": 0.05, "timeout": 4,
                                             "link_credits": 12})])
def test_receiver_occupancy_equals_truth(seed, extra):
    import os
    import tempfile

    from ibwire.analysis.occupancy import occupancy

    cfg = scenario("link_credits", seed=seed, **extra)
    res = simulate(cfg)
    path = os.path.join(tempfile.mkdtemp(), "o.pcap")
    res.write(path)
    half = cfg.prop_ns // 2
    geo = Geometry(half, cfg.prop_ns - half, cfg.link_rate)
    cols = credit_columns(path)
    occ = occupancy(cols, analyze_credits(cols, geo), geo)
    checked = 0
    for di, dname in enumerate(("a2b", "b2a")):
        for vl, tr in res.truth["link"]["per_direction"][dname].items():
            est = {int(f): (int(t), int(o)) for f, t, o, u in occ.get((di, int(vl)), [])
                   if not u}
            for frame, tick_ns, occupied in tr["receiver_at_updates"]:
                # exact when the update left as soon as it was made (not queued)
                if frame in est and est[frame][0] == tick_ns:
                    assert est[frame][1] == occupied
                    checked += 1
    assert checked >= 8
