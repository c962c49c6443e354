"""What a packet looks like from the outside: tshark's protocol stack names and a
short description of the frames that are not InfiniBand.

ibwire's decoder stops at the carriers RoCE needs (Ethernet, VLAN, IPv4/IPv6,
UDP) and at IPoIB; TCP, ARP and ICMP frames still appear in every capture, and
IPoIB carries them inside InfiniBand. What IP (or an Ethernet ARP) carries is
Scapy's to decode (`ibwire.inner`); here it becomes tshark's `frame.protocols`,
Protocol/Source/Destination columns and a short Info text.
"""

from __future__ import annotations

import ipaddress

from ibwire.constants import (
    ETHERTYPE_ARP,
    ETHERTYPE_LLDP,
    ETHERTYPE_PTP,
    ETHERTYPE_RARP,
    IP_PROTO_ESP,
    IP_PROTO_GRE,
    IP_PROTO_ICMP,
    IP_PROTO_ICMPV6,
    IP_PROTO_IGMP,
    IP_PROTO_SCTP,
    IP_PROTO_TCP,
    IP_PROTO_UDP,
)
from ibwire.graph import GRAPH
from ibwire.headers import UDP
from ibwire.inner import arp_info, transport_of
from ibwire.packet import Layer, Packet

# tshark's names by IP protocol number, for what Scapy leaves as raw data.
IP_PROTOS = {IP_PROTO_ICMP: "icmp", IP_PROTO_IGMP: "igmp", IP_PROTO_TCP: "tcp",
             IP_PROTO_UDP: "udp", IP_PROTO_ICMPV6: "icmpv6", IP_PROTO_SCTP: "sctp",
             IP_PROTO_GRE: "gre", IP_PROTO_ESP: "esp"}
# ... and by EtherType, for what follows an Ethernet or VLAN header undecoded.
ETHERTYPES = {ETHERTYPE_ARP: "arp", ETHERTYPE_LLDP: "lldp", ETHERTYPE_RARP: "rarp",
              ETHERTYPE_PTP: "ptp"}
# Protocol column text by stack name.
COLUMN_NAMES = {
    "eth": "Ethernet", "ip": "IPv4", "ipv6": "IPv6", "udp": "UDP", "tcp": "TCP",
    "icmp": "ICMP", "icmpv6": "ICMPv6", "igmp": "IGMP", "arp": "ARP", "rarp": "RARP",
    "lldp": "LLDP", "sctp": "SCTP", "gre": "GRE", "esp": "ESP", "ptp": "PTPv2",
    "erf": "ERF", "vlan": "802.1Q", "data": "Data",
}
_STACK_NAMES = {"erf": ["erf"], "eth": ["eth", "ethertype"], "vlan": ["vlan", "ethertype"],
                "ip": ["ip"], "ipv6": ["ipv6"], "udp": ["udp"],
                # IPoIB's header is an EtherType: tshark hands it to `ethertype`,
                # except for LINKTYPE_IPOIB whose dissector is `ipoib` itself.
                "ipoib": ["ethertype"], "ipoib_grh": ["ipoib"], "ipoib_daddr": ["ipoib"]}


def _names(layers: list) -> list[str]:
    out: list[str] = []
    for lay in layers:
        name = lay.layout.name
        if name in _STACK_NAMES:
            out += _STACK_NAMES[name]
        elif lay.layout.protocol not in out[-1:]:
            out.append(lay.layout.protocol)
    return out


def _above_ip(pkt: Packet, layers: list) -> list[str]:
    """Carrier names up to the last IP header, then what Scapy finds above it."""
    ip_at = max((i for i, lay in enumerate(layers) if lay.layout.name in ("ip", "ipv6")),
                default=-1)
    if ip_at < 0:
        return _names(layers)
    out = _names(layers[:ip_at + 1])
    inner = transport_of(pkt).stack
    proto = _next_value(layers[ip_at])
    if inner in ([], ["data"]) and proto in IP_PROTOS and \
            proto not in (IP_PROTO_TCP, IP_PROTO_UDP):
        return out + [IP_PROTOS[proto]]       # a protocol Scapy does not decode
    return out + inner


