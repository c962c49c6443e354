"""IPoIB: the datagram-mode heuristic on native/RoCE UD SENDs, LINKTYPE 242 in both
of Wireshark's pseudo-header forms (checked against tshark), round trips, Scapy."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibwire.dissectors import BTH, DETH, GRH, LRH, IPoIB, IPoIBDAddr, IPoIBGRH
from scapy.all import ARP, IP, UDP, IPv6, Raw, rdpcap, wrpcap
from scapy.compat import raw
from vectors import BY_NAME

import ibwire as lib
import ibwire.ipoib  # noqa: F401  (registers the hooks)
from ibwire import REGISTRY, CrcStatus, decode, encode
from ibwire.capture import read_capture
from ibwire.cli.tshark_text import format_field
from ibwire.ipoib import IPOIB, is_ipoib_payload, looks_like_ipoib

N2 = BY_NAME["N2"].data
IPV4_BODY = N2[8 + 40 + 12 + 8 + 4:-6]       # the IPv4/UDP datagram inside N2


def test_n2_decodes_to_ipoib_ipv4_udp_and_round_trips():
    pkt = decode(N2, "ib")
    assert pkt.problems == []
    assert pkt.protocols() == ["infiniband", "ipoib", "ip", "udp"]
    assert pkt["ipoib.type"] == 0x0800 and pkt["ipoib.reserved"] == 0
    assert format_field("ip.src", pkt["ip.src"]) == "10.0.0.36"
    assert format_field("ip.dst", pkt["ip.dst"]) == "10.0.0.255"
    assert pkt["udp.srcport"] == pkt["udp.dstport"] == 49501
    assert format_field("ipoib.type", pkt["ipoib.type"]) == "0x0800"
    assert pkt.icrc_status is CrcStatus.GOOD and pkt.vcrc_status is CrcStatus.GOOD
    assert encode(pkt) == N2
    assert encode(pkt, fill=True) == N2


def test_edited_ipoib_payload_is_re_encoded_from_its_values():
    pkt = decode(N2, "ib")
    pkt.layer("udp").values["dstport"] = 9
    out = encode(pkt, fill=True)
    again = decode(out, "ib")
    assert again["udp.dstport"] == 9 and again.icrc_status is CrcStatus.GOOD


def _ud(payload: bytes, destqp: int = 0x48, srcqp: int = 0x49, q_key: int = 0xB1B,
        opcode: int = 0x64) -> bytes:
    return encode(lib.LRH(dlid=1, slid=2), lib.BTH(opcode=opcode, destqp=destqp, psn=1),
                  lib.DETH(q_key=q_key, srcqp=srcqp), payload=payload)


@pytest.mark.parametrize("kw, payload", [
    ({"destqp": 1}, b"\x08\x00\x00\x00" + IPV4_BODY),       # to the GSI QP: a MAD
    ({"srcqp": 0}, b"\x08\x00\x00\x00" + IPV4_BODY),        # from QP0
    ({"q_key": 0x80010000}, b"\x08\x00\x00\x00" + IPV4_BODY),
    ({}, b"\x08\x00\x00\x01" + IPV4_BODY),                  # reserved bytes not zero
    ({}, b"\x12\x34\x00\x00" + IPV4_BODY),                  # not a known EtherType
    ({}, b"\x86\xdd\x00\x00" + IPV4_BODY),                  # IPv6 type, IPv4 body
])
def test_heuristic_leaves_other_payloads_alone(kw, payload):
    pkt = decode(_ud(payload, **kw), "ib")
    assert "ipoib" not in pkt.protocols()
    assert pkt.payload == payload


def test_heuristic_rules():
    body = b"\x08\x00\x00\x00" + IPV4_BODY
    assert is_ipoib_payload(0x64, 0xFFFFFF, 0x48, 0xB1B, body)
    assert is_ipoib_payload(0x65, 5, 0x48, 0xB1B, body)
    assert is_ipoib_payload(0x04, 5, None, None, body)          # RC SEND Only: connected mode
    assert not is_ipoib_payload(0x01, 5, None, None, body)      # SEND Middle: no header
    assert looks_like_ipoib(b"\x08\x06\x00\x00" + bytes(4) + b"\x14\x04")
    assert not looks_like_ipoib(b"\x08\x00\x00")


def test_udp_4791_inside_ipoib_is_not_rocev2():
    inner = raw(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=4791) /
                Raw(bytes(range(32))))
    data = _ud(b"\x08\x00\x00\x00" + inner)
    pkt = decode(data, "ib")
    assert pkt.protocols() == ["infiniband", "ipoib", "ip", "udp"]
    assert len(pkt.values_of("infiniband.bth.opcode")) == 1
    assert pkt.icrc_status is CrcStatus.GOOD and encode(pkt) == data
    s = LRH(data)
    assert UDP in s and len([la for la in s.layers() if la is BTH]) == 1


def test_ipoib_ipv6_and_arp_in_ud_sends():
    v6 = raw(IPv6(src="fe80::1", dst="ff02::1") / UDP(sport=5, dport=6) / Raw(b"x"))
    pkt = decode(_ud(b"\x86\xdd\x00\x00" + v6), "ib")
    assert pkt.protocols() == ["infiniband", "ipoib", "ipv6", "udp"]
    arp = raw(ARP(hwtype=32, hwlen=20, op=2, hwsrc=bytes(range(20)), psrc="10.0.0.1",
                  hwdst=bytes(20), pdst="10.0.0.2"))
    data = _ud(b"\x08\x06\x00\x00" + arp)
    pkt = decode(data, "ib")
    assert pkt["arp.opcode"] == 2 and pkt["arp.src.hw"] == bytes(range(20))
    assert format_field("arp.dst.proto_ipv4", pkt["arp.dst.proto_ipv4"]) == "10.0.0.2"
    assert encode(pkt) == data


def test_scapy_dissects_and_builds_n2():
    p = LRH(N2)
    assert p.layers()[:6] == [LRH, GRH, BTH, DETH, IPoIB, IP]
    assert p[IPoIB].type == 0x0800 and p[IP].src == "10.0.0.36" and p[UDP].dport == 49501
    assert raw(p) == N2
    built = (LRH(dlid=0xC000, slid=5) /
             GRH(sgid="fe80::2:c903:0:1f2d", dgid="ff12:401b:ffff::ffff:ffff") /
             BTH(opcode=0x64, m=1, destqp=0xFFFFFF, psn=0x0DE6F8) /
             DETH(q_key=0xB1B, srcqp=0x48) / IPoIB() / IP(IPV4_BODY))
    assert raw(built) == N2
    assert raw(IPoIB() / IPv6())[:2] == b"\x86\xdd" and raw(IPoIB() / ARP())[:2] == b"\x08\x06"


def test_registry_has_wiresharks_ipoib_names():
    for name in ("ipoib.type", "ipoib.reserved", "ipoib.grh.ipver", "ipoib.grh.tclass",
                 "ipoib.grh.flowlabel", "ipoib.grh.sqpn", "ipoib.grh.sgid", "ipoib.dgid",
                 "ipoib.daddr.qpn", "ipoib.daddr", "ipoib.grh"):
        assert name in REGISTRY, name
    assert REGISTRY["ipoib.type"].layout is IPOIB


# -- LINKTYPE_IPOIB (242) -----------------------------------------------------------
FIELDS = ["ipoib.type", "ipoib.reserved", "ipoib.grh.ipver", "ipoib.grh.tclass",
          "ipoib.grh.flowlabel", "ipoib.grh.sqpn", "ipoib.grh.sgid", "ipoib.daddr.qpn",
          "ipoib.dgid", "ip.src", "ip.dst", "ipv6.src", "udp.dstport", "arp.hw.type",
          "arp.src.hw", "arp.src.proto_ipv4"]


@pytest.fixture()
def pcap242(tmp_path):
    frames = [
        IPoIBGRH(ipver=6, tclass=0x12, flowlabel=0x34567, sqpn=0x48,
                 sgid="fe80::2:c903:0:1f2d", dgid="ff12:401b:ffff::1")
        / IPoIB() / IP(src="10.0.0.36", dst="10.0.0.255") / UDP(sport=1000, dport=2000)
        / Raw(b"hello"),
        IPoIBDAddr(flags=0x80, qpn=0x123456, dgid="fe80::2:c903:0:abcd")
        / IPoIB() / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=5, dport=6) / Raw(b"xyz"),
        IPoIBDAddr(qpn=0x48, dgid="fe80::1") / IPoIB(type=0x0806)
        / ARP(hwtype=32, hwlen=20, op=1, hwsrc=bytes(range(20)), psrc="10.0.0.1",
              hwdst=bytes(20), pdst="10.0.0.2"),
    ]
    path = tmp_path / "ipoib.pcap"
    wrpcap(str(path), frames, linktype=242)
    return path


def test_linktype_242_both_forms_decode_and_round_trip(pcap242):
    frames = read_capture(pcap242)
    assert [f.linktype for f in frames] == [242] * 3
    pkts = [decode(f.data, f.linktype) for f in frames]
    assert [p.layers[0].layout.name for p in pkts] == ["ipoib_grh", "ipoib_daddr", "ipoib_daddr"]
    assert pkts[0].protocols() == ["ipoib", "ip", "udp"]
    assert pkts[1].protocols() == ["ipoib", "ipv6", "udp"]
    assert pkts[2].protocols() == ["ipoib", "arp"]
    for f, p in zip(frames, pkts):
        assert p.problems == [] and encode(p) == f.data


def test_linktype_242_matches_tshark(pcap242):
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed")
    cmd = [tshark, "-r", str(pcap242), "-T", "fields"]
    for name in FIELDS:
        cmd += ["-e", name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    for frame, row in zip(read_capture(pcap242), rows):
        pkt = decode(frame.data, frame.linktype)
        ours = [",".join(format_field(n, v) for v in pkt.values_of(n)) for n in FIELDS]
        assert ours == row


def test_linktype_242_in_scapy(pcap242):
    a, b, c = rdpcap(str(pcap242))
    assert a.layers()[:3] == [IPoIBGRH, IPoIB, IP] and a[IPoIBGRH].sqpn == 0x48
    assert b.layers()[:3] == [IPoIBDAddr, IPoIB, IPv6] and b[IPoIBDAddr].qpn == 0x123456
    assert c.layers()[:3] == [IPoIBDAddr, IPoIB, ARP] and c[ARP].pdst == "10.0.0.2"
    for p in (a, b, c):
        p.show(dump=True)
        assert raw(p) == p.original


@settings(max_examples=200, suppress_health_check=list(HealthCheck))
@given(tail=st.binary(max_size=64), cut=st.integers(0, 40), form=st.booleans(),
       etype=st.sampled_from([0x0800, 0x86DD, 0x0806, 0x8035, 0x1234]))
def test_any_ipoib_record_round_trips(tail, cut, form, etype):
    """Damaged or odd IPoIB payloads, in a UD SEND and as LINKTYPE 242, decode
    without raising and re-encode byte for byte."""
    inner = raw(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=4791) / Raw(tail))
    body = etype.to_bytes(2, "big") + b"\0\0" + inner[:max(len(inner) - cut, 0)]
    native = _ud(body)
    pkt = decode(native, "ib")
    assert pkt.icrc_status is CrcStatus.GOOD and encode(pkt) == native
    pseudo = (raw(IPoIBGRH(ipver=6, sqpn=3)) if form else raw(IPoIBDAddr(qpn=3)))
    rec = pseudo + body
    assert encode(decode(rec, 242)) == rec
    assert raw(IPoIBGRH(rec)) == rec
