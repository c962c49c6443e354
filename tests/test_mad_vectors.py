"""Hand-built MADs for the attributes, records and messages no capture carries.

Each vector is built with the builders, then checked two ways that do not depend
on our layouts: the bytes at the offsets the specification gives (IBA tables,
protocol-facts §8) hold the values, and tshark - run on an ERF-in-pcap of all
vectors - agrees field by field (except the pinned Wireshark mistakes)."""

from __future__ import annotations

import pytest
from mad_helpers import (
    base_offset,
    compare,
    erf_pcap,
    known,
    mad_start,
    need_tshark,
    tshark_fields,
    tshark_text,
)
from mad_vector_data import G1, G2, VECTORS, g

import ibwire
from ibwire.cli.tshark_text import format_field
from ibwire.mad import mad_packet


def _native(mad: bytes) -> bytes:
    return mad_packet(mad, slid=12, dlid=20)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_bytes_follow_the_specification(name: str) -> None:
    mad, offsets, values = VECTORS[name]
    assert len(mad) == 256
    for off, hexbytes in offsets.items():
        want = bytes.fromhex(hexbytes)
        assert mad[off:off + len(want)] == want, (name, off)
    pkt = ibwire.decode(_native(mad), "ib")
    assert not pkt.problems, pkt.problems
    for key, value in values.items():
        assert pkt[key] == value, key
    assert ibwire.encode(pkt) == _native(mad)


def test_table_response_lists_every_record() -> None:
    pkt = ibwire.decode(_native(VECTORS["pathrecords"][0]), "ib")
    assert pkt.values_of("infiniband.pathrecord.dlid") == [20, 12, 21]
    assert pkt.values_of("infiniband.pathrecord.p_key") == [0xFFFF, 0x7FFF, 0x8001]
    assert pkt.values_of("infiniband.pathrecord.qosclass") == [0x123, 0, 0]
    links = ibwire.decode(_native(VECTORS["linkrecord"][0]), "ib")
    assert links.values_of("infiniband.linkrecord.tolid") == [8, 3]


def test_multipath_gids_follow_the_counts() -> None:
    pkt = ibwire.decode(_native(VECTORS["multipath"][0]), "ib")
    assert pkt.values_of("infiniband.multipathrecord.sdgid") == [g(G1), g(G2), g("fe80::3")]


@pytest.fixture(scope="module")
def vector_pcap(tmp_path_factory):
    need_tshark()
    path = tmp_path_factory.mktemp("mad") / "vectors.pcap"
    return erf_pcap(path, [_native(VECTORS[n][0]) for n in sorted(VECTORS)])


@pytest.mark.parametrize("index,name", list(enumerate(sorted(VECTORS))))
def test_tshark_agrees_on_hand_built_vectors(vector_pcap, index: int, name: str) -> None:
    fields = tshark_fields(vector_pcap).get(index + 1)
    assert fields, f"tshark saw no MAD in vector {name}"
    pkt = ibwire.decode(_native(VECTORS[name][0]), "ib")
    diffs = [(n, pos - mad_start(pkt), want, mine) for n, pos, want, mine
             in compare(pkt, fields, base_offset(pkt), mad_start(pkt))
             if not known(n, pkt["infiniband.mad.attributename"])]
    assert not diffs, diffs


def _tshark(vector_pcap, name: str, field: str) -> list[str]:
    index = sorted(VECTORS).index(name) + 1
    return [tshark_text(f) for f in tshark_fields(vector_pcap)[index] if f.name == field]


def test_pinned_rmpp_byte_26_split(vector_pcap) -> None:
    """Byte 26 = 0x9d: RRespTime 0x13 (5 bits) and RMPPFlags 5 = Active|Last (3 bits),
    per IBA/libibmad; Wireshark splits it 4/4 (0x9 and 0xd)."""
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.rresptime") == ["0x09"]
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.rmppflags") == ["0x0d"]
    pkt = ibwire.decode(_native(VECTORS["rmpp_data"][0]), "ib")
    assert pkt["infiniband.rmpp.rresptime"] == 0x13 and pkt["infiniband.rmpp.rmppflags"] == 5
    assert pkt["infiniband.rmpp.flags.active"] and pkt["infiniband.rmpp.flags.last"]
    assert not pkt["infiniband.rmpp.flags.first"]
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.segmentnumber") == \
        [format_field("infiniband.rmpp.segmentnumber", pkt["infiniband.rmpp.segmentnumber"])]


def test_pinned_classportinfo_trap_hl(vector_pcap) -> None:
    """ClassPortInfo byte 64 is TrapHL (libibmad IB_CPI_TRAP_HL_F); Wireshark shows
    it as `classportinfo.reserved`."""
    assert _tshark(vector_pcap, "sa_cpi", "infiniband.classportinfo.reserved") == \
        ["0x00", "0x40"]
    pkt = ibwire.decode(_native(VECTORS["sa_cpi"][0]), "ib")
    assert pkt["infiniband.classportinfo.traphl"] == 0x40
    assert pkt.values_of("infiniband.classportinfo.reserved") == [0]   # byte 32 only


