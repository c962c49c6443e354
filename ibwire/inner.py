"""What IP (or an Ethernet ARP) carries, as tshark names it.

ibwire's own layouts stop at the carriers RoCE needs (Ethernet, IPv4/IPv6, UDP) and
at IPoIB's header and ARP. Above them -- TCP, ICMP, ICMPv6, IPv6 extension headers,
ARP on Ethernet -- the bytes are handed to Scapy's own layers and the result is
given Wireshark's names: the protocol names that continue `frame.protocols`
(`icmp`, `data`, ...), the fields (`tcp.srcport`, `icmp.type`, `icmpv6.type`, ...)
and a short Info text. Nothing here parses a header by hand.

Scapy is imported on first use (`import ibwire` stays light). `transport_of(pkt)`
computes it once per packet (cached on the packet). The IPoIB
decoder adds `fields` to the packets it claims, so `pkt["icmp.type"]` works there;
the CLI uses the same for every frame.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ibwire.constants import ARP_REPLY, ARP_REQUEST
from ibwire.fields import DEC, ETHER, HEX, IPV6, REGISTRY, UINT8, UINT16, UINT32
from ibwire.graph import GRAPH
from ibwire.packet import Packet

# tshark's fields this module fills: name -> (type, base, label).
FIELDS: dict[str, tuple[str, str, str]] = {
    "tcp.srcport": (UINT16, DEC, "Source Port"),
    "tcp.dstport": (UINT16, DEC, "Destination Port"),
    "tcp.port": (UINT16, DEC, "Source or Destination Port"),
    "tcp.seq_raw": (UINT32, DEC, "Sequence Number (raw)"),
    "tcp.ack_raw": (UINT32, DEC, "Acknowledgment number (raw)"),
    "tcp.hdr_len": (UINT8, DEC, "Header Length"),
    "tcp.flags": (UINT16, HEX, "Flags"),
    "tcp.window_size_value": (UINT16, DEC, "Window"),
    "tcp.len": (UINT32, DEC, "TCP Segment Len"),
    "icmp.type": (UINT8, DEC, "Type"),
    "icmp.code": (UINT8, DEC, "Code"),
    "icmp.checksum": (UINT16, HEX, "Checksum"),
    "icmpv6.type": (UINT8, DEC, "Type"),
    "icmpv6.code": (UINT8, DEC, "Code"),
    "icmpv6.checksum": (UINT16, HEX, "Checksum"),
    "icmpv6.echo.identifier": (UINT16, HEX, "Identifier"),
    "icmpv6.echo.sequence_number": (UINT16, DEC, "Sequence"),
    "icmpv6.nd.ns.target_address": (IPV6, DEC, "Target Address"),
    "icmpv6.nd.na.target_address": (IPV6, DEC, "Target Address"),
    "arp.src.hw_mac": (ETHER, DEC, "Sender MAC address"),
    "arp.dst.hw_mac": (ETHER, DEC, "Target MAC address"),
}
# Ethernet ARP also fills these, which IPoIB's ARP layout registers.
_ARP_SHARED = ("arp.opcode", "arp.src.proto_ipv4", "arp.dst.proto_ipv4")
for _name, (_ft, _base, _label) in FIELDS.items():
    REGISTRY.add(_name, _ft, _label, _base)
# (tcp, icmp, icmpv6 are not registered protocols: display filters find them in the
# frame's protocol stack, as for Ethernet frames.)
NAMES = frozenset(FIELDS) | frozenset(_ARP_SHARED)



@functools.cache
def _scapy() -> SimpleNamespace:
    """Scapy's layers, imported once on first use; with tshark's protocol names."""
    from scapy.layers import inet, inet6, l2
    from scapy.packet import Raw
    ns = SimpleNamespace(inet=inet, inet6=inet6, ARP=l2.ARP, Raw=Raw)
    ns.names = {
        inet.TCP: "tcp", inet.UDP: "udp", inet.ICMP: "icmp", inet.IP: "ip",
        inet6.IPv6: "ipv6", inet.IPerror: "ip", inet.UDPerror: "udp",
        inet.TCPerror: "tcp", inet.ICMPerror: "icmp",
        inet6.IPv6ExtHdrHopByHop: "ipv6.hopopts", inet6.IPv6ExtHdrRouting: "ipv6.routing",
        inet6.IPv6ExtHdrFragment: "ipv6.fraghdr", inet6.IPv6ExtHdrDestOpt: "ipv6.dstopts",
    }
    return ns


# Column text tshark uses for an ICMP / ICMPv6 type.
ICMP_TYPES = {0: "Echo (ping) reply", 3: "Destination unreachable", 5: "Redirect",
              8: "Echo (ping) request", 11: "Time-to-live exceeded"}
ICMPV6_TYPES = {1: "Destination Unreachable", 2: "Packet Too Big", 3: "Time Exceeded",
                128: "Echo (ping) request", 129: "Echo (ping) reply",
                133: "Router Solicitation", 134: "Router Advertisement",
                135: "Neighbor Solicitation", 136: "Neighbor Advertisement",
                143: "Multicast Listener Report Message v2"}
TCP_FLAGS = ((0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"),
             (0x20, "URG"), (0x40, "ECE"), (0x80, "CWR"), (0x100, "NS"))   # tshark's order


@dataclass
class Inner:
    """The protocols above the last carrier header ibwire's layouts decoded."""

    stack: list[str] = field(default_factory=list)   # frame.protocols continuation
    fields: dict[str, list[Any]] = field(default_factory=dict)
    info: str = ""                                    # Info column text ("" = none)
    data: bytes | None = None                         # what tshark's `data` holds

    @property
    def top(self) -> str:
        """The innermost protocol (tshark's Protocol column names it)."""
        return next((n for n in reversed(self.stack) if n != "data" and "." not in n), "")


