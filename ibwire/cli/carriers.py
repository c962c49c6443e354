"""What a packet looks like from the outside: tshark's protocol stack names and a
short description of the frames that are not InfiniBand.

ibwire's decoder stops at the carriers RoCE needs (Ethernet, VLAN, IPv4/IPv6,
UDP); TCP, ARP and ICMP frames still appear in every capture, and a `-T fields`
line up with tshark needs their `frame.protocols` and a summary line. Those few
header bytes are read here, for presentation only.
"""

from __future__ import annotations

import ipaddress
import struct

from ibwire.packet import Packet

IP_PROTOS = {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp",
             47: "gre", 50: "esp"}
IPV6_EXT = {0: "ipv6.hopopts", 43: "ipv6.routing", 44: "ipv6.fraghdr", 60: "ipv6.dstopts"}
ETHERTYPES = {0x0806: "arp", 0x88CC: "lldp", 0x8035: "rarp", 0x88F7: "ptp"}
# Protocol column text by stack name.
COLUMN_NAMES = {
    "eth": "Ethernet", "ip": "IPv4", "ipv6": "IPv6", "udp": "UDP", "tcp": "TCP",
    "icmp": "ICMP", "icmpv6": "ICMPv6", "igmp": "IGMP", "arp": "ARP", "rarp": "RARP",
    "lldp": "LLDP", "sctp": "SCTP", "gre": "GRE", "esp": "ESP", "ptp": "PTPv2",
    "erf": "ERF", "vlan": "802.1Q", "data": "Data",
}
TCP_FLAGS = ((0x100, "NS"), (0x80, "CWR"), (0x40, "ECE"), (0x20, "URG"), (0x10, "ACK"),
             (0x08, "PSH"), (0x04, "RST"), (0x02, "SYN"), (0x01, "FIN"))


def _ip_end(pkt: Packet) -> tuple[int, int, int] | None:
    """(protocol number, payload offset, payload end) of the last IP header."""
    data = pkt.data
    for lay in reversed(pkt.layers):
        name = lay.layout.name
        if name == "ip":
            start = lay.offset + lay.values["ihl"] * 4
            end = min(len(data), lay.offset + lay.values["len"])
            return lay.values["proto"], start, end
        if name == "ipv6":
            end = min(len(data), lay.offset + 40 + lay.values["plen"])
            return lay.values["nxt"], lay.offset + 40, end
    return None


def _ipv6_ext(pkt: Packet, nxt: int, off: int, end: int, out: list[str]) -> tuple[int, int]:
    """Walk IPv6 extension headers, naming them as tshark does."""
    data = pkt.data
    hops = 0
    while nxt in IPV6_EXT and off + 8 <= end and hops < 8:
        out.append(IPV6_EXT[nxt])
        length = 8 if nxt == 44 else (data[off + 1] + 1) * 8
        nxt = data[off]
        off += length
        hops += 1
    return nxt, off


_STACK_NAMES = {"erf": ["erf"], "eth": ["eth", "ethertype"], "vlan": ["vlan", "ethertype"],
                "ip": ["ip"], "ipv6": ["ipv6"], "udp": ["udp"]}


def _names(layers: list, pkt: Packet) -> list[str]:
    out: list[str] = []
    for lay in layers:
        name = lay.layout.name
        if name in _STACK_NAMES:
            out += _STACK_NAMES[name]
            if name == "ipv6":
                _ipv6_ext(pkt, lay.values["nxt"], lay.offset + 40, len(pkt.data), out)
        elif lay.layout.protocol not in out[-1:]:
            out.append(lay.layout.protocol)
    return out


