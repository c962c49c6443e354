"""The carriers around InfiniBand in captures: Ethernet and 802.1Q, Linux cooked
headers, IPv4/IPv6 and UDP (RoCE), ERF records (ibdump) and link packets."""

from __future__ import annotations

from ibwire import crc
from ibwire.capture.erf import parse_erf_record
from ibwire.constants import IHL_UNIT
from ibwire.crc import CrcStatus
from ibwire.decoder.base import STEPS, follow, keep_undecoded, options_of, take
from ibwire.decoder.transport import decode_roce2
from ibwire.graph import GRAPH
from ibwire.headers.carriers import (
    ERF,
    ETHERNET,
    IPV4,
    IPV6,
    MACC,
    MACC_PAUSE,
    MACC_PFC,
    PFC_PRIORITIES,
    SLL,
    SLL2,
    UDP,
    VLAN,
)
from ibwire.headers.link import LINK
from ibwire.packet import Packet

MAX_VLAN_TAGS = 8   # stacked tags followed before giving up (hostile input)
_IP_VERSION = IPV4.offsets()["version"]   # the same nibble in IPv4 and IPv6
assert _IP_VERSION[:2] == IPV6.offsets()["version"][:2] == (0, 1)
_LPCRC_COVERS = LINK.by_name["lpcrc"].offset   # the LPCRC covers the bytes before it
# Graph nodes that are parameter layouts of the MAC Control header.
_MACC_PARAMS = {lay.name: lay for lay in (MACC_PAUSE, MACC_PFC)}


def _field_at(layout, name: str) -> int:
    """Byte offset of a field in its layout (where a problem about it is marked)."""
    return layout.by_name[name].offset


def decode_eth(pkt: Packet, off: int, end: int) -> None:
    eth = take(pkt, ETHERNET, off, end)
    if eth is not None:
        follow(pkt, ETHERNET.name, eth.type, off + ETHERNET.size, end)


def decode_vlan(pkt: Packet, off: int, end: int) -> None:
    """One 802.1Q/802.1ad tag; stacked tags follow through the graph, at most
    MAX_VLAN_TAGS of them."""
    if sum(lay.layout is VLAN for lay in pkt.layers) >= MAX_VLAN_TAGS:
        return
    vlan = take(pkt, VLAN, off, end)
    if vlan is not None:
        follow(pkt, VLAN.name, vlan.etype, off + VLAN.size, end)


def decode_sll(pkt: Packet, off: int, end: int) -> None:
    layout = SLL2 if pkt.encap == "sll2" else SLL
    sll = take(pkt, layout, off, end)
    if sll is not None:
        follow(pkt, layout.name, sll.etype, off + layout.size, end)


def decode_mac_control(pkt: Packet, off: int, end: int) -> None:
    """PAUSE and PFC frames; the rest of the minimum frame is padding (trailer)."""
    macc = take(pkt, MACC, off, end)
    if macc is None:
        return
    off += MACC.size
    params = _MACC_PARAMS.get(GRAPH.next(MACC.name, macc.opcode) or "")
    if params is None:
        pkt.mark("macc", off - MACC.size, f"MAC Control opcode {macc.opcode:#06x} "
                 "is not decoded")
        keep_undecoded(pkt, off, end)
        return
    if take(pkt, params, off, end) is None:
        return
    off += params.size
    if params is MACC_PFC and pkt.get("macc.cbfc.enbv") >> PFC_PRIORITIES:
        pkt.mark("macc", off - params.size, "8 MSbs of ENBV must be 0")
    if off < end:
        pkt.trailer = pkt.data[off:end]