_NONE = Inner()


def transport_of(pkt: Packet) -> Inner:
    """The Scapy-decoded protocols above pkt's last IP header, or its Ethernet ARP."""
    cached = pkt.__dict__.get("_ibwire_inner") if hasattr(pkt, "__dict__") else None
    if cached is not None:
        return cached
    try:
        inner = _compute(pkt)
    except Exception:  # noqa: BLE001 - presentation of odd bytes must never fail
        inner = Inner()
    if hasattr(pkt, "__dict__"):
        pkt.__dict__["_ibwire_inner"] = inner
    return inner


def _compute(pkt: Packet) -> Inner:
    layers = pkt.layers
    if len(layers) > 1 and layers[-1].layout.name == "udp":
        layers = layers[:-1]          # UDP is ours; Scapy reads from its IP header
    last = layers[-1] if layers else None
    if last is None:
        return _NONE
    name = last.layout.name
    data = pkt.data
    if name not in ("ip", "ipv6", "eth", "vlan"):
        return _NONE                  # (no Scapy import for InfiniBand/RoCE packets)
    sc = _scapy()
    # Inside IPoIB the IP packet ends with the IB payload (the ICRC and VCRC follow).
    limit = pkt.payload_offset + len(pkt.payload) if pkt.layer("ipoib") else len(data)
    if name in ("ip", "ipv6"):
        end = min(limit, _declared_end(last))
        return _above((sc.inet.IP if name == "ip" else sc.inet6.IPv6)(data[last.offset:end]))
    edge = GRAPH.edges[name]
    if GRAPH.next(name, last.values.get(edge.field)) == "arp":
        return _arp(sc.ARP(data[last.offset + last.layout.size:]))
    return _NONE


def _declared_end(lay: Any) -> int:
    """Where the IP packet ends by its length field (the protocol graph's `Length`:
    what it counts and from where), at least past its own header."""
    end = lay.offset + lay.layout.size
    for ln in GRAPH.length_of(lay.layout.name):
        start = lay.offset + (lay.layout.size if ln.start == "after" else 0)
        end = max(end, start + lay.values[ln.field] * ln.unit)
    return end


def _above(ip: Any) -> Inner:
    """Names, fields and Info of what the IP packet carries (the IP header itself is
    ibwire's own layer, so it is left out)."""
    sc = _scapy()
    out = Inner()
    layer = ip.payload
    while layer and not isinstance(layer, sc.Raw) and layer.name != "Padding":
        if isinstance(layer, sc.inet6._ICMPv6):
            out.stack.append("icmpv6")
            _icmpv6(layer, out)
            return out          # tshark keeps ND options and echo data inside ICMPv6
        kind = sc.names.get(type(layer))
        if kind is None:              # a layer tshark would not name the same way
            _data(layer.underlayer, out)
            return out
        out.stack.append(kind)
        if type(layer) is sc.inet.TCP:
            _tcp(layer, out)
        elif type(layer) is sc.inet.ICMP:
            _icmp(layer, ip, out)
        elif type(layer) is sc.inet.UDP:
            # UDP's fields are ibwire's own layout; its payload is tshark's `data`.
            _data(layer, out)
            return out
        layer = layer.payload
    if isinstance(layer, sc.Raw) and len(layer.load) > 0:
        out.stack.append("data")
        out.data = bytes(layer.load)
    return out


def _data(layer: Any, out: Inner) -> None:
    """A transport's payload (without Scapy's trailing Padding) as tshark's `data`."""
    body = bytes(layer.payload)
    body = body[:len(body) - len(_padding(layer))]
    if body:
        out.stack.append("data")
        out.data = body


def _padding(layer: Any) -> bytes:
    pad = layer.getlayer("Padding")
    return bytes(pad.load) if pad is not None else b""