def test_pinned_pathrecord_service_id_and_qos_class(vector_pcap) -> None:
    assert _tshark(vector_pcap, "pathrecords", "infiniband.reserved")[-1] == \
        "1122334455667788"
    assert _tshark(vector_pcap, "pathrecords", "infiniband.pathrecord.sl") == ["0x0005"]
    pkt = ibwire.decode(_native(VECTORS["pathrecords"][0]), "ib")
    assert pkt["infiniband.pathrecord.serviceid"] == 0x1122334455667788
    assert pkt["infiniband.pathrecord.qosclass"] == 0x123
    # tshark decodes the first record of a table only.
    assert _tshark(vector_pcap, "pathrecords", "infiniband.pathrecord.dlid") == ["0x0014"]


def test_pinned_portcounters_fields_wireshark_lacks(vector_pcap) -> None:
    reserved = _tshark(vector_pcap, "portcounters", "infiniband.reserved")
    assert "0a" in reserved and "000d" in reserved      # CounterSelect2, QP1Dropped
    assert _tshark(vector_pcap, "portcounters", "infiniband.portcounters.portxmitwait") == []
    pkt = ibwire.decode(_native(VECTORS["portcounters"][0]), "ib")
    pc = "infiniband.portcounters"
    assert (pkt[f"{pc}.counterselect2"], pkt[f"{pc}.qp1dropped"],
            pkt[f"{pc}.portxmitwait"]) == (0x0A, 13, 19)
    ext = ibwire.decode(_native(VECTORS["portcounters_ext"][0]), "ib")
    assert "12345678" in _tshark(vector_pcap, "portcounters_ext", "infiniband.reserved")
    assert ext["infiniband.portcounters_ext.counterselect2"] == 0x12345678
    assert ext["infiniband.portcounters_ext.symbolerrorcounter"] == 7
    assert ext["infiniband.portcounters_ext.qp1dropped"] == 9


def test_pinned_multicast_forwarding_table_length(vector_pcap) -> None:
    """A MulticastForwardingTable block holds 32 PortMasks; Wireshark shows 16."""
    shown = _tshark(vector_pcap, "mft", "infiniband.multicastforwardingtable.portmask")
    pkt = ibwire.decode(_native(VECTORS["mft"][0]), "ib")
    ours = pkt.values_of("infiniband.multicastforwardingtable.portmask")
    assert len(shown) == 16 and len(ours) == 32
    assert shown == [format_field("infiniband.multicastforwardingtable.portmask", v)
                     for v in ours[:16]]


def test_wireshark_naming_quirks_are_mirrored(vector_pcap) -> None:
    """Not mistakes in values, but names to know: ServiceRecord fields are
    `infiniband.linkrecord.service*`, GUIDInfo entries `infiniband.switchinfo.guid`,
    the DR SMP M_Key `infiniband.smplid.mkey`; we use the same names."""
    assert _tshark(vector_pcap, "servicerecord", "infiniband.linkrecord.serviceid") == \
        ["0x10000ce100415453"]
    sr = ibwire.decode(_native(VECTORS["servicerecord"][0]), "ib")
    assert sr["infiniband.linkrecord.serviceid"] == 0x10000CE100415453
    gi = ibwire.decode(_native(VECTORS["guidinfo"][0]), "ib")
    assert len(_tshark(vector_pcap, "guidinfo", "infiniband.switchinfo.guid")) == 8
    assert gi.values_of("infiniband.switchinfo.guid")[7] == 0x0002C90300A10007


def test_pinned_multipath_service_id(vector_pcap) -> None:
    """MultiPathRecord bytes 13 and 17-23 hold the ServiceID (OpenSM
    `service_id_8msb` / `service_id_56lsb`); Wireshark shows reserved bytes."""
    reserved = _tshark(vector_pcap, "multipath", "infiniband.reserved")
    assert "11" in reserved and "22334455667788" in reserved
    pkt = ibwire.decode(_native(VECTORS["multipath"][0]), "ib")
    assert pkt["infiniband.multipathrecord.serviceidmsb"] == 0x11
    assert pkt["infiniband.multipathrecord.serviceidlsb"] == 0x22334455667788


def test_pinned_trap_259_is_malformed_in_wireshark(vector_pcap) -> None:
    """Wireshark fetches the 2-byte DataValid and SWLIDADDR of trap 259 as IPv6
    addresses and throws: the whole notice becomes a Malformed Packet."""
    import subprocess

    from mad_helpers import TSHARK
    index = sorted(VECTORS).index("trap259") + 1
    out = subprocess.run([TSHARK, "-r", str(vector_pcap), "-Y", "_ws.malformed", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True).stdout.split()
    assert str(index) in out
    assert _tshark(vector_pcap, "trap259", "infiniband.trap.lidaddr1") == []
    pkt = ibwire.decode(_native(VECTORS["trap259"][0]), "ib")
    assert not pkt.problems
    assert (pkt["infiniband.trap.datavalid"], pkt["infiniband.trap.lidaddr1"],
            pkt["infiniband.trap.swlidaddr"], pkt["infiniband.trap.portno"]) == (0x1234, 1, 9, 4)


def test_pinned_rmpp_labels() -> None:
    """Labels only: Wireshark labels RMPPVersion "RMPP Type"; ours say what it is."""
    need_tshark()
    from mad_helpers import tshark_labels

    from ibwire.fields import REGISTRY
    assert tshark_labels()["infiniband.rmpp.rmppversion"] == "RMPP Type"
    assert REGISTRY["infiniband.rmpp.rmppversion"].label == "RmppVersion"