def decode_ip(pkt: Packet, off: int, end: int) -> None:
    if off >= end:
        pkt.mark("ip", off, "truncated: no IP header")
        return
    version = (pkt.data[off] >> _IP_VERSION[2]) & _IP_VERSION[3]
    if version == 4:
        ip = take(pkt, IPV4, off, end)
        if ip is None:
            return
        hlen = ip.ihl * IHL_UNIT
        total = ip.len
        if hlen < IPV4.size or off + hlen > end:
            pkt.mark("ip", off, f"bad IPv4 header length {hlen}")
            keep_undecoded(pkt, off + IPV4.size, end)
            return
        if total < hlen or off + total > end:
            pkt.mark("ip", off + _field_at(IPV4, "len"), f"IPv4 total length {total} does "
                     f"not fit the {end - off} bytes captured")
            total = end - off
        ip_end = off + total
        if ip.frag_offset == 0 and not ip.mf:
            follow(pkt, IPV4.name, ip.proto, off + hlen, ip_end)
        pkt.trailer = pkt.data[ip_end:end]
    elif version == 6:
        ip = take(pkt, IPV6, off, end)
        if ip is None:
            return
        ip_end = off + IPV6.size + ip.plen
        if ip_end > end:
            pkt.mark("ipv6", off + _field_at(IPV6, "plen"), f"IPv6 payload length {ip.plen} "
                     f"does not fit the {end - off - IPV6.size} bytes captured")
            ip_end = end
        follow(pkt, IPV6.name, ip.nxt, off + IPV6.size, ip_end)
        pkt.trailer = pkt.data[ip_end:end]
    else:
        pkt.mark("ip", off, f"IP version {version}")


def decode_udp(pkt: Packet, off: int, end: int) -> None:
    udp = take(pkt, UDP, off, end)
    if udp is None:
        return
    length = udp.length
    udp_end = off + length
    truncated = False
    at = off + _field_at(UDP, "length")
    if length < UDP.size or udp_end > end:
        pkt.mark("udp", at, f"UDP length {length} does not fit the {end - off} bytes "
                 "of the IP payload")
        truncated = udp_end > end
        udp_end = end
    elif udp_end < end:
        pkt.mark("udp", at, f"UDP length {length} is shorter than the {end - off} bytes "
                 "of the IP payload")
    # RoCEv2 ports are the run's (Options: the graph's, plus `-d udp.port==N`); the
    # graph's other UDP edges lead to whatever steps are registered for them.
    if udp.dstport in options_of(pkt).roce_ports:
        decode_roce2(pkt, off + UDP.size, udp_end, truncated)
    elif GRAPH.next(UDP.name, udp.dstport) != "roce2":
        follow(pkt, UDP.name, udp.dstport, off + UDP.size, udp_end)


# -- ERF and link packets ------------------------------------------------------
def decode_erf(pkt: Packet, off: int, end: int) -> None:
    erf = take(pkt, ERF, off, end)
    if erf is None:
        return
    # The record rules (extension-header chain, payload cut by wlen) live in one place.
    rec = parse_erf_record(pkt.data[off:end])
    for where, reason in rec.problems:
        if not (erf.trunc and "wlen" in reason):
            pkt.mark("erf", off + where, reason)
    body = off + rec.header_len
    pay_end = body + len(rec.payload)
    skip = GRAPH.edges[ERF.name].skip.get(erf.type, 0)
    if GRAPH.next(ERF.name, erf.type) in STEPS and pay_end - body < skip:
        pkt.mark("erf", body, f"ERF Ethernet record shorter than its {skip}-byte pad")
        keep_undecoded(pkt, body, pay_end)
        return
    if not follow(pkt, ERF.name, erf.type, body, pay_end):
        pkt.mark("erf", off + _field_at(ERF, "type"), f"ERF type {erf.type} is not decoded")
        keep_undecoded(pkt, body, pay_end)
        return
    if pay_end < end and not pkt.trailer:
        pkt.trailer = pkt.data[pay_end:end]


def decode_link(pkt: Packet, off: int, end: int) -> None:
    pkt.ib_offset = off
    link = take(pkt, LINK, off, end)
    if link is None:
        return
    if link.op > 1:
        pkt.mark("infiniband_link", off, f"reserved link packet operand {link.op}")
    if options_of(pkt).verify_crc:
        good = crc.lpcrc(pkt.data[off:off + _LPCRC_COVERS]) == link.lpcrc
        pkt.lpcrc_status = CrcStatus.GOOD if good else CrcStatus.BAD
    else:
        pkt.lpcrc_status = CrcStatus.UNVERIFIED
    pkt.add("infiniband_link.lpcrc.status", int(pkt.lpcrc_status))
    if off + LINK.size < end:
        pkt.trailer = pkt.data[off + LINK.size:end]


