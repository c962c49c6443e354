"""ibdump captures of an IPoIB fabric (pcaps/ibdump_ipoib_erf.pcap, made by
ibwire.gen.ibdump via tools/gen_samples.py): both ERF rlen variants read clean,
IPoIB in datagram and connected mode decodes, and the CLI agrees with tshark."""

from __future__ import annotations

import argparse
import struct

import pytest
from conftest import PCAPS, need_tshark
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_common import lines, run_cli, tshark

import ibwire
from ibwire.capture import PcapWriter, read_capture
from ibwire.capture.erf import ERF_HEADER_LEN, parse_erf_record
from ibwire.cli.main import build_parser
from ibwire.crc import CrcStatus
from ibwire.gen.ibdump import ipoib_fabric_capture
from ibwire.ipoib import is_ipoib_payload

CAPTURE = PCAPS / "ibdump_ipoib_erf.pcap"
# The Must-show fields, and more tshark fills for IPoIB's inner packets.
INNER = ["ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "arp.opcode", "udp.dstport",
         "udp.srcport", "icmp.type", "icmp.code", "icmpv6.type", "icmpv6.code", "tcp.srcport",
         "tcp.dstport", "tcp.len", "tcp.flags", "arp.src.proto_ipv4", "arp.dst.proto_ipv4",
         "icmpv6.nd.ns.target_address", "icmpv6.echo.identifier", "data.len",
         "infiniband.rwh.etype", "erf.flags.cap", "erf.rlen"]
COLUMNS = ["frame.number", "frame.protocols", "_ws.col.Source", "_ws.col.Destination",
           "_ws.col.Protocol", "frame.len"]


@pytest.fixture(scope="module")
def pkts():
    return list(ibwire.read(CAPTURE))


def _fields(path, names: list[str]) -> list[str]:
    args = ["-T", "fields"]
    for n in names:
        args += ["-e", n]
    rc, out, _ = run_cli("dump", "-r", path, *args)
    assert rc == 0
    return lines(out)


def test_sample_is_what_the_project_builds():
    assert CAPTURE.read_bytes() == ipoib_fabric_capture()


def test_both_ibdump_rlen_variants_and_interfaces():
    frames = read_capture(CAPTURE)
    recs = [parse_erf_record(f.data) for f in frames]
    assert all(len(f.data) == ERF_HEADER_LEN + r.wlen for f, r in zip(frames, recs))
    padded = [r for r in recs if r.rlen > ERF_HEADER_LEN + r.wlen]
    assert padded and all(r.rlen % 8 == 0 for r in padded)          # rounded up to 8
    assert any(r.rlen == ERF_HEADER_LEN + r.wlen and r.rlen % 8 for r in recs)
    assert {r.flags for r in recs} == {4, 5}                         # vlen | interface
    assert [f.erf_cap for f in frames] == [r.cap for r in recs]
    assert {f.erf_cap for f in frames} == {0, 1}


def test_reads_clean_every_crc_good(pkts):
    assert len(pkts) == 27
    for pkt in pkts:
        assert pkt.problems == [], pkt.problems
        assert pkt.icrc_status is CrcStatus.GOOD and pkt.vcrc_status is CrcStatus.GOOD
    rc, out, _ = run_cli("stats", CAPTURE, "-z", "expert")
    assert rc == 0
    assert "Malformed" not in out and "Warnings" not in out and "Errors" not in out
    rc, out, _ = run_cli("dump", "-r", CAPTURE)
    assert "Malformed" not in out and len(lines(out)) == 27


def test_native_erf_keeps_strict_rlen():
    rec = read_capture(CAPTURE)[1].data                     # a padded record
    parsed = parse_erf_record(rec, strict=True)
    assert parsed.problems == [(10, f"rlen {parsed.rlen} exceeds the {len(rec)} bytes present")]
    assert parse_erf_record(rec).problems == []


def test_truly_short_record_is_still_reported(tmp_path):
    rec = read_capture(CAPTURE)[11].data                    # ICMP echo request
    path = tmp_path / "short.pcap"
    w = PcapWriter(path, 197)
    w.write(rec[:-3], ts_ns=1)
    w.close()
    pkt = next(iter(ibwire.read(path)))
    wlen = parse_erf_record(rec).wlen
    assert ("erf", 14, f"wlen {wlen} exceeds the {wlen - 3} bytes of payload in the "
            "record") in [(p.layer, p.offset, p.reason) for p in pkt.problems]
    rc, out, _ = run_cli("dump", "-r", path)
    assert "[Malformed: wlen" in out


