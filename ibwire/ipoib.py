"""IP over InfiniBand (RFC 4391): the 4-byte IPoIB header, Wireshark's
LINKTYPE_IPOIB (242) pseudo-header, and their decode/encode hooks.

Importing this module registers:

* a `PAYLOAD_DECODERS` hook that claims IPoIB datagrams inside native/RoCE UD
  packets and decodes the IPv4/IPv6 (or IPoIB ARP) behind the header;
* `register_linktype(242, "ipoib", ...)` for pcap files of Wireshark's layout;
* a `PAYLOAD_ENCODERS` hook, so `encode(decode(x)) == x` for IPoIB packets.

The heuristic that decides "this SEND payload is IPoIB" (`is_ipoib_payload`),
Wireshark's (packet-infiniband.c tries it on every SEND payload no MAD claimed):

1. the opcode is a SEND First or SEND Only (with Immediate) of RC, UC or UD:
   datagram mode is UD SEND Only on the IPoIB QP, connected mode (RFC 4755) RC
   or UC SENDs whose message starts with the same 4-byte header (SEND Middle and
   Last carry the rest of the message, no header);
2. neither end is a management QP (`GRAPH.on_management_qp`, the QP half of the
   graph's MAD rule `GRAPH.carries_mad`: QP0/QP1 carry MADs only) and the Q_Key
   is not the well-known GSI Q_Key 0x80010000: MADs stay MADs;
3. the payload starts with a known EtherType (IPv4, IPv6, ARP, RARP) followed
   by two zero bytes (the RFC's reserved field), and what follows agrees with it
   (IP version nibble 4 or 6; ARP hardware address size 20).

IP payloads are decoded with RoCEv2 ports disabled: a UDP datagram inside IPoIB
is never RoCE, whatever its port.
"""

from __future__ import annotations

from ibwire.constants import (
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_RARP,
    LINKTYPE_IPOIB,
    QKEY_GSI,
)
from ibwire.decoder import (
    PAYLOAD_DECODERS,
    Options,
    decode_ip,
    register_linktype,
    take,
)
from ibwire.encode import PAYLOAD_ENCODERS
from ibwire.fields import (
    HEX,
    NONE,
    REGISTRY,
    UINT8,
    UINT16,
    UINT24,
    UINT32,
    Field,
    Layout,
    gid,
    raw,
    rsv,
    uint,
)
from ibwire.graph import GRAPH
from ibwire.headers.carriers import IPV4, IPV6
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import RWH
from ibwire.inner import add_fields
from ibwire.packet import Layer, Packet

ETHERTYPES = {ETHERTYPE_IPV4: "IPv4", ETHERTYPE_IPV6: "IPv6", ETHERTYPE_ARP: "ARP",
              ETHERTYPE_RARP: "RARP"}
# Rule 1: the SENDs that start a message, of the transports IPoIB uses.
IPOIB_OPCODES = frozenset(
    op.code for op in OPCODES if op.valid and op.transport in ("RC", "UC", "UD")
    and op.name in ("Send First", "Send Only", "Send Only with Immediate"))
UD_SEND_OPCODES = tuple(c for c in sorted(IPOIB_OPCODES) if OPCODES[c].transport == "UD")
UC_SEND_ONLY = next(op.code for op in OPCODES if op.label == "UC Send Only")
GSI_QKEY = QKEY_GSI
IB_HW_ADDR_LEN = 20           # IPoIB link address: flags/QPN (4) + GID (16)
RWH_ETYPE = RWH.by_name["etype"].wsname

REGISTRY.add_protocol("ipoib", "IP over Infiniband")
REGISTRY.add_protocol("arp", "Address Resolution Protocol")

IPOIB = Layout("ipoib", "ipoib", "IP over Infiniband", [
    uint("type", 16, "Type", base=HEX, values=ETHERTYPES),
    uint("reserved", 16, "Reserved", base=HEX, reserved=True),
], protocol="ipoib")

# LINKTYPE 242, bytes 0-1 non-zero: the receive GRH (Wireshark packet-ipoib.c).
IPOIB_GRH = Layout("ipoib_grh", "ipoib.grh", "Global Route Header", [
    uint("ipver", 4, "IP Version", ftype=UINT8),
    uint("tclass", 8, "Traffic Class", ftype=UINT16),
    uint("flowlabel", 20, "Flow Label", ftype=UINT32),
    rsv("reserved", 8),
    uint("sqpn", 24, "Source QPN", ftype=UINT24, base=HEX),
    gid("sgid", "Source GID"),
    gid("dgid", "Destination GID", wsname="ipoib.dgid"),
], protocol="ipoib")

