"""The protocol graph drives the decoder, the encoder and the bulk tables.

The extension of `graph_extension` (a vendor extended header on opcode 0xC0, RoCEv2
on UDP port 4792) is declared once, in a child process; encode, decode and the
column engine must then handle both. Without it, port 4792 is not RoCE.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import numpy as np
from graph_extension import EXTENSION, run_extended

import ibwire
from ibwire.constants import ETHERTYPE_IPV4, ICRC_LEN, IP_PROTO_UDP, ROCEV2_PORT, VCRC_LEN
from ibwire.crc import CrcStatus
from ibwire.decoder import STEPS, decode
from ibwire.engines import tables as T
from ibwire.graph import GRAPH
from ibwire.headers import BTH, ETHERNET, GRH, IPV4, IPV6, LRH, UDP

# Packets every extension test builds (run in the child after EXTENSION).
BUILD = '''
import ibwire
from ibwire import BTH, ETHERNET, GRH, IPV4, IPV6, LRH, UDP
from ibwire.constants import ICRC_LEN, VCRC_LEN
from ibwire.crc import CrcStatus

PAY = bytes(range(1, 38))          # 37 bytes: PadCnt 3
def vendor(tag):
    return VENDORETH(tag=tag, length=len(PAY), flags=0x5A)
NATIVE = [
    ibwire.encode(LRH(dlid=7, slid=3), BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=11),
                  vendor(0xDEADBEEF), payload=PAY),
    ibwire.encode(LRH(dlid=7, slid=3), GRH(), BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=12),
                  vendor(0xCAFE0001), payload=PAY),
]
ETH = [
    ibwire.encode(ETHERNET(), IPV4(), UDP(dstport=VENDOR_PORT),
                  BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=21), vendor(0x01020304),
                  payload=PAY),
    ibwire.encode(ETHERNET(), IPV6(), UDP(dstport=VENDOR_PORT),
                  BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=22), vendor(0x05060708),
                  payload=PAY),
    ibwire.encode(ETHERNET(), IPV4(), UDP(), BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=23),
                  vendor(0x0A0B0C0D), payload=PAY),
    ibwire.encode(ETHERNET(), GRH(), BTH(opcode=VENDOR_OPCODE, destqp=0x42, psn=24),
                  vendor(0x11223344), payload=PAY),
]
'''


def test_extended_header_and_port_encode_and_decode():
    out = run_extended(BUILD + '''
for data, encap in [(d, "ib") for d in NATIVE] + [(d, "eth") for d in ETH]:
    pkt = ibwire.decode(data, encap)
    assert not pkt.problems, pkt.problems
    names = [lay.layout.name for lay in pkt.layers]
    assert names[names.index("bth") + 1] == "vendoreth", names
    assert pkt["infiniband.vendoreth.length"] == len(PAY)
    assert pkt["infiniband.vendoreth.flags"] == 0x5A
    assert pkt.payload == PAY and len(pkt.pad) == 3
    assert pkt.icrc_status == CrcStatus.GOOD
    bth = pkt.layer("bth")
    print(encap, hex(pkt["infiniband.vendoreth.tag"]), bth.psn, pkt.opcode.name)
    assert ibwire.encode(pkt) == data and ibwire.encode(pkt, fill=True) == data
for data in NATIVE:
    pkt = ibwire.decode(data, "ib")
    assert pkt.vcrc_status == CrcStatus.GOOD
    assert pkt.layer("lrh").pktlen * 4 == len(data) - VCRC_LEN
for data in ETH[:3]:
    pkt = ibwire.decode(data, "eth")
    udp = pkt.layer("udp")
    assert udp.length == len(data) - udp.offset, (udp.length, len(data))
grh = ibwire.decode(ETH[3], "eth").layer("grh")
assert grh.paylen == len(ETH[3]) - grh.offset - GRH.size
''')
    lines = out.split()
    assert "0xdeadbeef" in lines and "0x5060708" in lines and "Vendor Tagged Send" in out
    assert out.count("\n") == 6


def test_columns_equal_the_decoder_on_the_extension(tmp_path):
    out = run_extended(BUILD + '''
import sys
import numpy as np
from ibwire.constants import LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND
d = sys.argv[1]
ibwire.write(d + "/eth.pcap", ETH, linktype=LINKTYPE_ETHERNET)
ibwire.write(d + "/ib.pcap", NATIVE, linktype=LINKTYPE_INFINIBAND)
fields = ["infiniband.vendoreth.tag", "infiniband.vendoreth.length", "infiniband.bth.psn",
          "ibwire.fallback", "ibwire.malformed.code", "ibwire.offset.vendoreth",
          "ibwire.payload.len", "infiniband.invariant.crc.status"]
for name in ("eth", "ib"):
    path = d + "/" + name + ".pcap"
    table = ibwire.columns(path, fields=fields).to_pydict()
    pkts = list(ibwire.read(path))
    assert table["infiniband.vendoreth.tag"] == [p["infiniband.vendoreth.tag"] for p in pkts]
    assert table["infiniband.bth.psn"] == [p.layer("bth").psn for p in pkts]
    assert table["ibwire.offset.vendoreth"] == [p.layer("vendoreth").offset for p in pkts]
    assert table["ibwire.payload.len"] == [len(PAY)] * len(pkts)
    assert table["ibwire.malformed.code"] == [0] * len(pkts)
    assert table["infiniband.invariant.crc.status"] == [int(CrcStatus.GOOD)] * len(pkts)
    # The kernel places the new header itself: nothing is handed over.
    assert table["ibwire.fallback"] == [False] * len(pkts)
    print(name, table["infiniband.bth.psn"])
''', str(tmp_path))
    assert "eth [21, 22, 23, 24]" in out and "ib [11, 12]" in out


def _roce2_on(port: int) -> bytes:
    return ibwire.encode(ETHERNET(), IPV4(), UDP(dstport=port), BTH(opcode=0x04, psn=5),
                         payload=bytes(8))


def test_port_4792_is_not_roce_without_the_extension(tmp_path):
    assert 4792 not in GRAPH.roce_ports()
    pkt = decode(_roce2_on(4792), "eth")
    assert pkt.layer("udp").dstport == 4792 and pkt.layer("bth") is None
    assert decode(_roce2_on(ROCEV2_PORT), "eth").layer("bth").psn == 5
    path = tmp_path / "p.pcap"
    ibwire.write(path, [_roce2_on(4792), _roce2_on(ROCEV2_PORT)])
    table = ibwire.columns(path, fields=["infiniband.bth.psn", "ibwire.ib.offset"]).to_pydict()
    assert table["infiniband.bth.psn"] == [None, 5]
    assert table["ibwire.ib.offset"][0] == -1
    # A run that names the port (the CLI's -d udp.port==4792,infiniband) decodes it.
    opts = ibwire.Options(roce_ports=GRAPH.roce_ports() | {4792})
    assert decode(_roce2_on(4792), "eth", options=opts).layer("bth").psn == 5
    table = ibwire.columns(path, fields=["infiniband.bth.psn"], options=opts).to_pydict()
    assert table["infiniband.bth.psn"] == [5, 5]


def test_next_table_is_the_graph():
    nxt = T.next_table(GRAPH.roce_ports())
    for lower, row in ((ETHERNET.name, T.N_ETYPE), (IPV4.name, T.N_IP4),
                       (IPV6.name, T.N_IP6), (LRH.name, T.N_LNH), (GRH.name, T.N_NXTHDR)):
        for value, node in GRAPH.edges[lower].table.items():
            want = T.NODE_STATE.get(node, T.S_FALLBACK if node in STEPS and node != "macc"
                                    else T.S_DONE)
            assert nxt[row, value] == want, (lower, value, node)
    assert nxt[T.N_UDP, ROCEV2_PORT] == T.S_ROCE2
    assert nxt[T.N_ETYPE, ETHERTYPE_IPV4] == T.S_IP and nxt[T.N_IP4, IP_PROTO_UDP] == T.S_UDP
    for lt, node in GRAPH.linktypes.items():
        assert nxt[T.N_LINKTYPE, lt] == T.NODE_STATE.get(node, T.S_FALLBACK)
    lay = T.layers()
    for op in ibwire.OPCODES:
        rows = [r for r in lay.op_chain[op.code] if r >= 0]
        assert [lay.names[r] for r in rows] == list(op.headers)
        assert lay.op_size[op.code] == sum(lay.size[r] for r in rows)
        assert lay.op_mad[op.code] == GRAPH.carries_mad(op.code, 1, None)


def test_tables_follow_a_graph_change_after_import():
    """Tables (and a kernel compiled before the change) follow a change made after
    the engines were imported and used."""
    code = textwrap.dedent('''
        import numpy as np
        import ibwire
        import ibwire.engines.columns
        from ibwire.engines import tables as T
        from ibwire.engines.place import N_INFO, place
        before = T.kernel_tables()
        old_names = T.layers().names
        ''') + EXTENSION + textwrap.dedent('''
        after = T.kernel_tables()
        lay = T.layers()
        assert lay.names[:len(old_names)] == old_names       # built-in rows stay
        row = lay.index["vendoreth"]
        assert row == len(old_names) and after.layer_size[row] == VENDORETH.size
        assert list(after.op_chain[VENDOR_OPCODE][:1]) == [row] and after.op_valid[0xC0]
        assert before.next[T.N_UDP, VENDOR_PORT] == 0
        assert after.next[T.N_UDP, VENDOR_PORT] == T.S_ROCE2
        assert "infiniband.vendoreth.tag" in T.FIELD_ROWS
        assert "infiniband.vendoreth.tag" in ibwire.engines.columns.column_names()
        from ibwire import BTH, ETHERNET, IPV4, UDP
        data = ibwire.encode(ETHERNET(), IPV4(), UDP(dstport=VENDOR_PORT),
                             BTH(opcode=VENDOR_OPCODE, psn=9), VENDORETH(tag=3),
                             payload=bytes(4))
        buf = np.frombuffer(data, np.uint8)
        for fn in (place, place.py_func):
            lo = np.zeros((len(after.layer_size), 1), np.int32)
            info = np.zeros((N_INFO, 1), np.int32)
            fn(buf, np.zeros(1, np.int64), np.array([len(data)], np.int32),
               np.array([1], np.int32), lo, info, *after)
            pkt = ibwire.decode(data, "eth")
            assert lo[row, 0] == pkt.layer("vendoreth").offset, lo[:, 0]
            assert info[:, 0].tolist()[-2:] == [0, 0]           # not malformed, not handed over
        print("ok")
        ''')
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    assert p.stdout.strip() == "ok"


def test_encode_fills_from_the_graph():
    """Lengths, next-header values and trailers come from the graph's declarations."""
    pay = bytes(range(13))
    v6 = ibwire.encode(ETHERNET(type=ETHERTYPE_IPV4), IPV6(), UDP(), BTH(opcode=0x04),
                       payload=pay)
    pkt = decode(v6, "eth")
    assert pkt.layer("eth").type == GRAPH.encodings("eth", "ipv6")[0]
    assert not pkt.problems and pkt.icrc_status == CrcStatus.GOOD
    ip = pkt.layer("ipv6")
    assert ip.plen == len(v6) - ip.offset - IPV6.size
    assert pkt.layer("udp").length == ip.plen
    native = ibwire.encode(LRH(lnh=0), GRH(), BTH(opcode=0x04), payload=pay)
    pkt = decode(native, "ib")
    assert pkt.layer("lrh").lnh == GRAPH.value("lrh", "grh")
    assert pkt.layer("lrh").pktlen * 4 == len(native) - VCRC_LEN
    assert pkt.layer("grh").paylen == len(native) - LRH.size - GRH.size - VCRC_LEN
    assert len(pkt.icrc) == ICRC_LEN and pkt.vcrc_status == CrcStatus.GOOD
    assert not np.any([p.layer for p in pkt.problems])