def protocol_stack(pkt: Packet) -> list[str]:
    """tshark's `frame.protocols` components, e.g. eth:ethertype:ip:udp:infiniband."""
    if pkt.is_infiniband:
        # Carriers before the InfiniBand headers, InfiniBand, then whatever decoded
        # the payload (MADs are InfiniBand too; IPoIB brings its own IP and UDP).
        before = [lay for lay in pkt.layers if lay.offset < pkt.ib_offset]
        after = [lay for lay in pkt.layers if lay.offset >= pkt.ib_offset
                 and lay.layout.protocol not in ("infiniband", "infiniband_link")]
        out = _names(before, pkt)
        out.append("infiniband_link" if pkt.layer("link") is not None else "infiniband")
        out += _names(after, pkt)
        if pkt.has("infiniband.payload"):
            out.append("data")
        return out
    out = _names(pkt.layers, pkt)
    names = [lay.layout.name for lay in pkt.layers]
    # Not InfiniBand: name what follows the last carrier header.
    last = names[-1] if names else ""
    if last == "udp":
        udp = pkt.layer("udp")
        assert udp is not None
        if udp.values["length"] > 8:
            out.append("data")
        return out
    ip = _ip_end(pkt)
    if ip is not None and last in ("ip", "ipv6"):
        proto, off, end = ip
        if last == "ipv6":
            proto, off = _ipv6_ext(pkt, proto, off, end, [])
        name = IP_PROTOS.get(proto)
        if name is None:
            return out + (["data"] if end > off else [])
        out.append(name)
        if name == "tcp" and off + 13 <= end:
            hlen = (pkt.data[off + 12] >> 4) * 4
            if end - off > hlen:
                out.append("data")
        return out
    if last in ("eth", "vlan"):
        etype = _last_ethertype(pkt)
        if etype in ETHERTYPES:
            out.append(ETHERTYPES[etype])
        elif etype is not None:
            out.append("data")
    return out


def _last_ethertype(pkt: Packet) -> int | None:
    for lay in reversed(pkt.layers):
        if lay.layout.name == "vlan":
            return lay.values["etype"]
        if lay.layout.name == "eth":
            return lay.values["type"]
    return None


def column_protocol(pkt: Packet, stack: list[str]) -> str:
    """The Protocol column: InfiniBand / RoCE / RRoCE / InfiniBand Link, else the top
    carrier protocol."""
    if pkt.is_infiniband:
        if pkt.layer("link") is not None:
            return "InfiniBand Link"
        if pkt.layer("lrh") is not None or pkt.encap in ("ib", "erf"):
            return "InfiniBand"
        if pkt.layer("udp") is not None or pkt.encap == "roce2":
            return "RRoCE"
        return "RoCE"
    for name in reversed(stack):
        if name in ("data", "ethertype"):
            continue
        return COLUMN_NAMES.get(name, name.upper())
    return "Unknown"


def carrier_info(pkt: Packet, stack: list[str]) -> str:
    """A short Info column for frames that carry no InfiniBand."""
    data = pkt.data
    top = next((n for n in reversed(stack) if n not in ("data", "ethertype")), "")
    ip = _ip_end(pkt)
    if top in ("tcp", "udp") and ip is not None:
        _, off, end = ip
        if top == "udp":
            udp = pkt.layer("udp")
            if udp is not None:
                v = udp.values
                return f"{v['srcport']} → {v['dstport']} Len={max(v['length'] - 8, 0)}"
        if off + 14 <= end:
            sport, dport = struct.unpack_from(">HH", data, off)
            flags = struct.unpack_from(">H", data, off + 12)[0] & 0x1FF
            hlen = (data[off + 12] >> 4) * 4
            names = ", ".join(n for bit, n in TCP_FLAGS if flags & bit)
            return f"{sport} → {dport} [{names}] Len={max(end - off - hlen, 0)}"
    if top == "arp":
        return _arp_info(pkt)
    if top in ("icmp", "icmpv6") and ip is not None:
        _, off, end = ip
        if top == "icmpv6":
            lay = pkt.layer("ipv6")
            _, off = _ipv6_ext(pkt, lay.values["nxt"] if lay else 58, off, end, [])
        if off < end:
            return f"{COLUMN_NAMES[top]} type {data[off]}"
    if pkt.problems:
        return f"[Malformed: {pkt.problems[0]}]"
    return COLUMN_NAMES.get(top, top)


def _arp_info(pkt: Packet) -> str:
    eth = pkt.layer("vlan") or pkt.layer("eth")
    if eth is None:
        return "ARP"
    off = eth.offset + eth.layout.size
    data = pkt.data
    if off + 28 > len(data):
        return "ARP"
    op = struct.unpack_from(">H", data, off + 6)[0]
    sha = ":".join(f"{b:02x}" for b in data[off + 8:off + 14])
    spa = str(ipaddress.IPv4Address(data[off + 14:off + 18]))
    tpa = str(ipaddress.IPv4Address(data[off + 24:off + 28]))
    if op == 1:
        return f"Who has {tpa}? Tell {spa}"
    if op == 2:
        return f"{spa} is at {sha}"
    return f"ARP opcode {op}"


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


def _ip(raw: bytes) -> str:
    return str(ipaddress.ip_address(bytes(raw)))


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)