# LINKTYPE 242, bytes 0-1 zero: no GRH; bytes 20-39 are the destination hardware
# address (flags byte, QPN, GID). Wireshark's `ipoib.daddr` covers bytes 20-39.
IPOIB_DADDR = Layout("ipoib_daddr", None, "Destination address", [
    rsv("reserved", 160),
    uint("flags", 8, "Flags", ftype=UINT8, base=HEX, wsname=None),
    uint("qpn", 24, "Destination QPN", ftype=UINT24, base=HEX, wsname="ipoib.daddr.qpn"),
    gid("dgid", "Destination GID", wsname="ipoib.dgid"),
], protocol="ipoib")
REGISTRY.add("ipoib.daddr", NONE, "Destination address")
PSEUDO_HEADER_LEN = IPOIB_GRH.size   # LINKTYPE_IPOIB's pseudo-header, either form


def _arp(name: str, bits: int, label: str, wsname: str, **kw) -> Field:
    return uint(name, bits, label, wsname=wsname, **kw)


# ARP as IPoIB carries it (RFC 4391 §4.1): hardware type 32, 20-byte addresses.
ARP_IPOIB = Layout("arp_ipoib", None, "Address Resolution Protocol (IPoIB)", [
    _arp("hw_type", 16, "Hardware type", "arp.hw.type"),
    _arp("proto_type", 16, "Protocol type", "arp.proto.type", base=HEX, values=ETHERTYPES),
    _arp("hw_size", 8, "Hardware size", "arp.hw.size"),
    _arp("proto_size", 8, "Protocol size", "arp.proto.size"),
    _arp("opcode", 16, "Opcode", "arp.opcode",
         values={1: "request", 2: "reply", 3: "reverse request", 4: "reverse reply"}),
    raw("src_hw", IB_HW_ADDR_LEN, "Sender hardware address", wsname="arp.src.hw"),
    Field("src_proto_ipv4", 32, "Sender IP address", ftype="ipv4", kind="ipv4",
          wsname="arp.src.proto_ipv4"),
    raw("dst_hw", IB_HW_ADDR_LEN, "Target hardware address", wsname="arp.dst.hw"),
    Field("dst_proto_ipv4", 32, "Target IP address", ftype="ipv4", kind="ipv4",
          wsname="arp.dst.proto_ipv4"),
], defaults={"hw_type": 32, "proto_type": ETHERTYPE_IPV4, "hw_size": IB_HW_ADDR_LEN,
             "proto_size": 4}, protocol="arp")

_PAYLOAD_LAYOUTS = (IPOIB,)


# -- the heuristic ---------------------------------------------------------------
def looks_like_ipoib(payload: bytes) -> bool:
    """Rule 3: a known EtherType, two zero bytes, and a body that agrees with the type."""
    if len(payload) < IPOIB.size + 1:
        return False
    hdr = IPOIB.unpack(payload)
    if hdr["reserved"] != 0:
        return False
    etype = hdr["type"]
    ip = {ETHERTYPE_IPV4: IPV4, ETHERTYPE_IPV6: IPV6}.get(etype)
    if ip is not None:
        at, _, shift, mask = ip.offsets()["version"]
        return (payload[IPOIB.size + at] >> shift) & mask == ip.defaults["version"]
    if etype in (ETHERTYPE_ARP, ETHERTYPE_RARP):
        at = IPOIB.size + ARP_IPOIB.by_name["hw_size"].offset
        return len(payload) > at and payload[at] == IB_HW_ADDR_LEN
    return False


def is_ipoib_payload(opcode: int, destqp: int, srcqp: int | None, q_key: int | None,
                     payload: bytes) -> bool:
    """Rules 1-3 of the module docstring (shared with the Scapy guesser); `srcqp` and
    `q_key` are the DETH's, None when the packet has none (RC, UC)."""
    return (opcode in IPOIB_OPCODES and not GRAPH.on_management_qp(destqp, srcqp)
            and q_key != GSI_QKEY and looks_like_ipoib(payload))


