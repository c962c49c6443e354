"""Headers that carry InfiniBand: Ethernet, 802.1Q, IPv4, IPv6, UDP (RoCE) and
the ERF record header (ibdump, DAG). Field names are Wireshark's."""

from __future__ import annotations

from ibwire.constants import (
    ERF_TYPE_NAMES,
    IP_PROTO_UDP,
    MACC_OP_PAUSE,
    MACC_OP_PFC,
    ROCEV2_PORT,
)
from ibwire.fields import (
    BOOL,
    DEC,
    HEX,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    Field,
    Layout,
    derived,
    flag,
    overlay,
    raw,
    uint,
)
from ibwire.fields import (
    IPV4 as T_IPV4,
)

MACC_OPCODES = {MACC_OP_PAUSE: "Pause", MACC_OP_PFC: "Class Based Flow Control [CBFC] Pause"}
PFC_PRIORITIES = 8
PAUSE_QUANTUM_BITS = 512


def pause_ns(quanta: int, gbps: float) -> int:
    """A pause of `quanta` (units of 512 bit times) at `gbps`, in whole nanoseconds."""
    return int(quanta * PAUSE_QUANTUM_BITS / gbps)


def _addr(name: str, nbytes: int, kind: str, ftype: str, label: str) -> Field:
    return Field(name, nbytes * 8, label, ftype=ftype, kind=kind)


ETHERNET = Layout("eth", "eth", "Ethernet II", [
    _addr("dst", 6, "ether", "ether", "Destination"),
    _addr("src", 6, "ether", "ether", "Source"),
    uint("type", 16, "Type", base=HEX),
])

VLAN = Layout("vlan", "vlan", "802.1Q Virtual LAN", [
    uint("priority", 3, "Priority", ftype=UINT16),
    uint("dei", 1, "DEI", ftype=UINT16),
    uint("id", 12, "ID", ftype=UINT16),
    uint("etype", 16, "Type", base=HEX),
])

IPV4 = Layout("ip", "ip", "Internet Protocol Version 4", [
    uint("version", 4, "Version", ftype=UINT8),
    uint("ihl", 4, "Header Length (words)", ftype=UINT8, wsname=None),
    uint("dscp", 6, "Differentiated Services Codepoint", ftype=UINT8,
         wsname="ip.dsfield.dscp"),
    uint("ecn", 2, "Explicit Congestion Notification", ftype=UINT8, wsname="ip.dsfield.ecn"),
    uint("len", 16, "Total Length"),
    uint("id", 16, "Identification", base=HEX),
    flag("rb", "Reserved bit", wsname="ip.flags.rb"),
    flag("df", "Don't fragment", wsname="ip.flags.df"),
    flag("mf", "More fragments", wsname="ip.flags.mf"),
    uint("frag_offset", 13, "Fragment Offset", ftype=UINT16),
    uint("ttl", 8, "Time to Live"),
    uint("proto", 8, "Protocol"),
    uint("checksum", 16, "Header Checksum", base=HEX),
    _addr("src", 4, "ipv4", T_IPV4, "Source Address"),
    _addr("dst", 4, "ipv4", T_IPV4, "Destination Address"),
    derived("hdr_len", lambda v: v["ihl"] * 4, "Header Length", ftype=UINT8),
], icrc_variant=("dscp", "ecn", "ttl", "checksum"),
   defaults={"version": 4, "ihl": 5, "ttl": 64, "proto": IP_PROTO_UDP, "df": 1})

IPV6 = Layout("ipv6", "ipv6", "Internet Protocol Version 6", [
    uint("version", 4, "Version", ftype=UINT8),
    uint("tclass", 8, "Traffic Class", ftype=UINT32, base=HEX),
    uint("flow", 20, "Flow Label", ftype="uint24", base=HEX),
    uint("plen", 16, "Payload Length"),
    uint("nxt", 8, "Next Header"),
    uint("hlim", 8, "Hop Limit"),
    _addr("src", 16, "ipv6", "ipv6", "Source Address"),
    _addr("dst", 16, "ipv6", "ipv6", "Destination Address"),
], icrc_variant=("tclass", "flow", "hlim"),
   defaults={"version": 6, "nxt": IP_PROTO_UDP, "hlim": 64})

