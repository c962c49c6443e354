"""Decode bytes into a `Packet`. Never raises on packet bytes.

Entry points by encapsulation: native InfiniBand from the LRH (`"ib"`, also
LINKTYPE_INFINIBAND), link packets (`"ib_link"`), RoCEv1 from the GRH
(`"roce1"`), RoCEv2 from the BTH (`"roce2"`, ICRC unverifiable without the IP
header), Ethernet (`"eth"`), raw IP (`"ip"`) and ERF records (`"erf"`). Other
modules add encapsulations (`ENCAPS`) and payload decoders (`PAYLOAD_DECODERS`,
e.g. MADs on QP0/QP1, IPoIB).

Trailers: native packets end where LRH.PktLen says (ICRC last), then the VCRC;
RoCEv1 ends where GRH.PayLen says; RoCEv2 ends with the UDP datagram. Bytes past
that end are the `trailer` (Ethernet padding, FCS), kept for re-encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from ibwire import crc
from ibwire.capture.erf import parse_erf_record
from ibwire.crc import CrcStatus
from ibwire.fields import Layout
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import (
    ERF,
    ERF_TYPE_ETH,
    ERF_TYPE_IB,
    ERF_TYPE_IB_LINK,
    ETHERNET,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_ROCE,
    ETHERTYPE_VLANS,
    IPV4,
    IPV6,
    ROCEV2_PORT,
    SLL,
    SLL2,
    UDP,
    VLAN,
)
from ibwire.headers.eth import ETH_LAYOUTS
from ibwire.headers.link import LINK
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import GRH, LRH, NXTHDR_IBA, RWH
from ibwire.packet import Layer, Packet

LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_ERF, LINKTYPE_INFINIBAND = 1, 101, 197, 247
LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2 = 113, 276
ICRC_LEN, VCRC_LEN = 4, 2
UDP_PROTO = 17

# A payload decoder looks at a packet whose transport headers are decoded and may
# claim data[start:end]: it appends its layers and returns True.
PayloadDecoder = Callable[[Packet, int, int], bool]
PAYLOAD_DECODERS: list[PayloadDecoder] = []
# Extra encapsulations: name or link type -> function(packet, offset, end).
ENCAPS: dict[str | int, Callable[[Packet, int, int], None]] = {}


class Options:
    """Decoder settings shared by a whole capture."""

    def __init__(self, roce_ports: frozenset[int] = frozenset({ROCEV2_PORT}),
                 verify_crc: bool = True) -> None:
        self.roce_ports = roce_ports
        self.verify_crc = verify_crc


DEFAULT = Options()


def decode(data: bytes, encap: str | int = "ib", *, frame=None,
           options: Options | None = None) -> Packet:
    """Decode one packet or capture record. `encap` is a name or a pcap link type."""
    data = bytes(data)
    name = _ENCAP_BY_LINKTYPE.get(encap, encap) if isinstance(encap, int) else encap
    pkt = Packet(data=data, encap=str(name), frame=frame)
    opts = options or DEFAULT
    pkt.options = opts
    handler = _HANDLERS.get(name) or ENCAPS.get(name) or ENCAPS.get(encap)
    if handler is None:
        pkt.mark("frame", 0, f"unknown encapsulation {encap!r}")
        _undecoded(pkt, 0, len(data))
        return pkt
    try:
        handler(pkt, 0, len(data))
    except Exception as exc:  # noqa: BLE001 - the promise: decode never raises on bytes
        pkt.mark("decoder", 0, f"internal error {type(exc).__name__}: {exc}")
    return pkt


# -- helpers -----------------------------------------------------------------
def _take(pkt: Packet, layout: Layout, off: int, end: int) -> Layer | None:
    """Decode one fixed-size layout at `off`, or mark it truncated."""
    if off + layout.size > end:
        pkt.mark(layout.name, off, f"truncated: {layout.size} bytes needed, "
                 f"{max(end - off, 0)} available")
        _undecoded(pkt, off, end)
        return None
    values = layout.unpack(pkt.data, off)
    layout.derived_values(values)
    lay = Layer(layout, off, values)
    pkt.layers.append(lay)
    return lay


def _undecoded(pkt: Packet, off: int, end: int) -> None:
    if end > off and pkt.undecoded_offset < 0:
        pkt.undecoded = pkt.data[off:end]
        pkt.undecoded_offset = off
        pkt.add("infiniband.raw", pkt.undecoded)


def _opts(pkt: Packet) -> Options:
    return pkt.options or DEFAULT


# -- native InfiniBand ---------------------------------------------------------
def decode_ib(pkt: Packet, off: int, end: int) -> None:
    pkt.ib_offset = off
    lrh = _take(pkt, LRH, off, end)
    if lrh is None:
        return
    ib_len = lrh.pktlen * 4
    ib_end = off + ib_len
    lnh = lrh.lnh
    if lnh in (2, 3):
        if ib_len < LRH.size + BTH.size + ICRC_LEN:
            pkt.mark("lrh", off + 4, f"PktLen {lrh.pktlen} ({ib_len} bytes) is shorter than "
                     "the smallest transport packet")
            ib_end = min(end, off + max(ib_len, LRH.size))
        if ib_end > end:
            pkt.mark("lrh", off + 4, f"PktLen {lrh.pktlen} ({ib_len} bytes) exceeds the "
                     f"{end - off} bytes captured")
            ib_end = end
            _transport_body(pkt, off + LRH.size, ib_end, lnh == 3, crc_end=None)
            _icrc_not_captured(pkt)
            return
        _transport_body(pkt, off + LRH.size, ib_end, lnh == 3, crc_end=ib_end - ICRC_LEN)
        _vcrc(pkt, off, ib_end, end)
        return
    # Raw packets: no ICRC, VCRC after PktLen*4 bytes.
    if ib_end > end:
        pkt.mark("lrh", off + 4, f"PktLen {lrh.pktlen} ({ib_len} bytes) exceeds the "
                 f"{end - off} bytes captured")
        ib_end = end
    body = off + LRH.size
    if lnh == 0:
        if _take(pkt, RWH, body, ib_end) is not None:
            _set_payload(pkt, body + RWH.size, ib_end)
    else:
        if _take(pkt, IPV6, body, ib_end) is not None:
            _set_payload(pkt, body + IPV6.size, ib_end)
    _vcrc(pkt, off, ib_end, end)


def _vcrc(pkt: Packet, off: int, ib_end: int, end: int) -> None:
    if ib_end + VCRC_LEN <= end:
        pkt.vcrc = pkt.data[ib_end:ib_end + VCRC_LEN]
        pkt.add("infiniband.variant.crc", int.from_bytes(pkt.vcrc, "big"))
        if _opts(pkt).verify_crc:
            good = crc.vcrc_wire(pkt.data[off:ib_end]) == pkt.vcrc
            pkt.vcrc_status = CrcStatus.GOOD if good else CrcStatus.BAD
        else:
            pkt.vcrc_status = CrcStatus.UNVERIFIED
        pkt.add("infiniband.variant.crc.status", int(pkt.vcrc_status))
        if ib_end + VCRC_LEN < end:
            pkt.trailer = pkt.data[ib_end + VCRC_LEN:end]
            pkt.mark("frame", ib_end + VCRC_LEN,
                     f"{end - ib_end - VCRC_LEN} bytes after the VCRC")
    elif ib_end < end:
        pkt.mark("vcrc", ib_end, "truncated VCRC")
        pkt.trailer = pkt.data[ib_end:end]
    else:
        pkt.add("infiniband.variant.crc.status", int(CrcStatus.NOT_PRESENT))


def _transport_body(pkt: Packet, off: int, end: int, has_grh: bool,
                    crc_end: int | None, roce: str | None = None) -> None:
    """GRH (when `has_grh`), BTH, extended headers, payload, pad and ICRC."""
    if has_grh:
        grh = _take(pkt, GRH, off, crc_end if crc_end is not None else end)
        if grh is None:
            return
        off += GRH.size
        if grh.nxthdr != NXTHDR_IBA:
            # LNH 3 and RoCEv1 both promise IBA transport after the GRH.
            pkt.mark("grh", off - GRH.size + 6, f"NxtHdr {grh.nxthdr:#04x} is not IBA "
                     f"transport ({NXTHDR_IBA:#04x})")
            _set_payload(pkt, off, end)
            return
    limit = crc_end if crc_end is not None else end
    _transport_headers(pkt, off, limit)
    if crc_end is not None:
        # Checked even when the headers did not fit: the ICRC position is known.
        _icrc(pkt, crc_end, roce)


def _transport_headers(pkt: Packet, off: int, limit: int) -> bool:
    """BTH, the opcode's extended headers, payload and pad; False if truncated."""
    bth = _take(pkt, BTH, off, limit)
    if bth is None:
        return False
    op = OPCODES[bth.opcode]
    pkt.opcode = op
    pkt.add("ibwire.opcode.name", op.label)
    if not op.valid:
        pkt.mark("bth", off, f"opcode {bth.opcode:#04x} is reserved or vendor specific")
    off += BTH.size
    for name in op.headers:
        lay = _take(pkt, ETH_LAYOUTS[name], off, limit)
        if lay is None:
            return False
        off += lay.size
    pad = bth.padcnt
    if not op.payload and limit - off > 0:
        pkt.mark("bth", off, f"{limit - off} bytes after the headers of an opcode that "
                 "carries no payload")
    pay_end = max(limit - pad, off)
    if limit - off < pad:
        pkt.mark("bth", off, f"PadCnt {pad} exceeds the {limit - off} bytes left")
    pkt.pad = pkt.data[pay_end:limit]
    if pkt.pad:
        pkt.add("infiniband.pad", pkt.pad)
    _set_payload(pkt, off, pay_end, claim=True)
    return True


