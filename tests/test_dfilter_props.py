"""Display filters (`ibwire.cli.dfilter`): Hypothesis properties, and a differential run
against tshark 4.0 on a public capture (skipped without tshark)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dfilter_helpers import EMPTY, FIELDS, P1, P2, F, Pkt, v4
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibwire.cli.dfilter import FilterError

# ----------------------------------------------------------------------------- properties
TOKENS = ["infiniband.bth.psn", "ip.addr", "infiniband.payload", "test.text", "eth.src",
          "infiniband.grh.sgid", "infiniband.bth.a", "frame.time_relative", "test.label",
          "infiniband", "arp", "foo.bar", "==", "!=", "===", "!==", "~=", ">", "<=", "=", "!",
          "&&", "||", "^^", "and", "or", "not", "xor", "in", "contains", "matches", "~",
          "any", "all", "(", ")", "{", "}", "[", "]", ",", "..", ":", "-", "0x1f", "017", "08",
          "82", "-1", "1.5", "true", '"', '"a\\"b"', '"\\x41"', "'a'", "'", "r\"\\d\"",
          "01:02", "fe80::1", "10.0.0.0/24", "52:54:00:da:f9:2d", "[0:2]", "[-1]", "[1-2]",
          "{1..5}", "\\", "\x00", "é", "#", "$", "&", "|"]


def _never_crash(text: str) -> None:
    try:
        f = F(text)
    except FilterError as e:
        assert isinstance(e.format(), str) and isinstance(e.caret(), str)
        assert e.position is None or 0 <= e.position <= len(text)
        return
    for pkt in (P1, P2, EMPTY):
        assert f.matches(pkt) in (True, False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_arbitrary_text_only_raises_filter_error(text):
    _never_crash(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS) | st.text(max_size=3), max_size=30),
       st.sampled_from([" ", ""]))
def test_token_soup_only_raises_filter_error(parts, sep):
    _never_crash(sep.join(parts))


def _quote(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


_HEXSEP = st.sampled_from([":", "-", ".", ""])
_INTS = {"infiniband.bth.psn": 0xFFFFFF, "infiniband.bth.opcode": 0xFF,
         "infiniband.lrh.dlid": 0xFFFF, "infiniband.reth.va": 2**64 - 1}


@st.composite
def _int_literal(draw, top):
    v = draw(st.integers(0, top))
    form = draw(st.sampled_from(["{}", "0x{:x}", "0{:o}", "0b{:b}"]))
    return (form.format(v) if v or form != "0{:o}" else "0"), v


@st.composite
def _bytes_literal(draw, n=None):
    data = draw(st.binary(min_size=n or 1, max_size=n or 8))
    sep = draw(_HEXSEP)
    return sep.join(f"{b:02x}" for b in data), data


@st.composite
def comparisons(draw):
    kind = draw(st.sampled_from(["int", "bool", "ip", "gid", "mac", "bytes", "text", "set",
                                 "slice", "presence", "f2f"]))
    rel = draw(st.sampled_from(["==", "!=", ">", "<", ">=", "<=", "eq", "ne", "gt", "lt",
                                "ge", "le", "===", "!==", "~=", "any_eq", "all_ne"]))
    if kind == "int":
        name = draw(st.sampled_from(sorted(_INTS)))
        return f"{name} {rel} {draw(_int_literal(_INTS[name]))[0]}"
    if kind == "bool":
        lit = draw(st.sampled_from(["0", "1", "true", "false", "TRUE", "False", "7"]))
        return f"infiniband.bth.a {rel} {lit}"
    if kind == "ip":
        addr = ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1)))
        cidr = draw(st.sampled_from(["", f"/{draw(st.integers(0, 32))}"]))
        return f"ip.addr {rel} {addr}{cidr}"
    if kind == "gid":
        addr = ipaddress.IPv6Address(draw(st.integers(0, 2**128 - 1)))
        return f"infiniband.grh.sgid {rel} {addr}"
    if kind == "mac":
        return f"eth.src {rel} {draw(_bytes_literal(6))[0]}"
    if kind == "bytes":
        op = draw(st.sampled_from([rel, "contains"]))
        return f"infiniband.payload {op} {draw(_bytes_literal())[0]}"
    if kind == "text":
        op = draw(st.sampled_from([rel, "contains", "matches", "~"]))
        s = draw(st.text(max_size=10))
        if op in ("matches", "~"):
            s = draw(st.sampled_from(["^C", "quest$", "a|b", "[a-z]+", "(?-i)x", "\\d*"]))
        return f"test.text {op} {_quote(s)}"
    if kind == "set":
        items = draw(st.lists(st.integers(0, 99), min_size=1, max_size=5))
        parts = [str(i) if i % 3 else f"{i}..{i + 5}" for i in items]
        sep = draw(st.sampled_from([", ", " ", ","]))
        neg = draw(st.sampled_from(["", "not "]))
        return f"infiniband.bth.psn {neg}in {{{sep.join(parts)}}}"
    if kind == "slice":
        sl = draw(st.sampled_from(["[0]", "[0:2]", "[1-3]", "[-1]", "[2:]", "[:3]", "[0,2]"]))
        return f"infiniband.payload{sl} {rel} {draw(_bytes_literal())[0]}"
    if kind == "f2f":
        return f"infiniband.lrh.dlid {rel} infiniband.lrh.slid"
    return draw(st.sampled_from(["infiniband", "arp", "ip", "infiniband.bth.psn",
                                 "test.label", "infiniband.payload[3]"]))


def _combine(children):
    return st.one_of(
        st.tuples(children, st.sampled_from([" and ", " && ", " or ", " || ", " xor ", " ^^ "]),
                  children).map("".join),
        children.map(lambda c: f"!({c})"), children.map(lambda c: f"not {c}"),
        children.map(lambda c: f"({c})"))


FILTERS = st.recursive(comparisons(), _combine, max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILTERS)
def test_generated_filters_compile_and_negate(text):
    f = F(text)
    neg = F(f"!({text})")
    both = F(f"({text}) && ({text})")
    for pkt in (P1, P2, EMPTY):
        r = f.matches(pkt)
        assert r in (True, False)
        assert neg.matches(pkt) is (not r)
        assert both.matches(pkt) is r


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_string_literal_round_trip(s):
    assert F(f"test.text == {_quote(s)}").matches(Pkt({"test.text": [s]}))
    assert F(f"test.text contains {_quote(s)}").matches(Pkt({"test.text": [f"<{s}>"]})) is bool(s)


@settings(max_examples=200, deadline=None)
@given(_bytes_literal(), st.integers(0, 2**24 - 1), _int_literal(0xFFFFFF))
def test_bytes_and_integer_round_trip(blit, n, ilit):
    text, data = blit
    assert F(f"infiniband.payload == {text}").matches(Pkt({"infiniband.payload": [data]}))
    assert F(f"infiniband.bth.psn == {ilit[0]}").matches(Pkt({"infiniband.bth.psn": [ilit[1]]}))
    assert F(f"infiniband.bth.psn == {n:#x}").matches(Pkt({"infiniband.bth.psn": [n]}))


# ----------------------------------------------------------------------------- tshark
CAPTURE = Path("/work/shared/captures/public/roce-v2-rxe-cm-write-read.pcap")
TSHARK_FIELDS = [
    "infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp", "infiniband.bth.a",
    "infiniband.bth.se", "infiniband.bth.p_key", "infiniband.aeth.msn", "infiniband.reth.dmalen",
    "infiniband.invariant.crc", "infiniband.bth", "ip.src", "ip.dst", "ip.addr", "eth.src",
    "eth.dst", "eth.addr", "udp.srcport", "udp.dstport", "frame.protocols", "frame.time_relative"]
DIFF_FILTERS = [
    "infiniband", "!infiniband", "arp || ip", "infiniband.bth.psn == 82",
    "infiniband.bth.psn != 82", "infiniband.bth.psn ~= 82", "infiniband.bth.psn == 0122",
    "ip.addr == 192.168.2.25", "ip.addr != 192.168.2.25", "ip.addr !== 192.168.2.25",
    "ip.addr === 192.168.2.25", "ip.src == 192.168.2.24/31", "all ip.addr > 192.168.2.24",
    "infiniband.bth.psn in {80..83, 45}", "infiniband.bth.psn not in {80..83, 45}",
    "infiniband.bth.destqp == 0x11 && infiniband.bth.a",
    "infiniband.bth.psn == 82 || infiniband.bth.psn == 45 && ip.src == 192.168.2.24",
    "!(infiniband.bth.psn == 82)", "infiniband.bth.a == false", "infiniband.bth.a == TRUE",
    "infiniband.bth[0:2] == 64:00", "infiniband.bth[-1] == 52", "infiniband.bth[10-11] == 00:52",
    "infiniband.bth[0:13] contains 64", "infiniband.bth[0] == 0x0d", "infiniband.bth[0:2] == 0d0",
    "infiniband.bth contains ff:ff:00", 'infiniband.bth[0:2] == "d\\x00"',
    "infiniband.bth[0:1] < 0f", "infiniband.bth[0:2] > 64", "infiniband.bth[0:2] < 64:00:00",
    "infiniband.bth[0:2] >= 0e:00", 'infiniband.bth[0:2] < "e"',
    'frame.protocols < "eth:ethertype:ipx"', "eth.src[0:3] == 52.54.00",
    "eth.addr == 52:54:00:8b:2d:12", "eth.src == 5254.008b.2d12", 'frame.protocols contains "arp"',
    'frame.protocols matches "ARP"', 'frame.protocols matches "(?-i)ARP"',
    'frame.protocols matches r"\\bdata$"', 'frame.protocols == "eth:ethertype:arp"',
    "frame.time_relative > 5.25", "frame.time_relative in {5 .. 5.25}",
    "infiniband.aeth.msn <= 2", "infiniband.bth.psn > infiniband.bth.opcode",
    "ip.src != ip.dst", "udp.srcport == udp.dstport", "infiniband.reth.dmalen >= 0x1000",
]


def _tshark(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tshark", "-n", "-r", str(CAPTURE), *args],
                          capture_output=True, text=True, timeout=120)


def _packets_from_tshark() -> list[tuple[int, Pkt]]:
    args = ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"]
    for name in TSHARK_FIELDS:
        args += ["-e", name]
    packets = []
    for line in _tshark(*args).stdout.splitlines():
        cols = line.split("\t")
        fields: dict[str, list] = {}
        for name, col in zip(TSHARK_FIELDS, cols[1:]):
            if not col:
                continue
            ftype = FIELDS[name]
            items = [col] if ftype == "string" else col.split(",")
            conv = {"ipv4": v4, "ether": lambda s: bytes.fromhex(s.replace(":", "")),
                    "bytes": bytes.fromhex, "string": str, "double": float}.get(
                        ftype, lambda s: int(s, 0))
            fields[name] = [conv(x) for x in items]
        protocols = set(fields.get("frame.protocols", [""])[0].split(":")) | {"frame"}
        packets.append((int(cols[0]), Pkt(fields, protocols)))
    return packets


@pytest.mark.skipif(shutil.which("tshark") is None or not CAPTURE.exists(),
                    reason="needs tshark and the public capture")
def test_same_frames_as_tshark():
    packets = _packets_from_tshark()
    assert len(packets) == 16
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        runs = pool.map(lambda f: _tshark("-Y", f, "-T", "fields", "-e", "frame.number"),
                        DIFF_FILTERS)
    for text, run in zip(DIFF_FILTERS, runs):
        assert run.returncode == 0, (text, run.stderr)
        want = [int(x) for x in run.stdout.split()]
        flt = F(text)
        got = [n for n, pkt in packets if flt.matches(pkt)]
        assert got == want, text