UDP = Layout("udp", "udp", "User Datagram Protocol", [
    uint("srcport", 16, "Source Port"),
    uint("dstport", 16, "Destination Port"),
    uint("length", 16, "Length"),
    uint("checksum", 16, "Checksum", base=HEX),
], icrc_variant=("checksum",), defaults={"dstport": ROCEV2_PORT, "srcport": 0xC000})

# Linux "cooked" captures (tcpdump -i any): LINKTYPE_LINUX_SLL 113 and SLL2 276.
SLL = Layout("sll", "sll", "Linux cooked capture v1", [
    uint("pkttype", 16, "Packet type"),
    uint("hatype", 16, "Link-layer address type"),
    uint("halen", 16, "Link-layer address length"),
    raw("src", 8, "Source", wsname="sll.src.other"),
    uint("etype", 16, "Protocol", base=HEX),
])
SLL2 = Layout("sll2", "sll", "Linux cooked capture v2", [
    uint("etype", 16, "Protocol", base=HEX),
    uint("reserved", 16, "Reserved", wsname=None, reserved=True),
    uint("ifindex", 32, "Interface index"),
    uint("hatype", 16, "Link-layer address type"),
    uint("pkttype", 8, "Packet type", ftype=UINT16),
    uint("halen", 8, "Link-layer address length", ftype=UINT16),
    raw("src", 8, "Source", wsname="sll.src.other"),
], protocol="sll")

# MAC Control (IEEE 802.3 Annex 31B PAUSE; 802.1Qbb PFC, opcode 0x0101): the opcode,
# then the opcode's parameters. Quanta are units of 512 bit times.
MACC = Layout("macc", "macc", "MAC Control", [
    uint("opcode", 16, "Opcode", base=HEX, values=MACC_OPCODES),
], protocol="macc")
MACC_PAUSE = Layout("macc_pause", "macc", "MAC Control PAUSE", [
    uint("pause_time", 16, "pause_time"),
], protocol="macc")
MACC_PFC = Layout("macc_cbfc", "macc", "MAC Control Class Based Flow Control", [
    uint("enbv", 16, "CBFC Class Enable Vector", base=HEX, wsname="macc.cbfc.enbv"),
    *(overlay(f"enbv_c{i}", 15 - i, 1, f"C{i}", ftype=BOOL, wsname=f"macc.cbfc.enbv.c{i}")
      for i in range(PFC_PRIORITIES)),
    *(uint(f"c{i}", 16, f"C{i}", wsname=f"macc.cbfc.pause_time.c{i}")
      for i in range(PFC_PRIORITIES)),
], protocol="macc")


# The timestamp is little-endian (the one such field in a capture); it is kept as
# raw bytes and `erf.ts` is derived from it.
ERF = Layout("erf", "erf", "Extensible Record Format", [
    raw("ts_raw", 8, "Timestamp (raw)", wsname=None),
    flag("ext_header", "Extension header present", ftype=UINT8, wsname="erf.types.ext_header"),
    uint("type", 7, "Type", ftype=UINT8, values=ERF_TYPE_NAMES, wsname="erf.types.type"),
    uint("res", 2, "Reserved", ftype=UINT8, base=HEX, wsname="erf.flags.res"),
    uint("dse", 1, "DS error", ftype=UINT8, wsname="erf.flags.dse"),
    uint("rxe", 1, "RX error", ftype=UINT8, wsname="erf.flags.rxe"),
    uint("trunc", 1, "Truncated", ftype=UINT8, wsname="erf.flags.trunc"),
    uint("vlen", 1, "Varying record length", ftype=UINT8, wsname="erf.flags.vlen"),
    uint("cap", 2, "Capture interface", ftype=UINT8, wsname="erf.flags.cap"),
    uint("rlen", 16, "Record length"),
    uint("lctr", 16, "Loss counter"),
    uint("wlen", 16, "Wire length"),
    derived("ts", lambda v: int.from_bytes(v["ts_raw"], "little"), "Timestamp",
            ftype=UINT64, base=HEX),
], protocol="erf")

__all__ = ["DEC", "UINT32", "ETHERNET", "VLAN", "IPV4", "IPV6", "UDP", "ERF", "SLL", "SLL2",
           "MACC", "MACC_PAUSE", "MACC_PFC"]
