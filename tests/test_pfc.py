"""PFC and PAUSE: decoding (tshark differential), pause intervals against the generator."""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import PCAPS, need_tshark
from hypothesis import given, settings
from hypothesis import strategies as st

import ibwire
from ibwire.analysis.credit_input import credit_columns
from ibwire.analysis.pfc import analyze_pfc, pause_intervals, storms
from ibwire.capture import PcapWriter
from ibwire.cli.tshark_text import format_field
from ibwire.constants import ETHERTYPE_MAC_CONTROL, LINKTYPE_ETHERNET, MACC_OP_PAUSE, MACC_OP_PFC
from ibwire.gen.config import scenario
from ibwire.gen.sim import simulate
from ibwire.headers.carriers import ETHERNET, MACC, MACC_PAUSE, MACC_PFC, pause_ns

TSHARK = ["tshark", "--disable-protocol", "tftp", "--disable-protocol", "rpcordma"]
PFC_FIELDS = ["macc.opcode", "macc.cbfc.enbv"] + [f"macc.cbfc.pause_time.c{i}"
                                                  for i in range(8)]
ETH = ETHERNET(dst="01:80:c2:00:00:01", src="02:00:00:00:00:0b", type=ETHERTYPE_MAC_CONTROL)


def _frame(*headers) -> bytes:
    data = b"".join(h.bytes() for h in headers)
    return data + bytes(60 - len(data))


FRAMES = [
    _frame(ETH, MACC(opcode=MACC_OP_PFC), MACC_PFC(enbv=0x08, c3=0xFFFF)),
    _frame(ETH, MACC(opcode=MACC_OP_PFC), MACC_PFC(enbv=0xA5, c0=1, c2=513, c5=0x1234,
                                                   c7=65535, c1=99)),
    _frame(ETH, MACC(opcode=MACC_OP_PFC), MACC_PFC(enbv=0x08, c3=0)),
    _frame(ETH, MACC(opcode=MACC_OP_PAUSE), MACC_PAUSE(pause_time=0xABCD)),
]


def test_hand_built_pfc_decodes():
    p = ibwire.decode(FRAMES[1], "eth")
    assert not p.problems
    assert p["macc.opcode"] == 0x0101 and p["macc.cbfc.enbv"] == 0xA5
    assert [p[f"macc.cbfc.pause_time.c{i}"] for i in range(8)] == [1, 99, 513, 0, 0, 0x1234,
                                                                   0, 65535]
    assert [p[f"macc.cbfc.enbv.c{i}"] for i in range(8)] == [1, 0, 1, 0, 0, 1, 0, 1]
    assert ibwire.decode(FRAMES[3], "eth")["macc.pause_time"] == 0xABCD
    bad = ibwire.decode(_frame(ETH, MACC(opcode=MACC_OP_PFC), MACC_PFC(enbv=0x1FF)), "eth")
    assert [m.reason for m in bad.problems] == ["8 MSbs of ENBV must be 0"]
    short = ibwire.decode(ETH.bytes() + MACC(opcode=MACC_OP_PFC).bytes() + b"\x00", "eth")
    assert short.problems and short.problems[0].layer == "macc_cbfc"


def test_pfc_frames_equal_tshark():
    need_tshark()
    path = os.path.join(tempfile.mkdtemp(), "pfc.pcap")
    with PcapWriter(path, LINKTYPE_ETHERNET) as w:
        for i, f in enumerate(FRAMES):
            w.write(f, ts_ns=10**18 + i)
    for fields in (PFC_FIELDS, ["macc.opcode", "macc.pause_time"]):
        args = TSHARK + ["-r", path, "-T", "fields"]
        for f in fields:
            args += ["-e", f]
        rows = subprocess.run(args, capture_output=True, text=True,
                              check=True).stdout.rstrip("\n").split("\n")
        assert len(rows) == len(FRAMES)
        for frame, row in zip(FRAMES, rows):
            pkt = ibwire.decode(frame, "eth")
            ours = [",".join(format_field(f, v) for v in pkt.values_of(f)) for f in fields]
            assert row.split("\t") == ours


def test_generated_pfc_frames_equal_tshark():
    need_tshark()
    path = str(PCAPS / "pfc_congestion_roce2.pcap")
    args = TSHARK + ["-r", path, "-Y", "macc", "-T", "fields", "-e", "frame.number"]
    for f in PFC_FIELDS:
        args += ["-e", f]
    rows = [r.split("\t") for r in subprocess.run(args, capture_output=True, text=True,
                                                  check=True).stdout.split("\n") if r]
    pkts = {i + 1: p for i, p in enumerate(ibwire.read(path)) if p.has("macc")}
    assert len(rows) == len(pkts) > 4
    for row in rows:
        pkt = pkts[int(row[0])]
        assert row[1:] == [",".join(format_field(f, v) for v in pkt.values_of(f))
                           for f in PFC_FIELDS]


