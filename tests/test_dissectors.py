"""Scapy layers generated from the registry: field lists, building (equal to
`ibwire.encode`), dissection of the protocol-facts vectors, bindings, link types."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibwire.dissectors import (
    AETH,
    BTH,
    DETH,
    ERF,
    ETH_CLASSES,
    GRH,
    LRH,
    RETH,
    CNPPad,
    IBLink,
    ImmDt,
    layer_class,
    to_header,
)
from ibwire.dissectors.generate import fields_desc, scapy_name
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, conf, rdpcap, wrpcap
from scapy.compat import raw
from scapy.packet import Packet
from vectors import BY_NAME

import ibwire as lib
from ibwire import ETHERNET, IPV4, LINK, REGISTRY, VLAN, CrcStatus, decode, encode
from ibwire.headers.extended import ETH_LAYOUTS
from ibwire.headers.opcodes import OPCODES

ROCE = {n: BY_NAME[n] for n in ("R1", "R2", "R3", "R4", "R5")}
NATIVE = {n: BY_NAME[n] for n in ("N1", "N2")}
MACS = {"dst": "02:00:00:00:00:0b", "src": "02:00:00:00:00:0a"}


# -- the generator ---------------------------------------------------------------
def _plain(layout) -> type[Packet]:
    """The generator's bare output for a layout (no behaviour mixins)."""
    return type(Packet)(f"Plain_{layout.name}", (Packet,),
                        {"fields_desc": fields_desc(layout), "name": layout.label})


def _same(f, scapy_value, lib_value) -> bool:
    if f.kind == "ipv6":
        return ipaddress.IPv6Address(scapy_value).packed == lib_value
    if f.kind == "ipv4":
        return ipaddress.IPv4Address(scapy_value).packed == lib_value
    if f.kind == "ether":
        return bytes.fromhex(scapy_value.replace(":", "")) == lib_value
    return scapy_value == lib_value


@pytest.mark.parametrize("name", sorted(REGISTRY.layouts))
def test_every_registered_layout_becomes_a_scapy_layer_of_its_size(name):
    layout = REGISTRY.layouts[name]
    cls = _plain(layout)
    assert [f.name for f in cls.fields_desc] == [scapy_name(f) for f in layout.wire]
    assert len(raw(cls())) == layout.size


@settings(max_examples=25, suppress_health_check=list(HealthCheck))
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(REGISTRY.layouts))
def test_scapy_fields_dissect_like_the_layout_codec(name, data):
    layout = REGISTRY.layouts[name]
    blob = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    pkt = _plain(layout)(blob)
    lib = layout.unpack(blob)
    for f in layout.wire:
        assert _same(f, pkt.getfieldval(scapy_name(f)), lib[f.name]), f.name
    assert raw(pkt) == blob


def test_field_classes_follow_width_base_and_values():
    kinds = {f.name: type(f).__name__ for f in BTH.fields_desc}
    assert kinds["opcode"] == "ByteEnumField"
    assert kinds["p_key"] == "ShortField" and kinds["padcnt"] == "BitField"
    assert type(GRH.fields_desc[-1]).__name__ == "IP6Field"
    assert type(DETH.fields_desc[0]).__name__ == "XIntField"
    assert type(RETH.fields_desc[0]).__name__ == "XLongField"
    assert type(AETH.fields_desc[1]).__name__ == "ThreeBytesField"
    assert BTH().name == "Base Transport Header"


def test_layer_class_is_made_once_per_layout():
    assert layer_class(ETH_LAYOUTS["reth"]) is RETH
    assert set(ETH_CLASSES) == set(ETH_LAYOUTS)


