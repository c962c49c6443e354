"""Builders: the requests the real tools sent are rebuilt byte for byte (the MAD and
the whole native packet), ComponentMask bits follow the given fields, and misuse
fails loudly."""

from __future__ import annotations

import pytest
from mad_helpers import MAD_DIR, decoded, need_shared

import ibwire
from ibwire.crc import CrcStatus
from ibwire.mad import (
    build_mad,
    decode_mad,
    encode_mad,
    mad_packet,
    perf_get,
    sa_mad,
    sa_path_record_query,
    sa_query,
    smp_get,
    smp_set,
)


def _request(capture: str, frame: int):
    need_shared()
    num, data, pkt = decoded(MAD_DIR / f"{capture}.pcap")[frame - 1]
    assert not pkt["infiniband.mad.method"] & 0x80
    return data[16:], pkt          # the native packet (after the ERF header), decoded


def _same_packet(wire: bytes, pkt, mad: bytes, **kw) -> None:
    built = mad_packet(mad, psn=pkt["infiniband.bth.psn"], **kw)
    assert mad == encode_mad(pkt)
    assert built == wire


def test_lid_routed_smp_get_rebuilds_smpquery() -> None:
    wire, pkt = _request("smpquery-nodeinfo", 1)
    mad = smp_get("NodeInfo", transaction_id=pkt["infiniband.mad.transactionid"])
    _same_packet(wire, pkt, mad, slid=12, dlid=20)


def test_directed_route_smp_get_rebuilds_ibnetdiscover() -> None:
    wire, pkt = _request("ibnetdiscover", 21)
    assert pkt["infiniband.smpdirected.hopcount"] == 1
    mad = smp_get("PortInfo", dr_path=[0, 1], hop_pointer=1,
                  attribute_modifier=pkt["infiniband.mad.attributemodifier"],
                  transaction_id=pkt["infiniband.mad.transactionid"])
    _same_packet(wire, pkt, mad)                       # DLID = SLID = 0xFFFF, VL15, QP0


def test_smp_set_rebuilds_an_opensm_lft_set() -> None:
    wire, pkt = _request("opensm-sweep", 651)
    assert pkt["infiniband.mad.attributename"] == "LinearForwardingTable"
    ports = pkt.values_of("infiniband.linearforwardingtable.port")
    hops = pkt["infiniband.smpdirected.hopcount"]
    mad = smp_set("LinearForwardingTable",
                  dr_path=list(pkt["infiniband.smpdirected.initialpath"][:hops + 1]),
                  hop_pointer=pkt["infiniband.smpdirected.hoppointer"],
                  attribute_modifier=pkt["infiniband.mad.attributemodifier"],
                  transaction_id=pkt["infiniband.mad.transactionid"], port=ports,
                  return_path=pkt["infiniband.smpdirected.returnpath"])
    _same_packet(wire, pkt, mad)


def test_sa_path_record_query_rebuilds_saquery() -> None:
    wire, pkt = _request("saquery-pr", 1)
    mad = sa_path_record_query(slid=12, dlid=20, numb_path=127,
                               transaction_id=pkt["infiniband.mad.transactionid"])
    assert decode_mad(mad)["infiniband.sa.componentmask"] == 0x1030   # DLID|SLID|NumbPath
    _same_packet(wire, pkt, mad, slid=12, dlid=1)


@pytest.mark.parametrize("capture,attribute,fields", [
    ("saquery-nr", "NodeRecord", {}),
    ("saquery-pir", "PortInfoRecord", {"end_port_lid": 12, "port_num": 1}),
])
def test_sa_queries_rebuild_saquery(capture: str, attribute: str, fields: dict) -> None:
    wire, pkt = _request(capture, 1)
    mad = sa_query(attribute, transaction_id=pkt["infiniband.mad.transactionid"], **fields)
    _same_packet(wire, pkt, mad, slid=12, dlid=1)


def test_sa_get_class_port_info_rebuilds_saquery() -> None:
    wire, pkt = _request("saquery-cpi", 1)
    mad = sa_mad("Get", "ClassPortInfo", transaction_id=pkt["infiniband.mad.transactionid"])
    _same_packet(wire, pkt, mad, slid=12, dlid=1)


def test_perf_gets_rebuild_perfquery() -> None:
    wire, pkt = _request("perfquery", 3)
    mad = perf_get("PortCounters", port_select=1,
                   transaction_id=pkt["infiniband.mad.transactionid"])
    _same_packet(wire, pkt, mad, slid=12, dlid=12)
    # The reset: Set with CounterSelect 0xFFFF and CounterSelect2 bit 0 (QP1Dropped).
    wire, pkt = _request("perfquery-reset", 5)
    mad = build_mad(0x04, "Set", "PortCounters", port_select=1, counter_select=0xFFFF,
                    counter_select2=0x01, transaction_id=pkt["infiniband.mad.transactionid"])
    _same_packet(wire, pkt, mad, slid=12, dlid=12)


