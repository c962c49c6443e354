"""The Scapy layers follow the protocol graph: bindings and link types come from
`GRAPH`, and an extension declared once (`tests/graph_extension.EXTENSION`: a
vendor extended header on opcode 0xC0, RoCEv2 on UDP port 4792) is built,
dissected and rebuilt like `ibwire.encode` writes it, with nothing else said."""

from __future__ import annotations

import itertools

import pytest
from graph_extension import run_extended
from ibwire.dissectors import AETH, BTH, DETH, ERF, GRH, LRH, IBLink, IPoIBGRH
from ibwire.dissectors.bindings import is_ibwire_layer, node_class
from ibwire.dissectors.mad import MAD, MAD_AVAILABLE, guess_mad
from scapy.all import UDP, CookedLinux, Raw, conf, raw

from ibwire import CrcStatus, decode
from ibwire.graph import GRAPH

# -- bindings and link types from the graph ---------------------------------------


def _bound_entries() -> list[tuple[type, str, int, type]]:
    out = []
    for lower, _field, value, upper in GRAPH.triples():
        lo, up = node_class(lower), node_class(upper, value)
        if lo is not None and up is not None and (is_ibwire_layer(lo) or is_ibwire_layer(up)):
            out.append((lo, lower, value, up))
    return out


def test_every_graph_edge_between_scapy_layers_is_bound():
    entries = _bound_entries()
    uppers = {up for *_, up in entries}
    assert {GRH, BTH, LRH, IBLink} <= uppers          # RoCEv1, RoCEv2, ERF 21 and 25
    for lo, _node, value, up in entries:
        assert any(cls is up and value in fval.values() for fval, cls in lo.payload_guess), \
            (lo.__name__, value, up.__name__)


def test_bindings_under_scapy_layers_come_first():
    for lo, _node, value, up in _bound_entries():
        if not is_ibwire_layer(lo):
            ours = [i for i, (fval, cls) in enumerate(lo.payload_guess)
                    if cls is up and value in fval.values()]
            theirs = [i for i, (_f, cls) in enumerate(lo.payload_guess)
                      if not is_ibwire_layer(cls)]
            assert ours and (not theirs or ours[0] < theirs[0]), lo.__name__


def test_link_types_of_ibwire_layers_are_registered():
    ours = {num: node_class(node) for num, node in GRAPH.linktypes.items()
            if node_class(node) is not None and is_ibwire_layer(node_class(node))}
    assert set(ours.values()) == {LRH, ERF, IPoIBGRH}
    for num, cls in ours.items():
        assert conf.l2types[num] is cls


def test_the_mad_rule_is_the_graphs():
    if not MAD_AVAILABLE:
        pytest.skip("ibwire.mad not importable")
    for opcode, destqp, srcqp in itertools.product((0x04, 0x64, 0x65, 0x6A), (0, 1, 5),
                                                   (0, 1, 7)):
        pkt = LRH() / BTH(opcode=opcode, destqp=destqp) / DETH(srcqp=srcqp)
        got = guess_mad(pkt[BTH], pkt[DETH], bytes(256))
        assert (got is MAD) == GRAPH.carries_mad(opcode, destqp, srcqp), (opcode, destqp, srcqp)


def test_opcode_names_are_read_from_the_table():
    assert BTH(opcode="RC Send Only").opcode == 0x04
    assert "RC Acknowledge" in BTH(opcode=0x11).summary()