# -- building equals ibwire.encode ---------------------------------------------------
def test_rocev2_rdma_write_only_builds_like_encode():
    frame = (Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2", id=0, flags="DF")
             / UDP(sport=49152) / BTH(opcode=0x0A, m=1, destqp=0x11, psn=5)
             / RETH(va=0x1000, r_key=7, dmalen=5) / Raw(b"x" * 5))
    expected = encode(ETHERNET(**MACS), IPV4(src="10.0.0.1", dst="10.0.0.2"),
                      lib.UDP(srcport=49152), lib.BTH(opcode=0x0A, m=1, destqp=0x11, psn=5),
                      lib.RETH(va=0x1000, r_key=7, dmalen=5), payload=b"x" * 5)
    assert raw(frame) == expected
    pkt = decode(expected, "eth")
    assert pkt.icrc_status is CrcStatus.GOOD and pkt.bth.padcnt == 3
    assert "RC RDMA Write Only QP=0x000011 PSN=5" in frame.summary()


def test_native_ud_send_with_grh_builds_like_encode_and_the_sample():
    n2 = NATIVE["N2"].data
    payload = n2[8 + 40 + 12 + 8:-6]
    gids = {"sgid": "fe80::2:c903:0:1f2d", "dgid": "ff12:401b:ffff::ffff:ffff"}
    built = raw(LRH(dlid=0xC000, slid=5) / GRH(**gids)
                / BTH(opcode=0x64, m=1, destqp=0xFFFFFF, psn=0x0DE6F8)
                / DETH(q_key=0xB1B, srcqp=0x48) / Raw(payload))
    expected = encode(lib.LRH(dlid=0xC000, slid=5), lib.GRH(**gids),
                      lib.BTH(opcode=0x64, m=1, destqp=0xFFFFFF, psn=0x0DE6F8),
                      lib.DETH(q_key=0xB1B, srcqp=0x48), payload=payload)
    assert built == expected == n2


def test_native_local_send_with_pad_builds_like_encode():
    built = raw(LRH(dlid=4, slid=1) / BTH(opcode=0x04, destqp=0x11, psn=7) / Raw(b"abcde"))
    assert built == encode(lib.LRH(dlid=4, slid=1), lib.BTH(opcode=0x04, destqp=0x11, psn=7),
                           payload=b"abcde")
    pkt = decode(built, "ib")
    assert pkt.icrc_status is CrcStatus.GOOD and pkt.vcrc_status is CrcStatus.GOOD


def test_rocev1_over_vlan_builds_like_encode():
    built = raw(Ether(**MACS) / Dot1Q(vlan=5) / GRH(sgid="::ffff:10.0.0.1", dgid="::ffff:10.0.0.2")
                / BTH(opcode=0x11, destqp=0x10A, psn=9) / AETH(syndrome=0x1F, msn=3))
    assert built == encode(ETHERNET(**MACS), VLAN(id=5),
                           lib.GRH(sgid="::ffff:10.0.0.1", dgid="::ffff:10.0.0.2"),
                           lib.BTH(opcode=0x11, destqp=0x10A, psn=9),
                           lib.AETH(syndrome=0x1F, msn=3))
    back = Ether(built)
    assert back[AETH].msn == 3 and back[BTH].icrc == built[-4:]


def test_to_header_feeds_encode():
    layers = LRH(dlid=4, slid=1) / BTH(opcode=0x11, destqp=5, psn=1) / AETH(msn=2)
    assert encode(*(to_header(la) for la in (layers[LRH], layers[BTH], layers[AETH]))) == \
        raw(layers)


def test_cnp_and_link_packet_fill_like_encode():
    cnp = Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2", id=0, flags="DF") / \
        UDP(sport=0) / BTH(opcode=0x81, becn=1, destqp=0x118) / CNPPad()
    assert raw(cnp) == encode(ETHERNET(**MACS), IPV4(src="10.0.0.1", dst="10.0.0.2"),
                              lib.UDP(srcport=0), lib.BTH(opcode=0x81, becn=1, destqp=0x118),
                              ETH_LAYOUTS["cnp"]())
    assert raw(IBLink(op=1, fctbs=100, vl=2, fccl=200)) == \
        encode(LINK(op=1, fctbs=100, vl=2, fccl=200))


