"""An IPoIB fabric as ibdump records it: native InfiniBand in ERF records in pcap.

`ipoib_fabric_capture()` returns the bytes of a small pcap (LINKTYPE_ERF) holding
what a port mirror of two IPoIB hosts shows: SMPs (QP0), an SA PathRecord query
and its answer (QP1), a CM REQ/REP/RTU, IPoIB datagram mode (UD SEND Only on the
IPoIB QP with its Q_Key: ARP, IPv4 ICMP echo, IPv4 UDP, IPv6 ICMPv6), IPoIB
connected mode (RC SEND Only, and SEND First/Middle/Last of one large datagram:
the 4-byte IPoIB header starts only the First), a UC SEND Only, and RC ACKs.

Both ibdump variants are in it (protocol-facts §10.2): even records have
rlen = 16 + wlen, odd records rlen rounded up to a multiple of 8 while the pcap
record still holds only 16 + wlen bytes. ERF flags are 4 (varying length) plus the
capture interface: 0 for packets from host A, 1 from host B (flags 4 and 5).
Every packet is built by `ibwire.encode` (lengths, ICRC, VCRC) and the inner IP
packets by Scapy, so every CRC and checksum is good.
"""

from __future__ import annotations

import io

from scapy.layers.inet import ICMP, IP, TCP
from scapy.layers.inet import UDP as ScapyUDP
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NS, IPv6
from scapy.packet import Raw

from ibwire import mad
from ibwire.capture.erf import ERF_HEADER_LEN, erf_record
from ibwire.capture.pcap import PcapWriter
from ibwire.constants import ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, LINKTYPE_ERF
from ibwire.encode import encode
from ibwire.gen.mads import SERVICE_ID
from ibwire.gen.rcwire import OP_ACK, SEND_OPS, SYN_ACK_UNLIMITED, transport_headers
from ibwire.headers.opcodes import UD_SEND_ONLY
from ibwire.headers.routing import GRH, LRH
from ibwire.ipoib import ARP_IPOIB, IPOIB, UC_SEND_ONLY

BASE_NS = 1_700_000_000 * 1_000_000_000
IPOIB_QKEY = 0x0000000B        # the Q_Key of the IPoIB broadcast group (a typical SM's)
MTU = 256                      # path MTU of the connected-mode segments
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = SEND_OPS["send"]
A = {"lid": 1, "gid": "fe80::2:c903:a1:a", "ud_qp": 0x000048, "rc_qp": 0x000049,
     "ip": "10.0.0.1", "ip6": "fe80::202:c903:a1:a", "guid": 0x0002C90300A1000A}
B = {"lid": 2, "gid": "fe80::2:c903:a1:19", "ud_qp": 0x000050, "rc_qp": 0x000051,
     "ip": "10.0.0.2", "ip6": "fe80::202:c903:a1:19", "guid": 0x0002C90300A10019}
BCAST_GID = "ff12:401b:ffff::ffff:ffff"   # IPv4 broadcast group of P_Key 0xFFFF
BCAST_LID = 0xC000
MCAST_QP = 0xFFFFFF


def _hw(host: dict) -> bytes:
    """The 20-byte IPoIB link address: flags/QPN then port GID (RFC 4391 §9.1.1)."""
    import ipaddress
    return host["ud_qp"].to_bytes(4, "big") + ipaddress.IPv6Address(host["gid"]).packed


def _ipoib(etype: int, body: bytes) -> bytes:
    return IPOIB.pack({"type": etype, "reserved": 0}) + body


def _ud(src: dict, dst: dict | None, payload: bytes, psn: int) -> bytes:
    """Datagram mode: UD SEND Only from src's IPoIB QP (to the broadcast group if no dst)."""
    bth, deth = transport_headers(UD_SEND_ONLY, {"deth": {"q_key": IPOIB_QKEY,
                                                           "srcqp": src["ud_qp"]}},
                                  destqp=dst["ud_qp"] if dst else MCAST_QP, psn=psn)
    if dst is None:
        return encode(LRH(dlid=BCAST_LID, slid=src["lid"]),
                      GRH(sgid=src["gid"], dgid=BCAST_GID, hoplmt=1), bth, deth,
                      payload=payload)
    return encode(LRH(dlid=dst["lid"], slid=src["lid"]), bth, deth, payload=payload)