def test_pause_rules_vector():
    g = 25.0
    assert pause_ns(2000, g) == 40960 and pause_ns(1, g) == 20
    ev = [(0, 0, "x", 3, 2000), (10_000, 1, "x", 3, 2000), (20_000, 2, "x", 3, 0),
          (30_000, 3, "x", 3, 100), (10**6, 4, "x", 3, 0), (10**6, 5, "x", 2, 0)]
    ivs = pause_intervals(ev, g)
    assert [(i["start_ns"], i["end_ns"], i["ended_by"], i["refreshes"]) for i in ivs] == [
        (0, 20_000, "xon", 1), (30_000, 32_048, "expired", 0)]
    one = pause_intervals([(0, 0, "x", 1, 1000), (20_000, 1, "x", 1, 1000),
                           (40_000, 2, "x", 1, 1000)], g)
    assert [(i["start_ns"], i["end_ns"], i["refreshes"]) for i in one] == [(0, 60_480, 2)]
    chain = pause_intervals([(0, 0, "x", 1, 1000), (20_480, 1, "x", 1, 1000)], g)
    assert [(i["start_ns"], i["end_ns"]) for i in chain] == [(0, 20_480), (20_480, 40_960)]
    assert storms(chain, 30_000) == [{"port": "x", "priority": 1, "start_ns": 0,
                                      "end_ns": 40_960, "duration_ns": 40_960, "pauses": 2}]
    assert storms(chain, 50_000) == []


@pytest.mark.parametrize("seed,extra", [
    (1, {}), (2, {"bidirectional": True, "drain_gbps": 3.0, "pfc_quanta": 100}),
    (3, {"pfc_send_xon": False, "pfc_quanta": 300}),
    (4, {"pfc_send_xon": False, "pfc_quanta": 300, "prop_ns": 1001, "bidirectional": True,
         "drain_gbps": 4.0}),
    (5, {"rate_gbps": 100.0, "drain_gbps": 20.0, "pfc_quanta": 65535, "pfc_xon_bytes": 0}),
    (6, {"encap": "roce2-v6", "ecn": 0.1, "loss": 0.02, "timeout": 4}),
])
def test_pause_intervals_equal_truth(seed, extra):
    assert len(_check(scenario("pfc_congestion", seed=seed, **extra))) >= 1


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 10**6), st.integers(50, 65535), st.sampled_from([2.0, 5.0, 9.0]),
       st.booleans(), st.booleans())
def test_pause_intervals_property(seed, quanta, drain, xon, bidir):
    _check(scenario("pfc_congestion", seed=seed, pfc_quanta=quanta, drain_gbps=drain,
                    pfc_send_xon=xon, bidirectional=bidir, messages=15))


def _check(cfg) -> list:
    res = simulate(cfg)
    path = os.path.join(tempfile.mkdtemp(), "p.pcap")
    res.write(path)
    rep = analyze_pfc(credit_columns(path), cfg.link_rate, cfg.prop_ns - cfg.prop_ns // 2)
    got = sorted((iv["port"], iv["priority"], iv["start_ns"], iv["end_ns"], iv["ended_by"],
                  iv["start_frame"], iv["end_frame"]) for iv in rep.intervals)
    want = sorted((d["pause_sender_mac"], iv["priority"], iv["start_ns"], iv["end_ns"],
                   iv["ended_by"], iv["start_frame"], iv["end_frame"])
                  for d in res.truth["pfc"]["paused"].values() for iv in d["intervals"])
    assert got == want
    # the paused priority carries the RoCE flows of the paused port
    for (_port, prio), flows in rep.flows.items():
        assert prio == 3 and flows and all(f["packets"] > 0 for f in flows)
    return got


def test_priority_maps():
    from ibwire.analysis.pfc import parse_prio_map, priorities

    cols = {"vlan.priority": np.array([5, -1, -1, -1]),
            "ip.dsfield.dscp": np.array([26, 26, 48, -1]),
            "ipv6.tclass": np.array([-1, -1, -1, 46 << 2 | 3])}
    assert priorities(cols, "auto").tolist() == [5, 3, 6, 5]
    assert priorities(cols, "pcp").tolist() == [5, -1, -1, -1]
    assert priorities(cols, "dscp").tolist() == [3, 3, 6, 5]
    assert priorities(cols, "dscp:26=4,46=1").tolist() == [4, 4, 6, 1]
    assert parse_prio_map("dscp:0x1a=3") == {26: 3}
    for bad in ("dscp:64=1", "dscp:1=8", "dscp:", "prio", "dscp:a=b"):
        with pytest.raises(ValueError):
            parse_prio_map(bad)


def test_gen_cli_pfc_flags():
    import json

    from ibwire.cli.main import main

    out = os.path.join(tempfile.mkdtemp(), "g.pcap")
    assert main(["gen", "--encap", "roce2", "--pfc", "--drain-gbps", "5", "--pfc-quanta",
                 "500", "--pfc-no-xon", "--seed", "3", "-q", "-o", out]) == 0
    truth = json.load(open(out.replace(".pcap", ".truth.json")))
    assert truth["params"]["pfc"] and truth["params"]["pfc_quanta"] == 500
    ivs = [iv for d in truth["pfc"]["paused"].values() for iv in d["intervals"]]
    assert ivs and all(iv["ended_by"] == "expired" for iv in ivs)
    rep = analyze_pfc(credit_columns(out), 25.0, 100)
    assert [(i["start_ns"], i["end_ns"]) for i in rep.intervals] == \
        [(i["start_ns"], i["end_ns"]) for i in ivs]