def _set_payload(pkt: Packet, off: int, end: int, claim: bool = False) -> None:
    pkt.payload = pkt.data[off:end]
    pkt.payload_offset = off
    if claim:
        for dec in PAYLOAD_DECODERS:
            try:
                if dec(pkt, off, end):
                    return
            except Exception as exc:  # noqa: BLE001 - a payload decoder must not lose the packet
                pkt.mark("payload", off, f"payload decoder failed: {type(exc).__name__}: {exc}")
                break
    if end > off:
        pkt.add("infiniband.payload", pkt.payload)


def _icrc(pkt: Packet, crc_end: int, roce: str | None) -> None:
    data = pkt.data
    pkt.icrc = data[crc_end:crc_end + ICRC_LEN]
    if len(pkt.icrc) < ICRC_LEN:
        pkt.mark("icrc", crc_end, "truncated ICRC")
        pkt.icrc = None
        return
    pkt.add("infiniband.invariant.crc", int.from_bytes(pkt.icrc, "big"))
    status = CrcStatus.UNVERIFIED
    if _opts(pkt).verify_crc:
        masked = icrc_masked_input(pkt, crc_end, roce)
        if masked is not None:
            status = CrcStatus.GOOD if crc.icrc_wire(masked) == pkt.icrc else CrcStatus.BAD
    pkt.icrc_status = status
    pkt.add("infiniband.invariant.crc.status", int(status))


