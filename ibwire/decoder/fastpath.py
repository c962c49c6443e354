"""Fast path for the common chains: Ethernet/IPv4|IPv6/UDP/RoCEv2 and native
LRH[/GRH]/BTH, when every length agrees and nothing would be marked.

The general decoder steps (carriers, transport) take one layer at a time and
check each length as they go. Here the checks that decide "nothing unusual"
are made first, on the raw bytes, and only then are the layers stored, so a
packet that fails any of them goes to the general decoder untouched: the fast
path changes speed, never results (tests decode every capture both ways and
compare). Offsets come from the layouts; the payload, pad, ICRC and VCRC steps
are the general decoder's own functions.
"""

from __future__ import annotations

from ibwire.decoder.base import ICRC_LEN, UDP_PROTO
from ibwire.decoder.transport import _icrc, _set_payload, _vcrc
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import ETHERNET, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPV4, IPV6, UDP
from ibwire.headers.eth import ETH_LAYOUTS
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import GRH, LRH, NXTHDR_IBA
from ibwire.packet import Layer, Packet


_TRANSPORT_MIN = BTH.size + ICRC_LEN
# Per opcode: the extended header layouts and their total size (None: reserved opcode).
_OPS = tuple(
    (op, tuple(ETH_LAYOUTS[h] for h in op.headers),
     sum(ETH_LAYOUTS[h].size for h in op.headers)) if op.valid else None
    for op in OPCODES)


def _transport_ok(data: bytes, off: int, limit: int) -> tuple | None:
    """Opcode entry when BTH, extended headers, pad and payload all fit as the
    general decoder expects (no mark); None otherwise."""
    if limit - off < BTH.size:
        return None
    bth = BTH.values_at(data, off)
    entry = _OPS[bth["opcode"]]
    if entry is None:
        return None
    rest = limit - off - BTH.size - entry[2]
    if rest < 0 or rest < bth["padcnt"] or (rest and not entry[0].payload):
        return None
    return bth, entry


def _transport(pkt: Packet, data: bytes, off: int, limit: int, checked: tuple,
               roce: str | None, icrc_where: tuple[int, str, int]) -> None:
    """Store BTH, extended headers, pad and payload (as _transport_headers does),
    then check the ICRC that ends at `limit`."""
    layers = pkt.layers
    bth, (op, ext, _) = checked
    layers.append(Layer(BTH, off, bth))
    pkt.opcode = op
    pkt.add("ibwire.opcode.name", op.label)
    off += BTH.size
    for layout in ext:
        layers.append(Layer(layout, off, layout.values_at(data, off)))
        off += layout.size
    pay_end = limit - bth["padcnt"]
    pkt.pad = data[pay_end:limit]
    if pkt.pad:
        pkt.add("infiniband.pad", pkt.pad)
    _set_payload(pkt, off, pay_end, claim=True)
    _icrc(pkt, limit, roce, icrc_where)


def fast_eth(pkt: Packet, roce_ports: frozenset[int]) -> bool:
    """Ethernet II carrying RoCEv2 over IPv4 (no options, not fragmented) or IPv6."""
    data = pkt.data
    end = len(data)
    ip_off = ETHERNET.size
    if end < ip_off + IPV4.size:
        return False
    eth = ETHERNET.values_at(data, 0)
    etype = eth["type"]
    if etype == ETHERTYPE_IPV4:
        ip_layout, kind = IPV4, "ipv4"
        ip = IPV4.values_at(data, ip_off)
        if ip["version"] != 4 or ip["ihl"] * 4 != IPV4.size or ip["proto"] != UDP_PROTO \
                or ip["mf"] or ip["frag_offset"] or ip["len"] < IPV4.size:
            return False
        ip_end = ip_off + ip["len"]
    elif etype == ETHERTYPE_IPV6 and end >= ip_off + IPV6.size:
        ip_layout, kind = IPV6, "ipv6"
        ip = IPV6.values_at(data, ip_off)
        if ip["version"] != 6 or ip["nxt"] != UDP_PROTO:
            return False
        ip_end = ip_off + IPV6.size + ip["plen"]
    else:
        return False
    udp_off = ip_off + ip_layout.size
    bth_off = udp_off + UDP.size
    if ip_end > end or ip_end - bth_off < _TRANSPORT_MIN:
        return False
    udp = UDP.values_at(data, udp_off)
    if udp["length"] != ip_end - udp_off or udp["dstport"] not in roce_ports:
        return False
    crc_end = ip_end - ICRC_LEN
    checked = _transport_ok(data, bth_off, crc_end)
    if checked is None:
        return False
    pkt.layers += (Layer(ETHERNET, 0, eth), Layer(ip_layout, ip_off, ip),
                   Layer(UDP, udp_off, udp))
    pkt.ib_offset = bth_off
    _transport(pkt, data, bth_off, crc_end, checked, "roce2", (ip_off, kind, ip_layout.size))
    pkt.trailer = data[ip_end:end]
    return True


def fast_ib(pkt: Packet) -> bool:
    """Native LRH (LNH IBA local or global) whose PktLen fits the record."""
    data = pkt.data
    end = len(data)
    if end < LRH.size:
        return False
    lrh = LRH.values_at(data, 0)
    lnh = lrh["lnh"]
    ib_end = lrh["pktlen"] * 4
    if lnh < 2 or ib_end < LRH.size + _TRANSPORT_MIN or ib_end > end:
        return False
    crc_end = ib_end - ICRC_LEN
    off = LRH.size
    grh = None
    if lnh == 3:
        if crc_end - off < GRH.size:
            return False
        grh = GRH.values_at(data, off)
        if grh["nxthdr"] != NXTHDR_IBA:
            return False
        off += GRH.size
    checked = _transport_ok(data, off, crc_end)
    if checked is None:
        return False
    pkt.ib_offset = 0
    pkt.layers.append(Layer(LRH, 0, lrh))
    if grh is not None:
        pkt.layers.append(Layer(GRH, LRH.size, grh))
    kind = "native" if grh is None else "native_grh"
    _transport(pkt, data, off, crc_end, checked, None, (0, kind, 0))
    _vcrc(pkt, 0, ib_end, end)
    return True