def test_record_header_writers_compiled_and_plain_agree():
    """The pcap/ERF record-header writers a bulk kernel compiles write the bytes the
    capture writers write."""
    from numba import njit

    from ibwire.capture import (
        erf_header,
        erf_record,
        pcap_record_header,
        put_erf_header,
        put_pcap_record_header,
    )
    from ibwire.capture.record_headers import ERF_HEADER_LEN, PCAP_RECORD_HEADER_LEN

    ts = 1_700_000_000_123_456_789
    for put_pcap, put_erf in ((put_pcap_record_header, put_erf_header),
                              (njit(put_pcap_record_header), njit(put_erf_header))):
        out = np.zeros(PCAP_RECORD_HEADER_LEN + ERF_HEADER_LEN, np.uint8)
        at = put_pcap(out, 0, ts, 76, 80)
        assert put_erf(out, at, ts, 21, 1, 76, 60) == len(out)
        assert bytes(out[:at]) == pcap_record_header(ts, 76, 80)
        assert bytes(out[at:]) == erf_header(ts, 21, 1, 76, 60)
        assert bytes(out[at:]) == erf_record(bytes(60), ts, cap=1)[:ERF_HEADER_LEN]


def test_a_new_node_and_step_are_decoded_and_handed_over(tmp_path):
    """A module adds an EtherType edge and the step that decodes its node: the decoder
    runs the step, the column engine hands such frames to the decoder."""
    code = textwrap.dedent('''
        import sys
        import ibwire
        from ibwire.decoder import register_step, take
        from ibwire.fields import Layout, uint
        from ibwire.graph import GRAPH
        from ibwire.headers import ETHERNET
        TAG = Layout("demo", "demo", "Demo", [uint("word", 32, "Word")])
        GRAPH.add("eth", 0x88B5, "demo")                 # IEEE local experimental
        register_step("demo", lambda pkt, off, end: take(pkt, TAG, off, end) and None)
        data = ETHERNET.pack({"type": 0x88B5}) + (7).to_bytes(4, "big") + bytes(42)
        pkt = ibwire.decode(data, "eth")
        assert [lay.layout.name for lay in pkt.layers] == ["eth", "demo"], pkt.layers
        assert pkt.layer("demo").word == 7
        path = sys.argv[1] + "/d.pcap"
        ibwire.write(path, [data], linktype=1)
        table = ibwire.columns(path, fields=["ibwire.fallback", "eth.type"]).to_pydict()
        assert table["ibwire.fallback"] == [True] and table["eth.type"] == [0x88B5]
        print("ok")
        ''')
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    assert p.stdout.strip() == "ok"