def protocol_stack(pkt: Packet) -> list[str]:
    """tshark's `frame.protocols` components, e.g. eth:ethertype:ip:udp:infiniband,
    erf:infiniband:ethertype:ip:icmp:data for IPoIB."""
    if pkt.is_infiniband:
        # Carriers before the InfiniBand headers, InfiniBand, then whatever decoded
        # the payload (MADs are InfiniBand too; IPoIB brings its own IP and more).
        before = [lay for lay in pkt.layers if lay.offset < pkt.ib_offset]
        after = [lay for lay in pkt.layers if lay.offset >= pkt.ib_offset
                 and lay.layout.protocol not in ("infiniband", "infiniband_link")]
        out = _names(before)
        out.append("infiniband_link" if pkt.layer("link") is not None else "infiniband")
        out += _above_ip(pkt, after)
        if pkt.has("infiniband.payload"):
            out.append("data")
        return out
    out = _above_ip(pkt, pkt.layers)
    names = [lay.layout.name for lay in pkt.layers]
    last = names[-1] if names else ""
    if last in ("eth", "vlan"):
        etype = _last_ethertype(pkt)
        if etype in ETHERTYPES:
            out.append(ETHERTYPES[etype])
        elif etype is not None:
            out.append("data")
    return out


def _next_value(lay: Layer) -> int | None:
    """The value of the field by which header `lay` chooses the next one (the
    protocol graph's edge: IP Protocol, IPv6 Next Header, EtherType, ...)."""
    edge = GRAPH.edges.get(lay.layout.name)
    return None if edge is None else lay.values.get(edge.field)


def _last_ethertype(pkt: Packet) -> int | None:
    for lay in reversed(pkt.layers):
        if lay.layout.name in ("eth", "vlan"):
            return _next_value(lay)
    return None


def column_protocol(pkt: Packet, stack: list[str]) -> str:
    """The Protocol column: InfiniBand / RoCE / RRoCE / InfiniBand Link, the innermost
    protocol of IPoIB and other frames (ICMP, ARP, UDP, ...)."""
    if pkt.is_infiniband and pkt.layer("ipoib") is None:
        if pkt.layer("link") is not None:
            return "InfiniBand Link"
        if pkt.layer("lrh") is not None or pkt.encap in ("ib", "erf"):
            return "InfiniBand"
        if pkt.layer("udp") is not None or pkt.encap == "roce2":
            return "RRoCE"
        return "RoCE"
    for name in reversed(stack):
        if name in ("data", "ethertype") or "." in name:
            continue
        return COLUMN_NAMES.get(name, name.upper())
    return "Unknown"


def carrier_info(pkt: Packet, stack: list[str]) -> str:
    """A short Info column for frames that carry no InfiniBand."""
    text = inner_info(pkt, stack)
    if text:
        return text
    top = next((n for n in reversed(stack) if n not in ("data", "ethertype")), "")
    if pkt.problems:
        return f"[Malformed: {pkt.problems[0]}]"
    return COLUMN_NAMES.get(top, top)


def inner_info(pkt: Packet, stack: list[str]) -> str:
    """Info text of what IP, IPoIB or an Ethernet ARP carries ("" when nothing)."""
    arp = pkt.layer("arp_ipoib")
    if arp is not None:
        v = arp.values
        return arp_info(v["opcode"], _ip(v["src_proto_ipv4"]), _ip(v["dst_proto_ipv4"]),
                        bytes(v["src_hw"]).hex())
    inner = transport_of(pkt)
    if inner.info:
        return inner.info
    if inner.top == "udp":
        udp = pkt.layer("udp")
        if udp is not None:
            v = udp.values
            return f"{v['srcport']} → {v['dstport']} Len={max(v['length'] - UDP.size, 0)}"
    return ""


def addresses(pkt: Packet) -> tuple[str, str]:
    """Source and destination columns: GID (native with GRH, RoCEv1), LID, else IP."""
    grh = pkt.layer("grh")
    if grh is not None:
        v = grh.values
        return (f"GID: {ipaddress.IPv6Address(v['sgid'])}",
                f"GID: {ipaddress.IPv6Address(v['dgid'])}")
    lrh = pkt.layer("lrh")
    if lrh is not None:
        return f"LID: {lrh.values['slid']}", f"LID: {lrh.values['dlid']}"
    for lay in reversed(pkt.layers):
        if lay.layout.name in ("ip", "ipv6"):
            v = lay.values
            return _ip(v["src"]), _ip(v["dst"])
    eth = pkt.layer("eth")
    if eth is not None:
        return _mac(eth.values["src"]), _mac(eth.values["dst"])
    return "", ""


def column_addresses(pkt: Packet) -> tuple[str, str]:
    """Source and Destination columns: as `addresses`, but IPoIB frames show the IP
    addresses they carry (as tshark does)."""
    if pkt.layer("ipoib") is not None:
        for lay in reversed(pkt.layers):
            if lay.layout.name in ("ip", "ipv6"):
                return _ip(lay.values["src"]), _ip(lay.values["dst"])
    return addresses(pkt)


def _ip(raw: bytes) -> str:
    return str(ipaddress.ip_address(bytes(raw)))


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)
