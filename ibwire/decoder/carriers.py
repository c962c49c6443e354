"""The carriers around InfiniBand in captures: Ethernet and 802.1Q, Linux cooked
headers, IPv4/IPv6 and UDP (RoCE), ERF records (ibdump) and link packets."""

from __future__ import annotations

from ibwire import crc
from ibwire.capture.erf import parse_erf_record
from ibwire.constants import (
    ERF_TYPE_ETH,
    ERF_TYPE_IB,
    ERF_TYPE_IB_LINK,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_MAC_CONTROL,
    ETHERTYPE_ROCE,
    ETHERTYPE_VLANS,
    IP_PROTO_UDP,
    MACC_OP_PAUSE,
    MACC_OP_PFC,
)
from ibwire.crc import CrcStatus
from ibwire.decoder.base import ENCAPS, keep_undecoded, options_of, take
from ibwire.decoder.transport import decode_ib, decode_roce1, decode_roce2
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


def decode_eth(pkt: Packet, off: int, end: int) -> None:
    eth = take(pkt, ETHERNET, off, end)
    if eth is None:
        return
    etype = eth.type
    off += ETHERNET.size
    depth = 0
    while etype in ETHERTYPE_VLANS and depth < 8:
        vlan = take(pkt, VLAN, off, end)
        if vlan is None:
            return
        etype = vlan.etype
        off += VLAN.size
        depth += 1
    _ethertype(pkt, etype, off, end)


def decode_sll(pkt: Packet, off: int, end: int) -> None:
    layout = SLL2 if pkt.encap == "sll2" else SLL
    sll = take(pkt, layout, off, end)
    if sll is not None:
        _ethertype(pkt, sll.etype, off + layout.size, end)


def _ethertype(pkt: Packet, etype: int, off: int, end: int) -> None:
    if etype == ETHERTYPE_ROCE:
        decode_roce1(pkt, off, end)
    elif etype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        decode_ip(pkt, off, end)
    elif etype == ETHERTYPE_MAC_CONTROL:
        decode_mac_control(pkt, off, end)
    elif ("ethertype", etype) in ENCAPS:
        ENCAPS[("ethertype", etype)](pkt, off, end)  # type: ignore[index]


def decode_mac_control(pkt: Packet, off: int, end: int) -> None:
    """PAUSE and PFC frames; the rest of the minimum frame is padding (trailer)."""
    macc = take(pkt, MACC, off, end)
    if macc is None:
        return
    off += MACC.size
    params = {MACC_OP_PAUSE: MACC_PAUSE, MACC_OP_PFC: MACC_PFC}.get(macc.opcode)
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
    version = pkt.data[off] >> 4
    if version == 4:
        ip = take(pkt, IPV4, off, end)
        if ip is None:
            return
        hlen = ip.ihl * 4
        total = ip.len
        if hlen < IPV4.size or off + hlen > end:
            pkt.mark("ip", off, f"bad IPv4 header length {hlen}")
            keep_undecoded(pkt, off + IPV4.size, end)
            return
        if total < hlen or off + total > end:
            pkt.mark("ip", off + 2, f"IPv4 total length {total} does not fit the "
                     f"{end - off} bytes captured")
            total = end - off
        ip_end = off + total
        if ip.proto == IP_PROTO_UDP and ip.frag_offset == 0 and not ip.mf:
            decode_udp(pkt, off + hlen, ip_end)
        pkt.trailer = pkt.data[ip_end:end]
    elif version == 6:
        ip = take(pkt, IPV6, off, end)
        if ip is None:
            return
        ip_end = off + IPV6.size + ip.plen
        if ip_end > end:
            pkt.mark("ipv6", off + 4, f"IPv6 payload length {ip.plen} does not fit the "
                     f"{end - off - IPV6.size} bytes captured")
            ip_end = end
        if ip.nxt == IP_PROTO_UDP:
            decode_udp(pkt, off + IPV6.size, ip_end)
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
    if length < UDP.size or udp_end > end:
        pkt.mark("udp", off + 4, f"UDP length {length} does not fit the {end - off} bytes "
                 "of the IP payload")
        truncated = udp_end > end
        udp_end = end
    elif udp_end < end:
        pkt.mark("udp", off + 4, f"UDP length {length} is shorter than the {end - off} bytes "
                 "of the IP payload")
    if udp.dstport in options_of(pkt).roce_ports:
        decode_roce2(pkt, off + UDP.size, udp_end, truncated)
    elif ("udp", udp.dstport) in ENCAPS:
        ENCAPS[("udp", udp.dstport)](pkt, off + UDP.size, udp_end)  # type: ignore[index]


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
    if erf.type == ERF_TYPE_IB:
        decode_ib(pkt, body, pay_end)
    elif erf.type == ERF_TYPE_IB_LINK:
        decode_link(pkt, body, pay_end)
    elif erf.type == ERF_TYPE_ETH:
        # Two bytes of offset/padding precede the Ethernet frame.
        if pay_end - body < 2:
            pkt.mark("erf", body, "ERF Ethernet record shorter than its 2-byte pad")
            keep_undecoded(pkt, body, pay_end)
            return
        decode_eth(pkt, body + 2, pay_end)
    else:
        pkt.mark("erf", off + 8, f"ERF type {erf.type} is not decoded")
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
        good = crc.lpcrc(pkt.data[off:off + 4]) == link.lpcrc
        pkt.lpcrc_status = CrcStatus.GOOD if good else CrcStatus.BAD
    else:
        pkt.lpcrc_status = CrcStatus.UNVERIFIED
    pkt.add("infiniband_link.lpcrc.status", int(pkt.lpcrc_status))
    if off + LINK.size < end:
        pkt.trailer = pkt.data[off + LINK.size:end]