def _icrc_not_captured(pkt: Packet) -> None:
    if pkt.layer("bth") is not None and pkt.icrc is None:
        pkt.icrc_status = CrcStatus.UNVERIFIED
        pkt.add("infiniband.invariant.crc.status", int(CrcStatus.UNVERIFIED))


def icrc_masked_input(pkt: Packet, crc_end: int, roce: str | None) -> bytes | None:
    """The bytes the ICRC covers, masked; None when the IP header is unknown."""
    data = pkt.data
    start = pkt.ib_offset
    if roce is None:
        has_grh = pkt.layer("grh") is not None
        return crc.icrc_input_native(data[start:], crc_end - start, has_grh)
    if roce == "roce1":
        return crc.icrc_input_roce1(data[start:crc_end])
    ip = pkt.layer("ip") or pkt.layer("ipv6")
    udp = pkt.layer("udp")
    if ip is None or udp is None:
        return None
    return crc.icrc_input_roce2(data[ip.offset:udp.offset], data[udp.offset:crc_end])


# -- RoCE ----------------------------------------------------------------------
def decode_roce1(pkt: Packet, off: int, end: int) -> None:
    pkt.ib_offset = off
    if off + GRH.size > end:
        _take(pkt, GRH, off, end)
        return
    paylen = GRH.unpack(pkt.data, off)["paylen"]
    ib_end = off + GRH.size + paylen
    if ib_end > end:
        pkt.mark("grh", off + 4, f"PayLen {paylen} exceeds the {end - off - GRH.size} bytes "
                 "captured")
        _transport_body(pkt, off, end, True, crc_end=None, roce="roce1")
        _icrc_not_captured(pkt)
        return
    if paylen < BTH.size + ICRC_LEN:
        pkt.mark("grh", off + 4, f"PayLen {paylen} is shorter than a BTH and ICRC")
        _transport_body(pkt, off, ib_end, True, crc_end=None, roce="roce1")
    else:
        _transport_body(pkt, off, ib_end, True, crc_end=ib_end - ICRC_LEN, roce="roce1")
    pkt.trailer = pkt.data[ib_end:end]