def test_ipoib_in_both_modes(pkts):
    names = [p.get("ibwire.opcode.name") for p in pkts]
    ipoib = [i + 1 for i, p in enumerate(pkts) if p.layer("ipoib") is not None]
    assert ipoib == [10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 22, 26]
    assert {names[i - 1] for i in ipoib} == {"UD Send Only", "RC Send Only", "RC Send First",
                                             "UC Send Only"}
    # Never MADs (QP0/QP1) nor SEND Middle/Last; non-zero reserved bytes stay data.
    assert all(pkts[i].layer("ipoib") is None for i in (0, 4, 6, 22, 23, 26))
    assert pkts[26].payload[:4] == b"\x08\x00\x12\x34"
    assert pkts[11]["icmp.type"] == 8 and pkts[12]["icmp.type"] == 0
    assert pkts[14]["icmpv6.type"] == 135 and pkts[21]["tcp.dstport"] == 5201
    assert pkts[9]["arp.opcode"] == 1 and pkts[25]["udp.dstport"] == 5002
    assert pkts[9]["infiniband.rwh.etype"] == 0x0806


def test_heuristic_never_on_management_qps():
    body = b"\x08\x00\x00\x00\x45" + bytes(19)
    assert is_ipoib_payload(0x04, 0x51, None, None, body)             # RC SEND Only
    assert is_ipoib_payload(0x00, 0x51, None, None, body)             # RC SEND First
    assert is_ipoib_payload(0x24, 0x51, None, None, body)             # UC SEND Only
    assert not is_ipoib_payload(0x01, 0x51, None, None, body)         # SEND Middle
    assert not is_ipoib_payload(0x02, 0x51, None, None, body)         # SEND Last
    assert not is_ipoib_payload(0x04, 1, None, None, body)            # QP1
    assert not is_ipoib_payload(0x64, 0x50, 1, 0xB, body)             # from QP1
    assert not is_ipoib_payload(0x64, 0x50, 0x48, 0x80010000, body)   # GSI Q_Key


def test_inner_fields_and_columns_equal_tshark():
    """Every IPoIB frame: ip/ipv6 addresses, arp.opcode, udp ports, ICMP/ICMPv6/TCP
    fields; every frame: frame.protocols, Source, Destination, Protocol."""
    need_tshark()
    for names in (INNER, COLUMNS):
        args = ["-T", "fields"]
        for n in names:
            args += ["-e", n]
        want = lines(tshark("-r", CAPTURE, *args))
        got = _fields(CAPTURE, names)
        assert len(got) == len(want) == 27
        for n, (a, b) in enumerate(zip(got, want), 1):
            for f, x, y in zip(names, a.split("\t"), b.split("\t")):
                assert x == y, f"frame {n} {f}: ibwire {x!r} tshark {y!r}"