def _rc(src: dict, dst: dict, opcode: int, payload: bytes, psn: int, ack: bool = False) -> bytes:
    return encode(LRH(dlid=dst["lid"], slid=src["lid"]),
                  *transport_headers(opcode, destqp=dst["rc_qp"], psn=psn, a=int(ack)),
                  payload=payload)


def _ack(src: dict, dst: dict, psn: int, msn: int) -> bytes:
    return encode(LRH(dlid=dst["lid"], slid=src["lid"]),
                  *transport_headers(OP_ACK, {"aeth": {"syndrome": SYN_ACK_UNLIMITED, "msn": msn}},
                                     destqp=dst["rc_qp"], psn=psn))


def _mads() -> list[tuple[dict, bytes]]:
    tid = 0x1000
    out = []
    for attr in ("NodeInfo", "PortInfo"):
        q = mad.smp_get(attr, transaction_id=tid)
        r = mad.build_mad(0x01, "GetResp", attr, transaction_id=tid)
        out += [(A, mad.mad_packet(q, slid=A["lid"], dlid=B["lid"])),
                (B, mad.mad_packet(r, slid=B["lid"], dlid=A["lid"]))]
        tid += 1
    q = mad.sa_path_record_query(sgid=B["gid"], dgid=A["gid"], numb_path=1, transaction_id=tid)
    r = mad.sa_mad("GetTableResp", "PathRecord", [{
        "sgid": B["gid"], "dgid": A["gid"], "dlid": A["lid"], "slid": B["lid"],
        "p_key": 0xFFFF}], transaction_id=tid)
    out += [(B, mad.mad_packet(q, slid=B["lid"], dlid=A["lid"])),
            (A, mad.mad_packet(r, slid=A["lid"], dlid=B["lid"]))]
    tid += 1
    req = mad.cm_mad("REQ", transaction_id=tid, local_comm_id=0x11, service_id=SERVICE_ID,
                     local_qpn=A["rc_qp"], starting_psn=100,
                     primary_local_lid=A["lid"], primary_remote_lid=B["lid"])
    rep = mad.cm_mad("REP", transaction_id=tid, local_comm_id=0x22, remote_comm_id=0x11,
                     local_qpn=B["rc_qp"], starting_psn=500)
    rtu = mad.cm_mad("RTU", transaction_id=tid, local_comm_id=0x11, remote_comm_id=0x22)
    out += [(A, mad.mad_packet(req, slid=A["lid"], dlid=B["lid"])),
            (B, mad.mad_packet(rep, slid=B["lid"], dlid=A["lid"])),
            (A, mad.mad_packet(rtu, slid=A["lid"], dlid=B["lid"]))]
    return out


def _datagram_mode() -> list[tuple[dict, bytes]]:
    arp = lambda op, s, d: ARP_IPOIB.pack({  # noqa: E731
        "opcode": op, "src_hw": _hw(s), "src_proto_ipv4": s["ip"],
        "dst_hw": _hw(d) if op == 2 else bytes(20), "dst_proto_ipv4": d["ip"]})
    v4 = lambda s, d, upper: bytes(IP(src=s["ip"], dst=d["ip"], id=7) / upper)  # noqa: E731
    v6 = lambda s, d, upper: bytes(IPv6(src=s["ip6"], dst=d["ip6"]) / upper)  # noqa: E731
    return [
        (A, _ud(A, None, _ipoib(ETHERTYPE_ARP, arp(1, A, B)), 10)),
        (B, _ud(B, A, _ipoib(ETHERTYPE_ARP, arp(2, B, A)), 20)),
        (A, _ud(A, B, _ipoib(ETHERTYPE_IPV4, v4(A, B, ICMP(type=8, id=1, seq=1) / Raw(
            bytes(range(32))))), 11)),
        (B, _ud(B, A, _ipoib(ETHERTYPE_IPV4, v4(B, A, ICMP(type=0, id=1, seq=1) / Raw(
            bytes(range(32))))), 21)),
        (A, _ud(A, B, _ipoib(ETHERTYPE_IPV4, v4(A, B, ScapyUDP(sport=40000, dport=5001) /
                                                Raw(b"datagram mode"))), 12)),
        (A, _ud(A, B, _ipoib(ETHERTYPE_IPV6, v6(A, B, ICMPv6ND_NS(tgt=B["ip6"]))), 13)),
        (A, _ud(A, B, _ipoib(ETHERTYPE_IPV6, v6(A, B, ICMPv6EchoRequest(id=2, seq=1))), 14)),
        (B, _ud(B, A, _ipoib(ETHERTYPE_IPV6, v6(B, A, ICMPv6EchoReply(id=2, seq=1))), 22)),
    ]