def decode_roce2(pkt: Packet, off: int, end: int, truncated: bool = False) -> None:
    pkt.ib_offset = off
    if truncated:
        # The capture stopped inside the datagram: the ICRC was not captured.
        _transport_body(pkt, off, end, False, crc_end=None, roce="roce2")
        _icrc_not_captured(pkt)
        return
    if end - off < BTH.size + ICRC_LEN:
        _transport_body(pkt, off, end, False, crc_end=None, roce="roce2")
        if pkt.layer("bth") is not None:
            pkt.mark("icrc", end, "UDP payload too short for a BTH and ICRC")
        return
    _transport_body(pkt, off, end, False, crc_end=end - ICRC_LEN, roce="roce2")


# -- Ethernet / IP / UDP -------------------------------------------------------
def decode_eth(pkt: Packet, off: int, end: int) -> None:
    eth = _take(pkt, ETHERNET, off, end)
    if eth is None:
        return
    etype = eth.type
    off += ETHERNET.size
    depth = 0
    while etype in ETHERTYPE_VLANS and depth < 8:
        vlan = _take(pkt, VLAN, off, end)
        if vlan is None:
            return
        etype = vlan.etype
        off += VLAN.size
        depth += 1
    _ethertype(pkt, etype, off, end)


def decode_sll(pkt: Packet, off: int, end: int) -> None:
    layout = SLL2 if pkt.encap == "sll2" else SLL
    sll = _take(pkt, layout, off, end)
    if sll is not None:
        _ethertype(pkt, sll.etype, off + layout.size, end)


def _ethertype(pkt: Packet, etype: int, off: int, end: int) -> None:
    if etype == ETHERTYPE_ROCE:
        decode_roce1(pkt, off, end)
    elif etype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        decode_ip(pkt, off, end)
    elif ("ethertype", etype) in ENCAPS:
        ENCAPS[("ethertype", etype)](pkt, off, end)  # type: ignore[index]