def _put(out: Inner, name: str, *values: Any) -> None:
    out.fields.setdefault(name, []).extend(values)


def _tcp(tcp: Any, out: Inner) -> None:
    hlen = (tcp.dataofs or 5) * 4
    seg = len(bytes(tcp.payload)) - len(_padding(tcp))
    flags = int(tcp.flags)
    for name, value in (("tcp.srcport", tcp.sport), ("tcp.dstport", tcp.dport),
                        ("tcp.port", tcp.sport), ("tcp.port", tcp.dport),
                        ("tcp.seq_raw", tcp.seq), ("tcp.ack_raw", tcp.ack),
                        ("tcp.hdr_len", hlen), ("tcp.flags", flags),
                        ("tcp.window_size_value", tcp.window), ("tcp.len", seg)):
        _put(out, name, value)
    names = ", ".join(n for bit, n in TCP_FLAGS if flags & bit)
    out.info = f"{tcp.sport} → {tcp.dport} [{names}] Win={tcp.window} Len={seg}"


def _icmp(icmp: Any, ip: Any, out: Inner) -> None:
    _put(out, "icmp.type", icmp.type)
    _put(out, "icmp.code", icmp.code)
    _put(out, "icmp.checksum", icmp.chksum)
    text = ICMP_TYPES.get(icmp.type, f"Type {icmp.type}")
    if icmp.type in (0, 8):
        swapped = int.from_bytes(icmp.seq.to_bytes(2, "little"), "big")   # tshark's BE/LE
        text += f" id=0x{icmp.id:04x}, seq={icmp.seq}/{swapped}, ttl={ip.ttl}"
    elif icmp.code:
        text += f" (code {icmp.code})"
    out.info = text


def _icmpv6(icmp: Any, out: Inner) -> None:
    # Every ICMPv6 message starts type, code, checksum; Scapy names the code field
    # differently per message ("code", "res", ...), so take its first three fields.
    code, cksum = (icmp.getfieldval(f.name) for f in icmp.fields_desc[1:3])
    _put(out, "icmpv6.type", icmp.type)
    _put(out, "icmpv6.code", code)
    _put(out, "icmpv6.checksum", cksum)
    text = ICMPV6_TYPES.get(icmp.type, f"Type {icmp.type}")
    i6 = _scapy().inet6
    if isinstance(icmp, (i6.ICMPv6EchoRequest, i6.ICMPv6EchoReply)):
        _put(out, "icmpv6.echo.identifier", icmp.id)
        _put(out, "icmpv6.echo.sequence_number", icmp.seq)
        text += f" id=0x{icmp.id:04x}, seq={icmp.seq}"
        under = icmp.underlayer
        if under is not None and hasattr(under, "hlim"):
            text += f", hop limit={under.hlim}"
    elif isinstance(icmp, i6.ICMPv6ND_NS):
        _put(out, "icmpv6.nd.ns.target_address", ipaddress.IPv6Address(icmp.tgt).packed)
        text += f" for {icmp.tgt}"
    elif isinstance(icmp, i6.ICMPv6ND_NA):
        _put(out, "icmpv6.nd.na.target_address", ipaddress.IPv6Address(icmp.tgt).packed)
        text += f" {icmp.tgt}"
    out.info = text


def _arp(arp: Any) -> Inner:
    out = Inner(stack=["arp"])
    _put(out, "arp.opcode", arp.op)
    if arp.hwlen == 6 and arp.plen == 4:
        _put(out, "arp.src.hw_mac", _mac(arp.hwsrc))
        _put(out, "arp.src.proto_ipv4", ipaddress.IPv4Address(arp.psrc).packed)
        _put(out, "arp.dst.hw_mac", _mac(arp.hwdst))
        _put(out, "arp.dst.proto_ipv4", ipaddress.IPv4Address(arp.pdst).packed)
        out.info = arp_info(arp.op, arp.psrc, arp.pdst, arp.hwsrc)
    return out


def arp_info(op: int, spa: str, tpa: str, sha: str) -> str:
    """tshark's Info text for an ARP request or reply."""
    if op == ARP_REQUEST:
        return f"Who has {tpa}? Tell {spa}"
    if op == ARP_REPLY:
        return f"{spa} is at {sha}"
    return f"ARP opcode {op}"


def _mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def add_fields(pkt: Packet) -> None:
    """Add the transport's fields to pkt (the IPoIB decoder does, so the library's
    `pkt["icmp.type"]` works on what it claims)."""
    for name, values in transport_of(pkt).fields.items():
        for v in values:
            pkt.add(name, v)


__all__ = ["FIELDS", "ICMPV6_TYPES", "ICMP_TYPES", "Inner", "NAMES", "add_fields",
           "arp_info", "transport_of"]