# Literals the graph, the layouts and the constants replace (next-header numbers,
# header sizes and offsets, CRC sizes), in code (docstrings and comments aside).
_LITERALS = re.compile(
    r"ETHERTYPE_|UD_SEND_ONLY|NXTHDR_IBA|IP_PROTO_|ROCEV2_PORT|ERF_TYPE_(IB|ETH)\b"
    r"|\blnh ?[=<>]|\* ?4\b|to_bytes\(\d|\[\d+:\d+\]"
    r"|\b(off|end|body|start|limit|\w+_end|\w+_off) ?\+ ?(14|40|20|12|16|8|6|4|2)\b"
    r"|0x8915|4791|0x1[bB]\b|0x86[dD][dD]|0x0800")
_GRAPH_DRIVEN = ("decoder/__init__.py", "decoder/base.py", "decoder/carriers.py",
                 "decoder/transport.py", "decoder/fastpath.py", "encode.py",
                 "engines/place.py", "engines/tables.py", "engines/positions.py",
                 "engines/columns.py", "capture/record_headers.py")


def test_no_next_header_or_size_literals_in_graph_driven_code():
    root = Path(ibwire.__file__).parent
    found = []
    for rel in _GRAPH_DRIVEN:
        with open(root / rel, "rb") as f:
            code: dict[int, str] = {}
            for tok in tokenize.tokenize(f.readline):
                if tok.type not in (tokenize.STRING, tokenize.COMMENT, tokenize.ENCODING):
                    code[tok.start[0]] = code.get(tok.start[0], "") + " " + tok.string
        found += [f"{rel}:{n}: {line}" for n, line in code.items() if _LITERALS.search(line)]
    assert not found, "\n".join(found)