# -- decoding --------------------------------------------------------------------
def _decode_body(pkt: Packet, etype: int, off: int, end: int, segment: bool = False) -> None:
    """What follows an IPoIB header: IPv4/IPv6 (never RoCE inside) and what they carry
    (Scapy's layers, `ibwire.inner`), or IPoIB ARP.

    `segment`: the payload is the SEND First of a connected-mode message, so the IP
    packet continues in the SEND Middle/Last packets; its lengths reaching past
    this packet are expected, not malformed."""
    if etype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        saved_opts, saved_trailer = pkt.options, pkt.trailer
        before = len(pkt.problems)
        pkt.options = Options(roce_ports=frozenset(),
                              verify_crc=getattr(saved_opts, "verify_crc", True))
        try:
            decode_ip(pkt, off, end)
        finally:
            # decode_ip notes bytes after the IP packet as the frame trailer; here
            # they are still inside the IB payload, before the ICRC.
            pkt.options, pkt.trailer = saved_opts, saved_trailer
        if segment:
            pkt.problems[before:] = [p for p in pkt.problems[before:]
                                     if not _cut_by_segment(p)]
        add_fields(pkt)     # TCP, ICMP, ... via Scapy (imported on first use)
    elif etype in (ETHERTYPE_ARP, ETHERTYPE_RARP) and end - off >= ARP_IPOIB.size \
            and pkt.data[off + 4] == IB_HW_ADDR_LEN and pkt.data[off + 5] == 4:
        take(pkt, ARP_IPOIB, off, end)


def _cut_by_segment(problem) -> bool:
    """An IP/UDP length reaching past the packet (decode_ip's "does not fit" notes),
    which a connected-mode SEND First cuts short by design (see _decode_body)."""
    return problem.layer in ("ip", "ipv6", "udp") and "does not fit" in problem.reason


def decode_ipoib_payload(pkt: Packet, start: int, end: int) -> bool:
    """PAYLOAD_DECODERS hook: claim an IPoIB datagram (UD) or the start of a
    connected-mode message (RC/UC SEND First/Only)."""
    bth, deth = pkt.layer("bth"), pkt.layer("deth")
    if bth is None or bth.opcode not in IPOIB_OPCODES:
        return False
    srcqp, q_key = (deth.srcqp, deth.q_key) if deth is not None else (None, None)
    if not is_ipoib_payload(bth.opcode, bth.destqp, srcqp, q_key, pkt.data[start:end]):
        return False
    hdr = take(pkt, IPOIB, start, end)
    if hdr is not None:
        # Wireshark shows this EtherType inside InfiniBand as `infiniband.rwh.etype`
        # ("IBA Payload - appears to be EtherType encapsulated"); `ipoib.type` too.
        pkt.add(RWH_ETYPE, hdr.type)
        _decode_body(pkt, hdr.type, start + IPOIB.size, end,
                     segment=OPCODES[bth.opcode].name == "Send First")
    return True


def decode_ipoib_linktype(pkt: Packet, off: int, end: int) -> None:
    """LINKTYPE_IPOIB (242): 40-byte pseudo-header (GRH or destination address form),
    IPoIB header, then IP/ARP."""
    form = IPOIB_DADDR if pkt.data[off:off + 2] == b"\0\0" else IPOIB_GRH
    if take(pkt, form, off, end) is None:
        return
    off += form.size                     # both forms are 40 bytes
    hdr = take(pkt, IPOIB, off, end)
    if hdr is not None:
        _decode_body(pkt, hdr.type, off + IPOIB.size, end)


# -- encoding --------------------------------------------------------------------
def encode_ipoib_payload(layers: list[Layer], pkt: Packet) -> bytes | None:
    """PAYLOAD_ENCODERS hook: the IB payload rebuilt from the IPoIB/IP/UDP layers'
    values over the decoded bytes (so unparsed data and edits both survive)."""
    if not layers or layers[0].layout not in _PAYLOAD_LAYOUTS:
        return None
    start = pkt.payload_offset
    out = bytearray(pkt.payload)
    for lay in layers:
        o = lay.offset - start
        if 0 <= o and o + lay.size <= len(out):
            out[o:o + lay.size] = lay.layout.pack(lay.values)
    return bytes(out)


if decode_ipoib_payload not in PAYLOAD_DECODERS:
    PAYLOAD_DECODERS.append(decode_ipoib_payload)
if encode_ipoib_payload not in PAYLOAD_ENCODERS:
    PAYLOAD_ENCODERS.append(encode_ipoib_payload)
register_linktype(LINKTYPE_IPOIB, "ipoib", decode_ipoib_linktype)

__all__ = [
    "ARP_IPOIB", "ETHERTYPES", "IPOIB", "IPOIB_DADDR", "IPOIB_GRH", "LINKTYPE_IPOIB",
    "decode_ipoib_linktype", "decode_ipoib_payload", "encode_ipoib_payload",
    "is_ipoib_payload", "looks_like_ipoib",
]