def test_an_edited_packet_gets_new_crcs_once_they_are_deleted():
    p = LRH(NATIVE["N1"].data)
    p[BTH].psn += 1
    del p[BTH].icrc, p[LRH].vcrc
    pkt = decode(raw(p), "ib")
    assert pkt.icrc_status is CrcStatus.GOOD and pkt.vcrc_status is CrcStatus.GOOD
    assert pkt.bth.psn == 0xD40A56


# -- dissection of the protocol-facts vectors -----------------------------------------
@pytest.mark.parametrize("name", sorted(ROCE))
def test_roce_vectors_dissect_split_icrc_and_rebuild(name):
    v = ROCE[name]
    p = Ether(v.data)
    assert p[BTH].icrc == v.icrc_wire
    assert raw(p) == v.data
    q = p.copy()
    del q[BTH].icrc
    assert raw(q) == v.data


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_native_vectors_dissect_split_icrc_vcrc_and_rebuild(name):
    v = NATIVE[name]
    p = LRH(v.data)
    assert p[BTH].icrc == v.icrc_wire and p[LRH].vcrc == v.vcrc_wire
    assert raw(p) == v.data
    q = p.copy()
    del q[BTH].icrc, q[LRH].vcrc
    assert raw(q) == v.data


def test_pad_is_stripped_from_the_payload():
    p = Ether(ROCE["R1"].data)          # UC SEND Only, PadCnt 2
    lib = decode(ROCE["R1"].data, "eth")
    assert p[BTH].padcnt == 2 and p[BTH].pad == lib.pad
    assert p[Raw].load == lib.payload
    p3 = Ether(ROCE["R3"].data)         # RoCEv1 RDMA WRITE Only, 5 bytes + PadCnt 3
    assert p3[RETH].dmalen == len(p3[Raw].load) == 5 and p3[BTH].pad == b"\0\0\0"


def test_summaries_read_like_the_library():
    assert Ether(ROCE["R4"].data).summary() == "Ether / GRH / RC Acknowledge QP=0x000109 " \
        "PSN=10979520"
    assert "CNP Congestion Notification QP=0x000118 PSN=0" in Ether(ROCE["R2"].data).summary()
    p = LRH(NATIVE["N1"].data)
    assert p[BTH].mysummary() == decode(NATIVE["N1"].data, "ib").summary()


def test_opcode_table_drives_the_eth_chain():
    body = bytes(7) + b"\x07" + bytes(56)      # a DETH would say SrcQP 7: not a MAD
    for code in (0x0B, 0x12, 0x13, 0x1C, 0x65, 0xA4, 0x4B, 0x81):
        p = BTH(raw(BTH(opcode=code, destqp=5, icrc=b"")) + body)
        got = [c.ib_layout.name for c in p.layers()[1:] if hasattr(c, "ib_layout")]
        assert got == list(OPCODES[code].headers), hex(code)


# -- bindings and link types ------------------------------------------------------
def test_dport_4791_wins_over_a_tftp_source_port():
    import scapy.layers.tftp  # noqa: F401  (binds UDP sport 69)
    frame = Ether() / IP() / UDP(sport=69, dport=4791) / BTH(opcode=0x11, psn=3) / AETH()
    assert Ether(raw(frame))[BTH].psn == 3


# bind_rocev2_port declares the port in the graph (process-wide): see
# tests/test_graph_scapy.py, which runs it in a child process.


def test_rocev2_over_ipv6_and_lnh_bindings():
    v6 = Ether(ROCE["R5"].data)
    assert IPv6 in v6 and v6[BTH].destqp == 0xD3
    assert raw(LRH() / GRH())[1] & 3 == 3
    assert raw(LRH() / BTH(icrc=b"")) [1] & 3 == 2