def _connected_mode() -> list[tuple[dict, bytes]]:
    ping = bytes(IP(src=A["ip"], dst=B["ip"], id=8) / ICMP(type=8, id=3, seq=1) /
                 Raw(bytes(48)))
    pong = bytes(IP(src=B["ip"], dst=A["ip"], id=9) / ICMP(type=0, id=3, seq=1) /
                 Raw(bytes(48)))
    # One TCP segment larger than the path MTU: SEND First carries the IPoIB header.
    seg = _ipoib(ETHERTYPE_IPV4, bytes(
        IP(src=A["ip"], dst=B["ip"], id=10) /
        TCP(sport=45000, dport=5201, flags="PA", seq=1000, ack=1) /
        Raw(bytes(i & 0xFF for i in range(600)))))
    parts = [seg[i:i + MTU] for i in range(0, len(seg), MTU)]
    psn = 100
    out = [(A, _rc(A, B, SEND_ONLY, _ipoib(ETHERTYPE_IPV4, ping), psn, ack=True)),
           (B, _ack(B, A, psn, 1)),
           (B, _rc(B, A, SEND_ONLY, _ipoib(ETHERTYPE_IPV4, pong), 500, ack=True)),
           (A, _ack(A, B, 500, 1))]
    ops = [SEND_FIRST] + [SEND_MIDDLE] * (len(parts) - 2) + [SEND_LAST]
    for i, (op, part) in enumerate(zip(ops, parts), 1):
        out.append((A, _rc(A, B, op, part, psn + i, ack=op == SEND_LAST)))
    out.append((B, _ack(B, A, psn + len(parts), 2)))
    uc = _ipoib(ETHERTYPE_IPV6, bytes(IPv6(src=A["ip6"], dst=B["ip6"]) /
                                      ScapyUDP(sport=40001, dport=5002) / Raw(b"UC")))
    out.append((A, encode(LRH(dlid=B["lid"], slid=A["lid"]),
                          *transport_headers(UC_SEND_ONLY, destqp=B["rc_qp"], psn=7),
                          payload=uc)))
    # An RC SEND that is not IPoIB (reserved bytes not zero): stays data.
    out.append((A, _rc(A, B, SEND_ONLY, b"\x08\x00\x12\x34" + bytes(20), psn + 10)))
    return out


def ipoib_fabric_frames() -> list[bytes]:
    """The ERF records, each cut to 16 + wlen bytes as ibdump's pcap records are."""
    frames = []
    for n, (src, pkt) in enumerate(_mads() + _datagram_mode() + _connected_mode()):
        rec = erf_record(pkt, BASE_NS + n * 1_000_000, cap=0 if src is A else 1,
                         pad=n % 2 == 1)
        frames.append(rec[:ERF_HEADER_LEN + len(pkt)])
    return frames


def ipoib_fabric_capture() -> bytes:
    """The pcap file (nanosecond timestamps, LINKTYPE_ERF)."""
    out = io.BytesIO()
    w = PcapWriter(out, LINKTYPE_ERF)
    for n, rec in enumerate(ipoib_fabric_frames()):
        w.write(rec, ts_ns=BASE_NS + n * 1_000_000)
    return out.getvalue()


__all__ = ["IPOIB_QKEY", "ipoib_fabric_capture", "ipoib_fabric_frames"]