def test_component_mask_of_the_public_sample_query() -> None:
    """The public sample's PathRecord query used ComponentMask 0x340C =
    DGID | SGID | TClass | NumbPath | P_Key (protocol-facts §8.14)."""
    mad = sa_path_record_query(sgid="fe80::2", dgid="fe80::1", tclass=0, numb_path=1,
                               p_key=0xFFFF)
    pkt = decode_mad(mad)
    assert pkt["infiniband.sa.componentmask"] == 0x340C
    assert pkt["infiniband.mad.method"] == 0x12 and pkt["infiniband.mad.classversion"] == 2
    assert pkt["infiniband.pathrecord.numbpath"] == 1
    assert sa_path_record_query(service_id=5)[48:56] == (3).to_bytes(8, "big")


def test_dr_path_and_native_packet() -> None:
    mad = smp_get("NodeInfo", dr_path=[0, 1, 3])
    pkt = ibwire.decode(mad_packet(mad), "ib")
    assert pkt["infiniband.lrh.vl"] == 15 and pkt["infiniband.lrh.dlid"] == 0xFFFF
    assert pkt["infiniband.lrh.slid"] == 0xFFFF and pkt["infiniband.bth.opcode"] == 0x64
    assert pkt["infiniband.bth.destqp"] == 0 and pkt["infiniband.deth.srcqp"] == 0
    assert pkt["infiniband.deth.q_key"] == 0
    assert pkt["infiniband.smpdirected.hopcount"] == 2
    assert pkt["infiniband.smpdirected.hoppointer"] == 0
    assert pkt["infiniband.smpdirected.d"] == 0
    assert pkt["infiniband.smpdirected.initialpath"][:4] == bytes([0, 1, 3, 0])
    assert pkt.icrc_status == CrcStatus.GOOD and pkt.vcrc_status == CrcStatus.GOOD
    gsi = ibwire.decode(mad_packet(perf_get(), slid=1, dlid=4, sl=2), "ib")
    assert gsi["infiniband.lrh.vl"] == 0 and gsi["infiniband.lrh.sl"] == 2
    assert gsi["infiniband.deth.q_key"] == 0x80010000 and gsi["infiniband.bth.destqp"] == 1
    assert len(mad_packet(mad)) == 8 + 12 + 8 + 256 + 4 + 2    # LRH BTH DETH MAD ICRC VCRC


def test_builder_misuse_fails_loudly() -> None:
    with pytest.raises(TypeError, match="not a field"):
        smp_set("PortInfo", no_such_field=1)
    with pytest.raises(TypeError, match="view"):
        smp_set("PortInfo", cap_issm=1)
    with pytest.raises(ValueError, match="entries"):
        smp_set("LinearForwardingTable", port=list(range(65)))
    with pytest.raises(KeyError):
        smp_get("NoSuchAttribute")
    with pytest.raises(ValueError, match="one MAD holds"):
        sa_mad("GetTableResp", "PathRecord", [{"dlid": i} for i in range(4)])
    with pytest.raises(ValueError, match="slid and dlid"):
        mad_packet(perf_get())
    with pytest.raises(TypeError, match="common-header"):
        build_mad(0x01, "Get", "NodeInfo", header={"hop_pointer": 1})


def test_readme_snippet() -> None:
    """The README snippet (docs: MADs), line for line."""
    import ibwire.mad as mad

    smp = mad.smp_get("NodeInfo", dr_path=[0, 1, 3])   # DR SubnGet(NodeInfo): ports 1 then 3
    wire = mad.mad_packet(smp)                          # LRH VL15 0xFFFF->0xFFFF, BTH, DETH, CRCs
    pkt = ibwire.decode(wire, "ib")
    assert (pkt["infiniband.mad.attributename"], pkt["infiniband.smpdirected.hopcount"]) == \
        ("NodeInfo", 2)
    q = mad.sa_path_record_query(sgid="fe80::2:c903:a1:a", dgid="fe80::2:c903:a1:19",
                                 numb_path=1)           # ComponentMask = DGID|SGID|NumbPath
    pkt = ibwire.decode(mad.mad_packet(q, slid=12, dlid=1), "ib")   # QP1, Q_Key 0x80010000
    assert hex(pkt["infiniband.sa.componentmask"]) == "0x100c"
    pkt.layer("pathrecord").values["numb_path"] = 4     # edit, then re-encode (CRCs refilled)
    assert ibwire.decode(ibwire.encode(pkt, fill=True), "ib")["infiniband.pathrecord.numbpath"] == 4