def test_linktype_247_and_erf_types_21_25_2(tmp_path):
    n1 = NATIVE["N1"].data
    wrpcap(str(tmp_path / "ib.pcap"), [LRH(n1)], linktype=247)
    assert raw(rdpcap(str(tmp_path / "ib.pcap"))[0][BTH]) == n1[8:-2]
    erf = ERF(ts_raw=bytes(8), vlen=1) / LRH(n1)
    built = raw(erf)
    assert ERF(built).wlen == len(n1) and ERF(built).rlen == 16 + len(n1)
    assert decode(built, "erf").icrc_status is CrcStatus.GOOD
    wrpcap(str(tmp_path / "erf.pcap"), [ERF(built)], linktype=197)
    assert rdpcap(str(tmp_path / "erf.pcap"))[0][LRH].vcrc == n1[-2:]
    link = raw(ERF() / IBLink(op=0, fctbs=7, vl=1, fccl=9))
    assert ERF(link).type == 25 and decode(link, "erf").lpcrc_status is CrcStatus.GOOD
    eth = raw(ERF() / Ether(ROCE["R4"].data))
    parsed = ERF(eth)
    assert parsed.type == 2 and parsed[AETH].msn == 5 and raw(parsed) == eth
    assert decode(eth, "erf").icrc_status is CrcStatus.GOOD


def test_erf_extension_headers_and_record_padding():
    n1 = NATIVE["N1"].data
    ext = bytes([0x81]) + bytes(7) + bytes([0x02]) + bytes(7)
    rec = raw(ERF(type=21, ext_header=1, ext=ext, wlen=len(n1)) / Raw(n1)) + b"\0" * 2
    p = ERF(rec)
    assert p.ext == ext and p[BTH].psn == 0xD40A55 and raw(p) == rec


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(seed=st.sampled_from(sorted(BY_NAME)), cut=st.integers(0, 80),
       flips=st.lists(st.tuples(st.integers(0, 180), st.integers(0, 255)), max_size=3))
def test_damaged_packets_dissect_show_and_rebuild_unchanged(seed, cut, flips):
    data = bytearray(BY_NAME[seed].data)
    for i, b in flips:
        if i < len(data):
            data[i] = b
    data = bytes(data[:max(len(data) - cut, 1)])
    top = LRH if BY_NAME[seed].encap == "ib" else Ether
    for cls in (top, GRH, BTH):
        try:
            p = cls(data)
        except Exception:  # noqa: BLE001 - Scapy's own fields refuse short headers
            assert len(data) < 60
            continue
        p.show(dump=True)
        assert raw(p) == data


def test_dissectors_do_not_fall_back_to_raw_on_the_vectors():
    old = conf.debug_dissector
    conf.debug_dissector = True
    try:
        for v in BY_NAME.values():
            p = (LRH if v.encap == "ib" else Ether)(v.data)
            assert BTH in p
        assert ImmDt in BTH(raw(BTH(opcode=0x65, icrc=b"")) + bytes(16))
    finally:
        conf.debug_dissector = old


def test_mads_on_qp1_over_rocev2_and_on_native_qp0():
    from ibwire.dissectors.mad import MAD, MAD_AVAILABLE, MAD_IMPORT_ERROR
    if not MAD_AVAILABLE:
        pytest.skip(f"ibwire.mad not importable: {MAD_IMPORT_ERROR}")
    import ibwire.mad as libmad
    data = raw(LRH(dlid=0xFFFF, slid=0xFFFF, vl=15) / BTH(opcode=0x64, destqp=0, psn=1) /
               DETH(q_key=0, srcqp=0) / Raw(bytes([1, 0x81, 1, 1]) + bytes(252)))
    p = LRH(data)
    assert MAD in p and p[MAD].mgmt_class == 0x81 and raw(p) == data
    assert "UD Send Only QP=0x000000 PSN=1 / MAD" in p.summary()
    lib = [la.layout.name for la in libmad.decode_mad(data[8 + 12 + 8:-6]).layers]
    assert [c.ib_layout.name for c in p.layers()[3:]] == lib
    # the same MAD bytes to a non-MAD QP stay Raw
    other = LRH(raw(LRH() / BTH(opcode=0x64, destqp=5, psn=1) / DETH(srcqp=7) /
                    Raw(bytes([1, 0x81, 1, 1]) + bytes(252))))
    assert MAD not in other and Raw in other
