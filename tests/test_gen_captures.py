"""Generated captures as files: they decode cleanly with ibwire and with tshark,
every CRC is good except on exactly the frames the truth says were corrupted, the
truth's frame numbers point at the packets it describes, link-level credit
accounting is consistent, management traffic sets up the connections that follow,
and the committed samples in pcaps/ are exactly what tools/gen_samples.py makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import need_tshark
from test_gen_support import load, tshark_problems

import ibwire
from ibwire.capture import open_capture, read_capture
from ibwire.gen import SCENARIOS, scenario, simulate

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PCAPS = os.path.join(REPO, "pcaps")

# A native and a RoCE variant of most scenarios, a few faults piled on.
CASES = {name: scenario(name, seed=3) for name in SCENARIOS}
CASES["rc_mix_v6"] = scenario("rc_clean", seed=5, encap="roce2-v6", loss=0.03, corrupt=0.03,
                              capture_loss=0.02, ecn=0.05, duplicate=0.02)
CASES["rc_mix_roce1"] = scenario("rc_clean", seed=6, encap="roce1", loss=0.03, corrupt=0.03,
                                 rnr=0.03, ecn=0.05, reorder=0.02)
CASES["rc_corrupt_ib"] = scenario("rc_corrupt", seed=4, encap="ib", corrupt=0.06, ecn=0.05)
CASES["credits_loss"] = scenario("link_credits", seed=2, loss=0.03, corrupt=0.02, cm=True,
                                 mads=True)

_results: dict[str, object] = {}


def result_of(name: str):
    if name not in _results:
        _results[name] = simulate(CASES[name])
    return _results[name]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("gen")
    for name in CASES:
        path = str(d / f"{name}.pcap")
        result_of(name).write(path)
        out[name] = path
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_decodes_cleanly_and_crcs_match_the_truth(name):
    result = result_of(name)
    recs = load(result.frames)
    truth = result.truth
    assert recs and all(not r.problems for r in recs), [r.problems for r in recs if r.problems]
    bad_icrc = {r.frame for r in recs if r.icrc == 0}
    bad_vcrc = {r.frame for r in recs if r.vcrc == 0}
    corrupted = set(truth["corrupted_frames"])
    assert bad_icrc == corrupted
    if result.config.native:
        assert bad_vcrc == corrupted
    assert all(r.icrc == 1 for r in recs if r.kind in ("req", "resp", "ud", "mad", "cnp")
               and r.frame not in corrupted)
    assert all(r.lpcrc == 1 for r in recs if r.kind == "link")
    assert truth["capture"]["frames"] == len(result.frames)
    assert sum(truth["opcode_counts"].values()) == sum(1 for r in recs if r.opcode >= 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tshark_sees_no_malformed_packets(name, written):
    need_tshark()
    assert tshark_problems(written[name]) == []


def test_wireshark_mistake_six_byte_link_packets(tmp_path):
    """A link packet is 6 bytes on the wire; Wireshark 4.0 reads it as if an LRH
    followed and marks it malformed, with no FCTBS/FCCL. ibwire decodes it whole."""
    need_tshark()
    result = simulate(scenario("link_credits", seed=1, messages=4))
    path = str(tmp_path / "link.pcap")
    result.write(path, "pcap")
    link = [f for f in result.frames if f.data[8] & 0x7F == 25]
    assert link and all(len(f.data) == 16 + 6 for f in link)     # ERF header + 6 bytes
    pkt = ibwire.decode(link[0].data, link[0].linktype)
    assert pkt.problems == [] and pkt.lpcrc_status == 1 and pkt.has("infiniband_link.fctbs")
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.number",
                          "-e", "_ws.malformed", "-e", "infiniband_link.fctbs",
                          "-e", "frame.protocols"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [line.split("\t") for line in out if line.endswith(":infiniband_link")]
    assert len(rows) == len(link)
    assert all(r[1] and not r[2] for r in rows)   # malformed, and no FCTBS shown


@pytest.mark.parametrize("fmt", ["pcapng", "erf"])
def test_other_formats(tmp_path, fmt):
    result = simulate(scenario("link_credits", seed=1, messages=10, mads=True))
    path = str(tmp_path / f"x.{fmt}")
    result.write(path, fmt)
    frames = read_capture(path)
    assert [f.data for f in frames] == [f.data for f in result.frames]
    assert [f.ts_ns for f in frames] == [f.ts_ns for f in result.frames]
    with open(str(tmp_path / "x.truth.json")) as f:
        assert json.load(f)["capture"]["format"] == fmt
    need_tshark()
    assert tshark_problems(path) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_truth_points_at_the_right_frames(name):
    result = result_of(name)
    recs = {r.frame: r for r in load(result.frames)}
    truth = result.truth
    for n in truth["naks"]:
        if n["frame"] is not None:
            r = recs[n["frame"]]
            assert (r.opcode, r.psn, r.syndrome) == (0x11, n["psn"], 0x60 | n["code"])
    for n in truth["rnr_naks"]:
        if n["frame"] is not None:
            r = recs[n["frame"]]
            assert (r.opcode, r.psn, r.syndrome) == (0x11, n["psn"], 0x20 | n["timer_code"])
    for x in truth["retransmissions"]:
        if x["frame"] is not None:
            r = recs[x["frame"]]
            assert (r.kind, r.opcode, r.qp, r.psn) == ("req", x["opcode"], x["destqp"],
                                                       x["psn"])
    for e in truth["events"]:
        if e["kind"] == "rnr_injected":
            continue
        if e["frame"] is None:
            assert e["kind"] in ("loss", "capture_loss", "reorder", "ecn_mark", "corrupt",
                                 "duplicate")
            assert 0 <= e["after_frame"] <= len(recs)
            continue
        r = recs[e["frame"]]
        assert (r.opcode, r.qp, r.psn) == (e["opcode"], e["destqp"], e["psn"])
        if e["kind"] == "ecn_mark":
            assert r.ce
        if e["kind"] == "duplicate":
            orig = recs[e["original_frame"]]
            assert e["original_frame"] < e["frame"]
            assert (orig.opcode, orig.psn) == (r.opcode, r.psn)
    marked = {e["frame"] for e in truth["events"] if e["kind"] == "ecn_mark"}
    assert {r.frame for r in recs.values() if r.ce} == marked
    for c in truth["cnps"]:
        r = recs[c["frame"]]
        assert (r.opcode, r.becn) == (0x81, True) and recs[c["cause_frame"]].ce
        assert c["cause_frame"] < c["frame"]
    for b in truth["becn_marked_responses"]:
        assert recs[b["frame"]].becn and recs[b["cause_frame"]].ce


def test_cnps_go_to_the_congested_senders():
    result = result_of("ud_cnp")
    truth = result.truth
    senders = {c["a"]["qpn"] for c in truth["connections"]} | \
        {u["src_qpn"] for u in truth["ud"]}
    assert truth["cnps"] and {c["destqp"] for c in truth["cnps"]} <= senders
    assert {c["destqp"] for c in truth["cnps"]} == senders       # both RC and UD
    gap = truth["params"]["cnp_gap_ns"]
    by_qp: dict[int, list[int]] = {}
    for c in truth["cnps"]:
        by_qp.setdefault(c["destqp"], []).append(c["ts_ns"])
    for ts in by_qp.values():
        assert all(b - a >= gap for a, b in zip(ts, ts[1:]))


# -- link-level flow control ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["link_credits", "credits_loss"])
def test_credit_accounting_from_the_capture(name):
    """Rebuild each sender's TBS from the data packets in the capture: it matches the
    FCTBS of its next flow-control packet, and every data packet was within the
    credit limit the peer had advertised by the time it was sent."""
    result = result_of(name)
    cfg = result.config
    recs = load(result.frames)
    truth = result.truth
    lossy = bool(cfg.loss or cfg.corrupt)
    for d, peer in (("a2b", "b2a"), ("b2a", "a2b")):
        for vl in range(cfg.vls):
            tbs, fcs = 0, 0
            limit = None
            peer_fc = [r for r in recs if r.kind == "link" and r.dir == peer and r.vl == vl]
            for r in recs:
                if r.dir != d:
                    continue
                if r.kind == "link" and r.vl == vl:
                    assert r.fctbs == tbs % 4096, (d, vl, r.frame)
                    fcs += 1
                elif r.opcode >= 0 and r.vl == vl:
                    tbs += r.wire_blocks
                    # FCCL known at the sender when it started sending this packet.
                    wire = r.size - 16                                 # ERF header
                    sent_at = r.ts - cfg.prop_ns // 2 - int(wire * 8 / cfg.link_rate)
                    half = cfg.prop_ns - cfg.prop_ns // 2
                    known = [f for f in peer_fc if f.ts + half <= sent_at]
                    limit = known[-1].fccl if known else 0
                    assert (limit - tbs) % 4096 <= 2048, (d, vl, r.frame, limit, tbs)
            assert fcs >= 2
            stats = truth["link"]["per_direction"][d][str(vl)]
            assert stats["final_tbs"] == tbs % 4096
            if not lossy:
                assert stats["receiver_overruns"] == 0


def test_credit_stalls_are_released_by_flow_control_packets():
    result = result_of("link_credits")
    recs = {r.frame: r for r in load(result.frames)}
    link = result.truth["link"]
    assert link["buffer_blocks"] == result.config.link_credits
    n = 0
    for d, per_vl in link["per_direction"].items():
        for vl, stats in per_vl.items():
            for st in stats["stalls"]:
                n += 1
                assert st["end_ns"] >= st["start_ns"]
                assert st["credits_available"] < st["blocks_needed"]
                fc = recs[st["released_by_frame"]]
                assert fc.kind == "link" and fc.vl == int(vl) and fc.dir != d
                assert fc.ts <= st["end_ts_ns"] and fc.ts >= st["start_ts_ns"] - 10_000
    assert n >= 4


# -- management ------------------------------------------------------------------------------
def test_mads_set_up_the_connections_that_follow():
    result = result_of("fabric_mads")
    truth = result.truth
    recs = load(result.frames)
    mads = [r for r in recs if r.kind == "mad"]
    frames = result.frames
    smps = [m for m in mads if m.qp == 0]
    assert len(smps) == 8 and all(m.vl == 15 for m in smps)
    from ibwire import decode
    for m in smps:
        p = decode(frames[m.frame - 1].data, frames[m.frame - 1].linktype)
        assert p["infiniband.lrh.dlid"] == p["infiniband.lrh.slid"] == 0xFFFF
        assert p.payload[1] == 0x81
    mgmt = truth["management"]
    assert [m["class"] for m in mgmt[:10]] == [0x81] * 8 + [0x03] * 2
    for i, conn in enumerate(truth["connections"]):
        req = next(m for m in mgmt if m["class"] == 7 and m["attribute"] == 0x10
                   and m["frame"] > (mgmt[10 + 3 * i - 1]["frame"] if i else 0))
        p = decode(frames[req["frame"] - 1].data, frames[req["frame"] - 1].linktype)
        body = p.payload[24:]
        assert int.from_bytes(body[32:35], "big") == conn["a"]["qpn"]
        assert int.from_bytes(body[44:47], "big") == conn["a"]["requester"]["start_psn"]
        rep = decode(frames[req["frame"]].data, frames[req["frame"]].linktype).payload[24:]
        assert int.from_bytes(rep[12:15], "big") == conn["b"]["qpn"]
        rtu = mgmt[mgmt.index(req) + 2]
        assert rtu["attribute"] == 0x14
        first_rc = min(r.frame for r in recs if r.kind == "req" and r.qp == conn["b"]["qpn"])
        last_rc = max(r.frame for r in recs if r.qp in (conn["a"]["qpn"], conn["b"]["qpn"])
                      and r.kind in ("req", "resp"))
        assert rtu["frame"] < first_rc
        dreq = [m for m in mgmt if m["class"] == 7 and m["attribute"] == 0x15]
        assert all(m["frame"] > last_rc for m in dreq)
    assert [m["attribute"] for m in mgmt[-4:]] == [0x15, 0x16, 0x15, 0x16]


# -- committed samples -------------------------------------------------------------------------
def _samples():
    sys.path.insert(0, os.path.join(REPO, "tools"))
    try:
        import gen_samples
    finally:
        sys.path.pop(0)
    return gen_samples


def test_samples_are_committed_and_reproducible():
    gs = _samples()
    if not all(os.path.exists(os.path.join(PCAPS, s.file)) for s in gs.SAMPLES):
        pytest.skip("pcaps/ samples not generated yet (python tools/gen_samples.py)")
    total = 0
    for s in gs.SAMPLES:
        path = os.path.join(PCAPS, s.file)
        tpath = path[:-5] + ".truth.json"
        total += os.path.getsize(path) + os.path.getsize(tpath)
        result = gs.build(s)
        assert s.missing(result.truth) == []
        frames = read_capture(path)
        assert [f.data for f in frames] == [f.data for f in result.frames], s.file
        with open(tpath) as f:
            doc = json.load(f)
        assert doc["capture"]["file"] == s.file and doc["seed"] == s.seed
        assert doc["retransmissions"] == json.loads(json.dumps(result.truth["retransmissions"]))
        with open_capture(path) as cap:
            assert sum(1 for _ in cap) == doc["capture"]["frames"]
    assert total < 2 * 1024 * 1024