@pytest.mark.parametrize("path", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.name)
def test_ipoib_fields_equal_tshark_on_every_project_capture(path):
    need_tshark()
    must = ["ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "arp.opcode", "udp.dstport"]
    want = lines(tshark("-r", path, "-T", "fields", "-e", "frame.protocols",
                        *[x for n in must for x in ("-e", n)]))
    got = _fields(path, ["frame.protocols", *must])
    assert got == want


def test_summary_lines_name_the_transport_and_the_inner_packet():
    rc, out, _ = run_cli("dump", "-r", CAPTURE)
    rows = lines(out)
    assert "ICMP 98 IPoIB UD Send Only QP=0x000050 PSN=11 | Echo (ping) request " \
           "id=0x0001, seq=1/256, ttl=64" in rows[11]
    assert "10.0.0.1 → 10.0.0.2" in rows[11]
    assert "ICMP 106 IPoIB-CM RC Send Only QP=0x000051 PSN=100 | Echo (ping) request" in rows[17]
    assert "TCP 282 IPoIB-CM RC Send First QP=0x000051 PSN=101 | 45000 → 5201 [PSH, ACK]" \
        in rows[21]
    assert "ARP 134 IPoIB UD Send Only QP=0xffffff PSN=10 | Who has 10.0.0.2? Tell 10.0.0.1" \
        in rows[9]
    assert "ICMPv6 102 IPoIB UD Send Only QP=0x000050 PSN=13 | Neighbor Solicitation for " \
           "fe80::202:c903:a1:19" in rows[14]
    assert "UDP 82 IPoIB-CM UC Send Only QP=0x000051 PSN=7 | 40001 → 5002 Len=2" in rows[25]
    assert "InfiniBand 282 RC Send Middle QP=0x000051 PSN=102" in rows[22]


def test_protocol_hierarchy_equals_tshark():
    need_tshark()
    rc, out, _ = run_cli("stats", CAPTURE, "-z", "io,phs")
    assert rc == 0 and out == tshark("-r", CAPTURE, "-q", "-z", "io,phs")
    assert "      icmp " in out and "    ipv6 " in out


def test_wireshark_mistake_connected_mode_send_first():
    """A connected-mode SEND First carries only the start of the IP packet (the rest
    follows in SEND Middle/Last): Wireshark 4.0 reports "IPv4 total length exceeds
    packet length"; ibwire decodes the segment without a problem."""
    need_tshark()
    out = tshark("-r", CAPTURE, "-Y", "frame.number == 22", "-T", "fields",
                 "-e", "_ws.expert.message", "-e", "ip.len")
    assert lines(out) == ["IPv4 total length exceeds packet length (252 bytes)\t640"]
    assert _fields(CAPTURE, ["_ws.col.Info"])[21].endswith("Len=212")
    pkt = list(ibwire.read(CAPTURE))[21]
    assert pkt.problems == [] and pkt["ip.len"] == 640


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((name, a) for a in sub._actions)


def test_every_subcommand_option_has_help():
    missing = [(cmd, a.dest) for cmd, a in _actions(build_parser())
               if not a.help and not isinstance(a, argparse._HelpAction)]
    assert missing == []
    parser = build_parser()
    stats = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = stats.choices["stats"].format_help()
    for opt in ("-r FILE", "-z STATISTICS", "-c N", "-d udp.port==N,infiniband", "--no-color"):
        assert opt in text
    assert "capture file (or -r FILE)" in text and "never colour" in text


def test_erf_padding_alone_is_not_a_problem():
    """A pcap record of 16 + wlen bytes whose rlen is rounded up (ibdump's variant)."""
    rec = read_capture(CAPTURE)[1].data
    rlen = struct.unpack_from(">H", rec, 10)[0]
    assert rlen > len(rec) and ibwire.decode(rec, 197).problems == []


def test_scapy_dissects_connected_mode_too():
    import ibwire.dissectors  # noqa: F401  (binds the layers)
    from scapy.all import rdpcap
    frames = rdpcap(str(CAPTURE))
    names = [[la.__name__ for la in frames[i].layers()] for i in (11, 17, 21, 22)]
    assert names[0][:7] == ["ERF", "LRH", "BTH", "DETH", "IPoIB", "IP", "ICMP"]
    assert names[1][:6] == ["ERF", "LRH", "BTH", "IPoIB", "IP", "ICMP"]   # RC SEND Only
    assert names[2][:6] == ["ERF", "LRH", "BTH", "IPoIB", "IP", "TCP"]    # RC SEND First
    assert "IPoIB" not in names[3]                                        # SEND Middle


@pytest.mark.parametrize("expr", ["icmp", "tcp", "icmpv6", "arp", "udp", "icmp.type == 8",
                                  "ip.src == 10.0.0.1", "erf.flags.cap == 1",
                                  "tcp.port == 5201", "not icmp"])
def test_display_filters_select_what_tshark_selects(expr):
    need_tshark()
    want = lines(tshark("-r", CAPTURE, "-Y", expr, "-T", "fields", "-e", "frame.number"))
    rc, out, _ = run_cli("dump", "-r", CAPTURE, "-Y", expr, "-T", "fields",
                         "-e", "frame.number")
    assert rc == 0 and lines(out) == want and want


def test_json_has_the_inner_protocols_as_tshark():
    import json
    need_tshark()
    args = ["-T", "json", "-Y", "frame.number == 15 || frame.number == 22"]
    ours = json.loads(run_cli("dump", "-r", CAPTURE, *args)[1])
    theirs = json.loads(tshark("-r", CAPTURE, *args))
    for a, b in zip(ours, theirs):
        la, lb = a["_source"]["layers"], b["_source"]["layers"]
        proto = "icmpv6" if "icmpv6" in lb else "tcp"
        assert la[proto] and all(lb[proto][k] == v for k, v in la[proto].items()), proto


def test_pcapng_wrapped_records_read_clean_too(tmp_path):
    from ibwire.capture import PcapngWriter
    path = tmp_path / "ibdump.pcapng"
    w = PcapngWriter(path)
    w.add_interface(197)
    for f in read_capture(CAPTURE):
        w.write(f)
    w.close()
    pkts = list(ibwire.read(path))
    assert len(pkts) == 27 and all(p.problems == [] for p in pkts)
    assert sum(p.layer("ipoib") is not None for p in pkts) == 12


@settings(max_examples=150, suppress_health_check=list(HealthCheck))
@given(tail=st.binary(max_size=80), cut=st.integers(0, 60),
       opcode=st.sampled_from([0x00, 0x04, 0x05, 0x20, 0x24, 0x64]),
       etype=st.sampled_from([0x0800, 0x86DD, 0x0806, 0x8035]),
       upper=st.sampled_from(["tcp", "icmp", "udp", "icmpv6"]))
def test_any_connected_mode_payload_decodes_and_round_trips(tail, cut, opcode, etype, upper):
    """Odd or cut IPoIB payloads in RC/UC/UD SENDs: decode never raises, marks no
    problem it cannot explain, re-encodes byte for byte, and the CLI shows them."""
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
    layer = {"tcp": TCP(), "icmp": ICMP(), "udp": UDP(), "icmpv6": ICMPv6EchoRequest()}[upper]
    ip = IPv6(src="fe80::1", dst="fe80::2") if etype == 0x86DD else IP(src="1.2.3.4",
                                                                         dst="5.6.7.8")
    inner = bytes(ip / layer / tail)
    body = etype.to_bytes(2, "big") + b"\0\0" + inner[:max(len(inner) - cut, 0)]
    hdrs = [ibwire.LRH(dlid=2, slid=1), ibwire.BTH(opcode=opcode, destqp=0x51, psn=3)]
    if opcode >= 0x64:
        hdrs.append(ibwire.DETH(q_key=0xB, srcqp=0x48))
    data = ibwire.encode(*hdrs, payload=body)
    pkt = ibwire.decode(data, "ib")
    assert pkt.icrc_status is CrcStatus.GOOD and ibwire.encode(pkt) == data
    assert not [p for p in pkt.problems if p.layer == "decoder"]
    from ibwire.cli.carriers import protocol_stack
    from ibwire.cli.columns import info_column
    stack = protocol_stack(pkt)
    assert stack[0] == "infiniband" and info_column(pkt, stack)[0]


def test_connected_mode_sends_pair_with_their_acks():
    """IPoIB connected mode carries IP over RC. On a native link the inner IP header
    is payload: naming endpoints by it put lid 2's SEND (frame 20, 10.0.0.2 ->
    10.0.0.1) apart from lid 1's ACK of it (frame 21, no payload, lid 1 -> lid 2),
    so the ACK went to a UD flow of lid 2. Both halves of QP 0x49 <-> 0x51 are now
    one connection, each with its requests and its responses, by LID."""
    from ibwire.analysis.rc import analyze
    from ibwire.analysis.rc_input import ENDPOINTS, rc_columns
    cols = rc_columns(CAPTURE)
    res = analyze(cols)
    st, names = res.streams, cols[ENDPOINTS]
    by_qp = {(names[st.req_src[h]], st.req_qp[h], st.resp_qp[h]): h for h in range(len(st))}
    a, b = by_qp[("lid 1", 0x49, 0x51)], by_qp[("lid 2", 0x51, 0x49)]
    assert st.connection[a] == st.connection[b]
    frames = cols["frame.number"]
    assert set(frames[st.hc == b].tolist()) == {20, 21}
    assert not any(n.startswith("10.") for n in names[cols["ibwire.src"]])
