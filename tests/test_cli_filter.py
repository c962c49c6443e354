"""`-Y` through the CLI: the frames each operator selects are the frames tshark selects.

The filter engine is dfilter.py's; these tests check the CLI wiring: frame.*,
aggregates (ip.addr, udp.port), stack-only protocols (tcp, data) and columns
reach the filter, and errors come out as tshark's caret display with exit 2.
"""

from __future__ import annotations

import pytest
from test_cli_common import capture, lines, run_cli, tshark

CM = ("public", "roce-v2-rxe-cm-write-read.pcap")
RNR = ("rxe", "d1_send_rnr.wire.pcap")
SMP = ("mad", "ibroute.pcap")
V6 = ("rxe", "e1_send_v6_clean.wire.pcap")

CASES = [
    ("eq", CM, "infiniband.bth.opcode == 17"),
    ("ne", CM, "infiniband.bth.opcode != 17"),
    ("gt", CM, "infiniband.bth.psn > 12726937"),
    ("lt", CM, "infiniband.bth.psn < 12726937"),
    ("ge", CM, "infiniband.bth.psn >= 12726937"),
    ("le", CM, "infiniband.bth.psn <= 12726937"),
    ("hex", CM, "infiniband.bth.destqp == 0x000017"),
    ("in", RNR, "infiniband.aeth.syndrome in {44, 96}"),
    ("in-range", RNR, "infiniband.bth.opcode in {0..2}"),
    ("and-or-not", RNR, "infiniband.aeth && !(infiniband.aeth.syndrome == 31) || "
     "frame.number == 3"),
    ("presence", CM, "infiniband.reth"),
    ("not-presence", CM, "not infiniband"),
    ("contains-string", CM, 'frame.protocols contains "infiniband:data"'),
    ("contains-bytes", CM, "infiniband.bth contains 11:00:ff:ff"),
    ("matches", CM, 'frame.protocols matches "^eth:ethertype:ip:udp:infiniband$"'),
    ("slice", CM, "eth.src[0:3] == 52:54:00 && infiniband.bth[4:4] == 00:00:00:17"),
    ("slice-last", CM, "infiniband.bth[-1:1] == 98"),
    ("ip-aggregate", CM, "ip.addr == 192.168.2.24 && udp.port == 4791"),
    ("tcp-protocol", RNR, "tcp && frame.len > 66"),
    ("frame-number", RNR, "frame.number >= 300 && frame.number <= 310"),
    ("time", CM, "frame.time_relative > 5"),
    ("lid", SMP, "infiniband.lrh.dlid == 3 && infiniband.bth.psn > 0"),
    ("ipv6", V6, "ipv6.src == fd00::2 and infiniband.aeth.msn <= 3"),
    ("ip-version-6", V6, "ip.version == 6 && infiniband.bth.opcode == 17 && frame.number < 60"),
    ("udp-port-set", V6, "udp.port in {4791} && data.len > 1000 && frame.number < 40"),
]


@pytest.mark.parametrize("name,where,text", CASES, ids=[c[0] for c in CASES])
def test_filter_selects_what_tshark_selects(name, where, text):
    path = capture(*where)
    want = lines(tshark("-r", path, "-Y", text, "-T", "fields", "-e", "frame.number"))
    rc, out, err = run_cli("dump", "-r", path, "-Y", text, "-T", "fields", "-e",
                           "frame.number")
    assert rc == 0, err
    assert lines(out) == want
    assert want, "a case that selects nothing proves little"


def test_filter_count_and_summary_lines():
    """-Y with the default output: the same frames, one summary line each."""
    path = capture(*CM)
    rc, out, _ = run_cli("dump", "-r", path, "-Y", "infiniband.aeth")
    assert rc == 0
    assert [ln.split()[0] for ln in lines(out)] == ["5", "7", "10"]


def test_malformed_filter_caret():
    path = capture(*CM)
    rc, out, err = run_cli("dump", "-r", path, "-Y", "infiniband.bth.psn = 3")
    assert rc == 2 and out == ""
    assert err == ('ibwire: "=" was unexpected in this context.\n'
                   "    infiniband.bth.psn = 3\n"
                   "                       ^\n")


def test_unknown_field_in_filter():
    path = capture(*CM)
    rc, out, err = run_cli("dump", "-r", path, "-Y", "infiniband.bth.nosuch == 1")
    assert rc == 2 and out == ""
    first, expr, caret = err.split("\n")[:3]
    assert first.startswith("ibwire: ") and "infiniband.bth.nosuch" in first
    assert expr == "    infiniband.bth.nosuch == 1"
    assert caret == "    ^" + "~" * (len("infiniband.bth.nosuch") - 1)
    assert "Traceback" not in err


def test_filter_in_stats_spec():
    path = capture(*CM)
    rc, out, _ = run_cli("dump", "-q", "-r", path, "-z", "io,phs,infiniband.aeth")
    assert rc == 0
    assert "Filter: infiniband.aeth" in out
    assert "      infiniband                         frames:3 bytes:2234" in out