def test_erf_extension_headers_are_placed_by_the_kernel(tmp_path):
    """ERF records with extension headers: the kernels parse the chain with the
    capture module's one parser and agree with the decoder (nothing handed over)."""
    from ibwire.capture import erf_record
    from ibwire.capture.erf import ERF_EXT_FLAG, ERF_EXT_LEN, ERF_EXT_MORE, ERF_TYPE_AT
    from ibwire.constants import LINKTYPE_ERF
    from ibwire.headers import ERF

    pkt = ibwire.encode(LRH(dlid=1, slid=2), BTH(opcode=0x04, psn=77), payload=bytes(12))
    plain = erf_record(pkt, 10**18)
    head = bytearray(plain[:ERF.size])
    head[ERF_TYPE_AT] |= ERF_EXT_FLAG
    exts = bytes([ERF_EXT_MORE]) + bytes(ERF_EXT_LEN - 1) + bytes(ERF_EXT_LEN)
    rlen = len(plain) + len(exts)
    head[ERF.by_name["rlen"].offset:ERF.by_name["rlen"].offset + 2] = rlen.to_bytes(2, "big")
    rec = bytes(head) + exts + plain[ERF.size:]
    path = tmp_path / "ext.pcap"
    ibwire.write(path, [rec, plain], linktype=LINKTYPE_ERF)
    dec = list(ibwire.read(path))
    assert [p.problems for p in dec] == [[], []]
    assert dec[0].layer("lrh").offset == ERF.size + len(exts)
    table = ibwire.columns(path, fields=["ibwire.offset.lrh", "infiniband.bth.psn",
                                         "ibwire.fallback", "ibwire.malformed.code"])
    t = table.to_pydict()
    assert t["ibwire.offset.lrh"] == [p.layer("lrh").offset for p in dec]
    assert t["infiniband.bth.psn"] == [77, 77]
    assert t["ibwire.fallback"] == [False, False] and t["ibwire.malformed.code"] == [0, 0]


def test_encode_erf_records_from_the_graph():
    """ERF wlen/rlen come from the graph's lengths; the Ethernet types' pad (the ERF
    edge's skip) is inserted and not counted by wlen."""
    from ibwire.constants import ERF_TYPE_ETH, ERF_TYPE_IB
    from ibwire.headers import ERF

    pad = GRAPH.edges["erf"].skip[ERF_TYPE_ETH]
    eth = ibwire.encode(ERF(type=ERF_TYPE_ETH), ETHERNET(), IPV4(), UDP(),
                        BTH(opcode=0x04, psn=3), payload=bytes(9))
    native = ibwire.encode(ERF(type=ERF_TYPE_IB), LRH(), GRH(), BTH(opcode=0x04, psn=3),
                           payload=bytes(9))
    for data, frame_at in ((eth, ERF.size + pad), (native, ERF.size)):
        pkt = decode(data, "erf")
        assert not pkt.problems and pkt.icrc_status == CrcStatus.GOOD
        erf = pkt.layer("erf")
        assert erf.rlen == len(data) and erf.wlen == len(data) - frame_at
        assert pkt.layers[1].offset == frame_at
