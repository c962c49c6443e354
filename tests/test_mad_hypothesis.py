"""Property tests: MADs of every class and attribute, built from random values or
random bytes, decode without raising and re-encode to the same bytes - alone, in
a native packet and over RoCEv2; truncated or garbage payloads are marked, never
raised on."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ibwire
from ibwire.headers import BTH, DETH, ETHERNET, IPV4, UDP
from ibwire.mad import decode_mad, encode_mad, mad_packet, supported
from ibwire.mad._layout import MAD_LAYOUTS
from ibwire.mad.header import MAD_HEADER

OPAQUE = [(0x01, 0xFF90), (0x81, 0x0033), (0x03, 0x003C), (0x04, 0x0036), (0x05, 0x0010),
          (0x06, 0x0010), (0x07, 0x001B), (0x08, 0x0001), (0x0A, 0x0010), (0x10, 0x0001),
          (0x21, 0x00FF), (0x32, 0x0001), (0x4F, 0x0002), (0x50, 0x0001), (0x00, 0x0000)]
COMBOS = supported() + OPAQUE
METHODS = [0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x81, 0x86, 0x92,
           0x93, 0x94, 0x95]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _mad(combo: tuple[int, int], method: int, status: int, tid: int, body: bytes) -> bytes:
    cls, attr = combo
    return MAD_HEADER.pack({"base_version": 1, "mgmt_class": cls, "class_version": 1,
                            "method": method, "status": status, "transaction_id": tid,
                            "attribute_id": attr}) + body


mads = st.builds(_mad, st.sampled_from(COMBOS), st.sampled_from(METHODS),
                 st.integers(0, 0xFFFF), st.integers(0, 2**64 - 1),
                 st.one_of(st.binary(min_size=232, max_size=232),
                           st.just(bytes(232))))


def _allowed(problems) -> bool:
    # Random SA headers may announce an AttributeOffset smaller than the record.
    return all(p.layer == "sa" and "AttributeOffset" in p.reason for p in problems)


@SETTINGS
@given(mads)
def test_random_mads_of_every_class_round_trip(mad: bytes) -> None:
    pkt = decode_mad(mad)
    assert _allowed(pkt.problems), pkt.problems
    assert encode_mad(pkt) == mad
    # Every byte belongs to exactly one layer, in order.
    pos = 0
    for lay in pkt.layers:
        assert lay.offset == pos
        pos += lay.size
    assert pos == 256


@SETTINGS
@given(mads, st.integers(1, 0xBFFF), st.integers(1, 0xBFFF), st.integers(0, 2**24 - 1))
def test_random_mads_in_native_packets_round_trip(mad: bytes, slid: int, dlid: int,
                                                  psn: int) -> None:
    wire = mad_packet(mad, slid=slid, dlid=dlid, psn=psn)
    pkt = ibwire.decode(wire, "ib")
    assert pkt.layer("mad") is not None and _allowed(pkt.problems)
    assert ibwire.encode(pkt) == wire
    assert encode_mad(pkt) == mad


@SETTINGS
@given(mads)
def test_random_mads_over_rocev2_round_trip(mad: bytes) -> None:
    wire = ibwire.encode(ETHERNET(dst="52:54:00:00:00:02", src="52:54:00:00:00:01"),
                         IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(srcport=49152, dstport=4791),
                         BTH(opcode=0x64, destqp=1, psn=7), DETH(q_key=0x80010000, srcqp=1),
                         payload=mad)
    pkt = ibwire.decode(wire, "eth")
    assert pkt.layer("mad") is not None and _allowed(pkt.problems)
    assert ibwire.encode(pkt) == wire


@SETTINGS
@given(mads, st.integers(0, 255))
def test_truncated_mads_are_marked_not_raised(mad: bytes, length: int) -> None:
    cut = mad[:length]
    pkt = decode_mad(cut)
    if length:
        assert any("truncated" in p.reason for p in pkt.problems)
        assert encode_mad(pkt) == cut
        if pkt.layers[-1].name.startswith("mad_raw"):
            assert pkt["infiniband.raw"] == cut[pkt.layers[-1].offset:]


@SETTINGS
@given(st.binary(min_size=0, max_size=600), st.sampled_from([0, 1]), st.booleans())
def test_garbage_on_qp0_qp1_never_raises(payload: bytes, qp: int, imm: bool) -> None:
    headers = [ibwire.LRH(dlid=1, slid=2), BTH(opcode=0x65 if imm else 0x64, destqp=qp),
               DETH(srcqp=qp)]
    if imm:
        headers.append(ibwire.ImmDt(data=1))
    wire = ibwire.encode(*headers, payload=payload)
    pkt = ibwire.decode(wire, "ib")
    assert not [p for p in pkt.problems if "internal" in p.reason or "failed" in p.reason]
    assert ibwire.encode(pkt) == wire
    if len(payload) > 256:
        assert any("follow the 256-byte MAD" in p.reason for p in pkt.problems)


_LAYOUTS = sorted(MAD_LAYOUTS)


@st.composite
def layout_values(draw):
    layout = MAD_LAYOUTS[draw(st.sampled_from(_LAYOUTS))]
    values = {}
    for f in layout.wire:
        if f.kind == "int":
            values[f.name] = draw(st.integers(0, (1 << f.bits) - 1))
        else:
            values[f.name] = draw(st.binary(min_size=f.bits // 8, max_size=f.bits // 8))
    return layout, values


@settings(max_examples=300, deadline=None)
@given(layout_values())
def test_every_layout_packs_and_unpacks_its_values(lv) -> None:
    """Values of every MAD layout survive pack/unpack, and the Construct schema
    derived from the same field list builds the same bytes."""
    layout, values = lv
    data = layout.pack(values)
    assert len(data) == layout.size
    back = layout.unpack(data)
    assert {k: back[k] for k in values} == values
    assert layout.struct.build(values) == data


@settings(max_examples=15, deadline=None)
@given(st.binary(min_size=232, max_size=232), st.sampled_from([0x01, 0x81, 0x92]))
def _each(combo, body: bytes, method: int) -> None:
    mad = _mad(combo, method, 0, 1, body)
    pkt = decode_mad(mad)
    assert _allowed(pkt.problems) and encode_mad(pkt) == mad


def test_each_class_and_attribute_round_trips() -> None:
    """Every (class, attribute) - not left to sampling - with random bodies."""
    for combo in COMBOS:
        _each(combo)
