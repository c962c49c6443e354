"""Hypothesis properties: valid packets of every opcode and encapsulation round
trip through encode/decode; arbitrary bytes never make decode raise."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibwire import ETHERNET, GRH, IPV4, IPV6, LRH, UDP, CrcStatus, decode, encode
from ibwire.headers import BTH, ETH_LAYOUTS, OPCODES

VALID = [op for op in OPCODES if op.valid]
ENCAPS = ["ib", "ib-grh", "roce1", "roce2", "roce2-v6"]


def _values(layout, draw):
    out = {}
    for f in layout.wire:
        if f.reserved:
            continue
        if f.kind == "int":
            out[f.name] = draw(st.integers(0, f.mask))
        else:
            out[f.name] = draw(st.binary(min_size=f.bits // 8, max_size=f.bits // 8))
    return out


@st.composite
def packets(draw, op=None):
    op = op or draw(st.sampled_from(VALID))
    encap = draw(st.sampled_from(ENCAPS))
    bth = _values(BTH, draw)
    bth.update(opcode=op.code, padcnt=0, tver=0)
    if op.transport == "UD":
        bth["destqp"] = draw(st.integers(2, 0xFFFFFF))   # QP0/QP1 carry MADs: tested apart
    if encap.startswith("roce"):
        bth.update(fecn=0, becn=0)                       # variant bits: decoded, not kept
    ethv = [(ETH_LAYOUTS[name], _values(ETH_LAYOUTS[name], draw)) for name in op.headers]
    for lay, v in ethv:
        if lay.name == "deth":
            v["srcqp"] = max(v["srcqp"], 2)              # SrcQP 0/1 also means a MAD
    payload = draw(st.binary(max_size=80)) if op.payload else b""
    if payload[:1] and op.transport == "UD":
        payload = b"\xa5" + payload[1:]                  # not an IPoIB EtherType
    headers = [BTH(**bth)] + [lay(**v) for lay, v in ethv]
    grh = GRH(tclass=draw(st.integers(0, 255)), flowlabel=draw(st.integers(0, 0xFFFFF)),
              hoplmt=draw(st.integers(0, 255)), sgid=draw(st.binary(min_size=16, max_size=16)),
              dgid=draw(st.binary(min_size=16, max_size=16)))
    eth = ETHERNET(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0a")
    if encap == "ib":
        parts = [LRH(vl=draw(st.integers(0, 14)), sl=draw(st.integers(0, 15)),
                     dlid=draw(st.integers(1, 0xBFFF)), slid=draw(st.integers(1, 0xBFFF)))]
    elif encap == "ib-grh":
        parts = [LRH(dlid=draw(st.integers(1, 0xFFFF)), slid=1), grh]
    elif encap == "roce1":
        parts = [eth, grh]
    elif encap == "roce2":
        parts = [eth, IPV4(src="10.0.0.1", dst="10.0.0.2", ttl=draw(st.integers(1, 255))),
                 UDP(srcport=draw(st.integers(0xC000, 0xFFFF)))]
    else:
        parts = [eth, IPV6(src="fd00::1", dst="fd00::2"), UDP(srcport=0xC001)]
    return encap, op, headers, payload, encode(*parts, *headers, payload=payload)


_ENCAP = {"ib": "ib", "ib-grh": "ib", "roce1": "eth", "roce2": "eth", "roce2-v6": "eth"}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets())
def test_valid_packets_of_every_opcode_round_trip(sample):
    encap, op, headers, payload, data = sample
    pkt = decode(data, _ENCAP[encap])
    assert pkt.problems == []
    assert pkt.opcode == op
    assert pkt.icrc_status is CrcStatus.GOOD
    if encap.startswith("ib"):
        assert pkt.vcrc_status is CrcStatus.GOOD
    for hdr in headers:
        lay = pkt.layer(hdr.layout.name)
        assert lay is not None
        for name, value in hdr.values.items():
            if name != "padcnt":
                assert lay.values[name] == value, (hdr.layout.name, name)
    assert pkt.payload == payload
    assert len(pkt.pad) == (-len(payload)) & 3
    assert encode(pkt) == data
    assert encode(pkt, fill=True) == data


def test_every_valid_opcode_is_generated_by_the_strategy():
    # Not a sample: make sure each opcode round trips at least once.
    for op in VALID:
        @settings(max_examples=3, deadline=None, database=None)
        @given(packets(op=op))
        def one(sample):
            encap, _, _, _, data = sample
            pkt = decode(data, _ENCAP[encap])
            assert pkt.problems == [] and encode(pkt) == data
        one()


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["ib", "ib_link", "roce1", "roce2", "eth",
                                                 "ip", "erf", 247, 197, 1, 9999]))
def test_decode_never_raises_and_marks_what_it_cannot_read(data, encap):
    pkt = decode(data, encap)
    for m in pkt.problems:
        assert isinstance(m.layer, str) and m.reason
        assert 0 <= m.offset <= len(data)
        assert "internal error" not in m.reason, m
    assert encode(pkt) == data


@settings(max_examples=800, deadline=None)
@given(packets(), st.data())
def test_truncated_and_mutated_valid_packets_never_raise(sample, data):
    encap, _, _, _, raw = sample
    cut = data.draw(st.integers(0, len(raw)))
    pkt = decode(raw[:cut], _ENCAP[encap])
    if encap.startswith("ib") and cut == len(raw) - 2:
        # Without its VCRC a native packet is still whole (LINKTYPE 247 may omit it).
        assert pkt.problems == [] and pkt.vcrc_status is CrcStatus.NOT_PRESENT
    elif cut < len(raw):
        assert pkt.problems or pkt.icrc_status is not CrcStatus.GOOD
    pos = data.draw(st.integers(0, len(raw) - 1))
    mutated = raw[:pos] + bytes([raw[pos] ^ data.draw(st.integers(1, 255))]) + raw[pos + 1:]
    pkt = decode(mutated, _ENCAP[encap])
    assert all("internal error" not in m.reason for m in pkt.problems)
    assert encode(pkt) == mutated