# -- the extension, declared once ---------------------------------------------------
_EXTENDED = '''
import ibwire as lib
from ibwire import ETHERNET, IPV4, decode, encode
from ibwire.dissectors import BTH, ETH_CLASSES, LRH, GRH
from scapy.all import IP, UDP, Ether, Raw, raw, rdpcap, wrpcap

TMP = sys.argv[1]
MACS = {"dst": "02:00:00:00:00:0b", "src": "02:00:00:00:00:0a"}
IPS = {"src": "10.0.0.1", "dst": "10.0.0.2"}
V = ETH_CLASSES["vendoreth"]
bth = dict(opcode=VENDOR_OPCODE, destqp=0x11, psn=7)
tag = dict(tag=0xABCD1234, length=5, flags=0x8001)
payload = b"hello"

native = LRH(dlid=4, slid=1) / BTH(**bth) / V(**tag) / Raw(payload)
native_lib = encode(lib.LRH(dlid=4, slid=1), lib.BTH(**bth), VENDORETH(**tag), payload=payload)
roce2 = (Ether(**MACS) / IP(**IPS, id=0, flags="DF") / UDP(sport=49152, dport=VENDOR_PORT)
         / BTH(**bth) / V(**tag) / Raw(payload))
roce2_lib = encode(ETHERNET(**MACS), IPV4(**IPS), lib.UDP(srcport=49152, dstport=VENDOR_PORT),
                   lib.BTH(**bth), VENDORETH(**tag), payload=payload)
roce1 = Ether(**MACS) / GRH(sgid="::1", dgid="::2") / BTH(**bth) / V(**tag) / Raw(payload)
roce1_lib = encode(ETHERNET(**MACS), lib.GRH(sgid="::1", dgid="::2"), lib.BTH(**bth),
                   VENDORETH(**tag), payload=payload)
for name, frame, want in (("native", native, native_lib), ("roce2", roce2, roce2_lib),
                          ("roce1", roce1, roce1_lib)):
    assert raw(frame) == want, name                     # lengths, pad, ICRC, VCRC

top = {"native": LRH, "roce2": Ether, "roce1": Ether}
for name, data in (("native", native_lib), ("roce2", roce2_lib), ("roce1", roce1_lib)):
    p = top[name](data)
    assert type(p[BTH].payload) is V, name
    assert (p[V].tag, p[V].length, p[V].flags) == (0xABCD1234, 5, 0x8001), name
    assert p[Raw].load == payload and p[BTH].padcnt == 3, name
    assert raw(p) == data, name
    q = p.copy()
    del q[BTH].icrc
    assert raw(q) == data, name
    assert "Vendor Tagged Send QP=0x000011 PSN=7" in p.summary(), name
    p.show(dump=True)

wrpcap(TMP + "/ib.pcap", [LRH(native_lib)], linktype=247)
wrpcap(TMP + "/eth.pcap", [Ether(roce2_lib), Ether(roce1_lib)])
read = list(rdpcap(TMP + "/ib.pcap")) + list(rdpcap(TMP + "/eth.pcap"))
for p, data in zip(read, (native_lib, roce2_lib, roce1_lib)):
    assert p[V].tag == 0xABCD1234 and raw(p) == data

# The library decodes the Scapy-built native packet into the new header, CRCs good.
pkt = decode(raw(native), "ib")
assert pkt.layer("vendoreth").values["tag"] == 0xABCD1234
assert pkt.icrc_status.name == "GOOD" and pkt.vcrc_status.name == "GOOD"

# A build without a port still writes the IANA port; 4792 only adds a dissection.
assert Ether(raw(Ether() / IP() / UDP() / BTH() / Raw(b"x")))[UDP].dport == 4791
print("ok")
'''


def test_extension_builds_dissects_and_rebuilds_like_encode(tmp_path):
    assert run_extended("import sys\n" + _EXTENDED, str(tmp_path)).strip() == "ok"


def test_an_extended_header_added_after_import_gets_its_class():
    out = run_extended('''
        from ibwire.dissectors import ETH_CLASSES
        from ibwire.fields import Layout, uint
        from ibwire.headers.opcodes import OPCODES
        assert "vendoreth" in ETH_CLASSES               # declared before the import
        LATE = Layout("lateeth", "infiniband.lateeth", "Late Extended Header",
                      [uint("word", 32, "Word")])
        GRAPH.add_extended_header(0xC1, LATE, name="Late Send")
        assert ETH_CLASSES["lateeth"].ib_layout is LATE
        from ibwire.dissectors import BTH, LRH
        from scapy.all import raw
        p = LRH(raw(LRH() / BTH(opcode=0xC1) / ETH_CLASSES["lateeth"](word=9)))
        print(p[ETH_CLASSES["lateeth"]].word, OPCODES[0xC1].label)
    ''')
    assert out.split() == ["9", "Vendor", "Late", "Send"]


def test_bind_rocev2_port_declares_the_port_in_the_graph():
    out = run_extended('''
        from ibwire.dissectors import AETH, BTH, bind_rocev2_port
        from scapy.all import IP, UDP, Ether, Raw, raw
        data = raw(Ether() / IP() / UDP(sport=1, dport=4793) /
                   Raw(raw(BTH(opcode=0x11) / AETH())))
        assert BTH not in Ether(data)
        bind_rocev2_port(4793)
        assert 4793 in GRAPH.roce_ports()
        print(Ether(data)[BTH].opcode)
    ''')
    assert out.strip() == "17"


def test_raw_is_left_where_no_edge_leads():
    frame = UDP(sport=1, dport=4790) / Raw(raw(BTH(opcode=0x11)))
    assert BTH not in UDP(raw(frame))


def test_every_header_carrying_the_ethertype_table_leads_to_rocev1():
    """The graph gives Linux cooked captures the EtherType table too: RoCEv1 in a
    `tcpdump -i any` capture is built and dissected like the library decodes it."""
    frame = (CookedLinux(lladdrtype=1, lladdrlen=6, src=b"\x02\0\0\0\0\x0a\0\0")
             / GRH(sgid="::1", dgid="::2") / BTH(opcode=0x11, destqp=5, psn=3) / AETH(msn=2))
    data = raw(frame)
    back = CookedLinux(data)
    assert back[AETH].msn == 2 and raw(back) == data
    assert decode(data, "sll").icrc_status is CrcStatus.GOOD
