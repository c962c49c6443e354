"""Where MADs are found (Wireshark's QP 0/1 rule, UD SEND Only with or without
immediate, native and RoCE) and how short or long payloads are handled."""

from __future__ import annotations

import ibwire
from ibwire.headers import BTH, DETH, ETHERNET, GRH, IPV6, LRH, UDP, ImmDt
from ibwire.mad import decode_mad, encode_mad, mad_packet, perf_get, smp_get

MAD = perf_get("PortCounters", port_select=3)


def _native(opcode: int, destqp: int, srcqp: int, payload: bytes = MAD, imm: bool = False):
    headers = [LRH(dlid=4, slid=1), BTH(opcode=opcode, destqp=destqp), DETH(srcqp=srcqp)]
    if imm:
        headers.append(ImmDt(data=5))
    return ibwire.decode(ibwire.encode(*headers, payload=payload), "ib")


def test_mads_to_or_from_qp0_qp1() -> None:
    assert _native(0x64, 1, 1).layer("mad") is not None
    assert _native(0x64, 0, 0).layer("mad") is not None
    assert _native(0x64, 0x17, 1).layer("mad") is not None     # answer from QP1 to a client
    assert _native(0x64, 1, 0x17).layer("mad") is not None     # request to QP1
    assert _native(0x65, 1, 1, imm=True)["infiniband.portcounters.portselect"] == 3


def test_other_traffic_is_not_a_mad() -> None:
    assert _native(0x64, 0x17, 0x18).layer("mad") is None      # UD between other QPs
    rc = ibwire.decode(ibwire.encode(LRH(dlid=4, slid=1), BTH(opcode=0x04, destqp=1),
                                     payload=MAD), "ib")
    assert rc.layer("mad") is None and rc["infiniband.payload"] == MAD


def test_mads_over_rocev1_and_rocev2_ipv6() -> None:
    gid = "fe80::1"
    v1 = ibwire.encode(ETHERNET(dst="02:00:00:00:00:02", src="02:00:00:00:00:01"),
                       GRH(sgid=gid, dgid=gid, hoplmt=1), BTH(opcode=0x64, destqp=1),
                       DETH(q_key=0x80010000, srcqp=1), payload=MAD)
    pkt = ibwire.decode(v1, "eth")
    assert pkt["infiniband.mad.attributename"] == "PortCounters" and ibwire.encode(pkt) == v1
    v2 = ibwire.encode(ETHERNET(dst="02:00:00:00:00:02", src="02:00:00:00:00:01"),
                       IPV6(src=gid, dst=gid, hlim=64), UDP(srcport=49152, dstport=4791),
                       BTH(opcode=0x64, destqp=1), DETH(q_key=0x80010000, srcqp=1),
                       payload=MAD)
    pkt = ibwire.decode(v2, "eth")
    assert pkt["infiniband.portcounters.portselect"] == 3 and ibwire.encode(pkt) == v2


def test_short_mad_decodes_as_far_as_it_goes() -> None:
    short = smp_get("PortInfo")[:100]          # header, SMP fields, part of the data area
    pkt = _native(0x64, 0, 0, payload=short)
    assert pkt["infiniband.mad.attributeid"] == 0x15
    assert pkt["infiniband.smplid.mkey"] == 0
    assert pkt.layer("portinfo") is None
    assert [p.layer for p in pkt.problems] == ["portinfo"]
    assert "64 bytes needed, 36 available" in pkt.problems[0].reason
    assert pkt["infiniband.raw"] == short[64:]
    assert encode_mad(pkt) == short and ibwire.encode(pkt) == pkt.data
    tiny = decode_mad(b"\x01\x81")
    assert tiny.problems[0].layer == "mad" and encode_mad(tiny) == b"\x01\x81"


def test_bytes_after_a_mad_are_kept_and_marked() -> None:
    long = MAD + b"\xAA" * 12
    pkt = _native(0x64, 1, 1, payload=long)
    assert pkt["infiniband.portcounters.portselect"] == 3
    assert pkt.problems[0].reason == "12 bytes follow the 256-byte MAD"
    assert pkt["infiniband.raw"] == b"\xAA" * 12
    assert ibwire.encode(pkt) == pkt.data


def test_containers_and_views() -> None:
    pkt = ibwire.decode(mad_packet(smp_get("NodeInfo", dr_path=[0, 1])), "ib")
    assert len(pkt["infiniband.mad"]) == 256 and len(pkt["infiniband.mad.data"]) == 232
    assert len(pkt["infiniband.smpdirected"]) == 256
    assert pkt["infiniband.mad.response"] is False or pkt["infiniband.mad.response"] == 0
    assert pkt["infiniband.mad.statustext"] == "success"
    assert pkt["infiniband.mad.attributename"] == "NodeInfo"
    assert pkt.layer("mad").values["hop_count"] == 1


def test_error_table_response_has_no_records() -> None:
    from ibwire.mad import sa_mad
    empty = decode_mad(sa_mad("GetTableResp", "PathRecord", header={"status": 0x0300}))
    assert empty["infiniband.mad.statustext"] == "SA: no records"
    assert empty.layer("pathrecord") is None and encode_mad(empty) == empty.data
    ok = decode_mad(sa_mad("GetTableResp", "PathRecord"))
    assert ok.values_of("infiniband.pathrecord.dlid") == [0]   # shown, as Wireshark does