def decode_ip(pkt: Packet, off: int, end: int) -> None:
    if off >= end:
        pkt.mark("ip", off, "truncated: no IP header")
        return
    version = pkt.data[off] >> 4
    if version == 4:
        ip = _take(pkt, IPV4, off, end)
        if ip is None:
            return
        hlen = ip.ihl * 4
        total = ip.len
        if hlen < IPV4.size or off + hlen > end:
            pkt.mark("ip", off, f"bad IPv4 header length {hlen}")
            _undecoded(pkt, off + IPV4.size, end)
            return
        if total < hlen or off + total > end:
            pkt.mark("ip", off + 2, f"IPv4 total length {total} does not fit the "
                     f"{end - off} bytes captured")
            total = end - off
        ip_end = off + total
        if ip.proto == UDP_PROTO and ip.frag_offset == 0 and not ip.mf:
            decode_udp(pkt, off + hlen, ip_end)
        pkt.trailer = pkt.data[ip_end:end]
    elif version == 6:
        ip = _take(pkt, IPV6, off, end)
        if ip is None:
            return
        ip_end = off + IPV6.size + ip.plen
        if ip_end > end:
            pkt.mark("ipv6", off + 4, f"IPv6 payload length {ip.plen} does not fit the "
                     f"{end - off - IPV6.size} bytes captured")
            ip_end = end
        if ip.nxt == UDP_PROTO:
            decode_udp(pkt, off + IPV6.size, ip_end)
        pkt.trailer = pkt.data[ip_end:end]
    else:
        pkt.mark("ip", off, f"IP version {version}")


def decode_udp(pkt: Packet, off: int, end: int) -> None:
    udp = _take(pkt, UDP, off, end)
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
    if udp.dstport in _opts(pkt).roce_ports:
        decode_roce2(pkt, off + UDP.size, udp_end, truncated)
    elif ("udp", udp.dstport) in ENCAPS:
        ENCAPS[("udp", udp.dstport)](pkt, off + UDP.size, udp_end)  # type: ignore[index]


# -- ERF and link packets ------------------------------------------------------
def decode_erf(pkt: Packet, off: int, end: int) -> None:
    erf = _take(pkt, ERF, off, end)
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
            _undecoded(pkt, body, pay_end)
            return
        decode_eth(pkt, body + 2, pay_end)
    else:
        pkt.mark("erf", off + 8, f"ERF type {erf.type} is not decoded")
        _undecoded(pkt, body, pay_end)
        return
    if pay_end < end and not pkt.trailer:
        pkt.trailer = pkt.data[pay_end:end]


def decode_link(pkt: Packet, off: int, end: int) -> None:
    pkt.ib_offset = off
    link = _take(pkt, LINK, off, end)
    if link is None:
        return
    if link.op > 1:
        pkt.mark("infiniband_link", off, f"reserved link packet operand {link.op}")
    if _opts(pkt).verify_crc:
        good = crc.lpcrc(pkt.data[off:off + 4]) == link.lpcrc
        pkt.lpcrc_status = CrcStatus.GOOD if good else CrcStatus.BAD
    else:
        pkt.lpcrc_status = CrcStatus.UNVERIFIED
    pkt.add("infiniband_link.lpcrc.status", int(pkt.lpcrc_status))
    if off + LINK.size < end:
        pkt.trailer = pkt.data[off + LINK.size:end]


_HANDLERS: dict[str | int, Callable[[Packet, int, int], None]] = {
    "ib": decode_ib, "ib_link": decode_link, "roce1": decode_roce1, "roce2": decode_roce2,
    "eth": decode_eth, "ip": decode_ip, "erf": decode_erf, "sll": decode_sll,
    "sll2": decode_sll,
}
_ENCAP_BY_LINKTYPE: dict[int, str] = {
    LINKTYPE_ETHERNET: "eth", LINKTYPE_RAW: "ip", LINKTYPE_ERF: "erf",
    LINKTYPE_INFINIBAND: "ib", LINKTYPE_LINUX_SLL: "sll", LINKTYPE_LINUX_SLL2: "sll2",
}


def register_linktype(linktype: int, name: str,
                      handler: Callable[[Packet, int, int], None]) -> None:
    """Let another module decode a link type (IPoIB 242, Linux cooked, ...)."""
    _ENCAP_BY_LINKTYPE[linktype] = name
    ENCAPS[name] = handler
