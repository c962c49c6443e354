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

from ibwire.constants import ICRC_LEN, IHL_UNIT, PKTLEN_UNIT
from ibwire.decoder.transport import _icrc, _set_payload, _vcrc
from ibwire.graph import GRAPH
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import ETHERNET, IPV4, IPV6, UDP
from ibwire.headers.extended import ETH_LAYOUTS
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import GRH, LRH
from ibwire.packet import LazyLayer, Packet


def _at(layout, name: str) -> tuple[int, int, int, int]:
    """(first byte, end byte, right shift, mask) of a field, from its layout."""
    off, n, shift, mask = layout.offsets()[name]
    return off, off + n, shift, mask


# Fields read straight from the bytes (the layers holding them unpack lazily).
_ETYPE_A, _ETYPE_B, _, _ = _at(ETHERNET, "type")
_ULEN_A, _ULEN_B, _, _ = _at(UDP, "length")
_UPORT_A, _UPORT_B, _, _ = _at(UDP, "dstport")
_LNH_A, _LNH_B, _LNH_SHIFT, _LNH_MASK = _at(LRH, "lnh")
_PKTLEN_A, _PKTLEN_B, _PKTLEN_SHIFT, _PKTLEN_MASK = _at(LRH, "pktlen")
_NXTHDR_A, _, _NXTHDR_SHIFT, _ = _at(GRH, "nxthdr")
assert _NXTHDR_SHIFT == 0 and GRH.by_name["nxthdr"].bits == 8  # read as one whole byte


def _shift_mask(layout, name: str) -> tuple[int, int]:
    """Where a field sits in the layout read as one big-endian integer."""
    f = layout.by_name[name]
    return layout.bits - f.bit_offset - f.bits, f.mask


_V4 = {n: _shift_mask(IPV4, n) for n in ("version", "ihl", "len", "mf", "frag_offset", "proto")}
_VERSION = IPV4.offsets()["version"][2:]   # (shift, mask) in the first byte
_OPCODE, _PADCNT = _shift_mask(BTH, "opcode"), _shift_mask(BTH, "padcnt")


_TRANSPORT_MIN = BTH.size + ICRC_LEN
_OPS_BUILT: list = [-1, ()]   # (graph version, table)


def _ops() -> tuple:
    """Per opcode: the extended header layouts and their total size (None: reserved
    opcode), rebuilt when the graph changes (a new extended header)."""
    if _OPS_BUILT[0] != GRAPH.version:
        _OPS_BUILT[1] = tuple(
            (op, tuple(ETH_LAYOUTS[h] for h in op.headers),
             sum(ETH_LAYOUTS[h].size for h in op.headers)) if op.valid else None
            for op in OPCODES)
        _OPS_BUILT[0] = GRAPH.version
    return _OPS_BUILT[1]


def _transport_ok(data: bytes, off: int, limit: int) -> tuple | None:
    """Opcode entry when BTH, extended headers, pad and payload all fit as the
    general decoder expects (no mark); None otherwise."""
    if limit - off < BTH.size:
        return None
    w = int.from_bytes(data[off:off + BTH.size], "big")
    entry = _ops()[(w >> _OPCODE[0]) & _OPCODE[1]]
    if entry is None:
        return None
    rest = limit - off - BTH.size - entry[2]
    pad = (w >> _PADCNT[0]) & _PADCNT[1]
    if rest < 0 or rest < pad or (rest and not entry[0].payload):
        return None
    return pad, entry


def _transport(pkt: Packet, data: bytes, off: int, limit: int, checked: tuple,
               roce: str | None, icrc_where: tuple[int, str, int]) -> None:
    """Store BTH, extended headers, pad and payload (as _transport_headers does),
    then check the ICRC that ends at `limit`."""
    layers = pkt.layers
    pad, (op, ext, _) = checked
    layers.append(LazyLayer(BTH, off, data))
    pkt.opcode = op
    pkt.add("ibwire.opcode.name", op.label)
    off += BTH.size
    for layout in ext:
        layers.append(LazyLayer(layout, off, data))
        off += layout.size
    pay_end = limit - pad
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
    if GRAPH.next(ETHERNET.name, int.from_bytes(data[_ETYPE_A:_ETYPE_B], "big")) != "ip":
        return False
    # IPv4 or IPv6 by the version nibble, as the general decoder chooses.
    version = (data[ip_off] >> _VERSION[0]) & _VERSION[1]
    if version == 4:
        ip_layout, kind = IPV4, "ipv4"
        w = int.from_bytes(data[ip_off:ip_off + IPV4.size], "big")
        v = {n: (w >> shift) & mask for n, (shift, mask) in _V4.items()}
        if v["ihl"] * IHL_UNIT != IPV4.size or GRAPH.next(IPV4.name, v["proto"]) != UDP.name \
                or v["mf"] or v["frag_offset"] or v["len"] < IPV4.size:
            return False
        ip_end = ip_off + v["len"]
    elif version == 6 and end >= ip_off + IPV6.size:
        ip_layout, kind = IPV6, "ipv6"
        v = IPV6.values_at(data, ip_off)
        if GRAPH.next(IPV6.name, v["nxt"]) != UDP.name:
            return False
        ip_end = ip_off + IPV6.size + v["plen"]
    else:
        return False
    udp_off = ip_off + ip_layout.size
    bth_off = udp_off + UDP.size
    if ip_end > end or ip_end - bth_off < _TRANSPORT_MIN:
        return False
    if int.from_bytes(data[udp_off + _ULEN_A:udp_off + _ULEN_B], "big") != ip_end - udp_off \
            or int.from_bytes(data[udp_off + _UPORT_A:udp_off + _UPORT_B], "big") \
            not in roce_ports:
        return False
    crc_end = ip_end - ICRC_LEN
    checked = _transport_ok(data, bth_off, crc_end)
    if checked is None:
        return False
    pkt.layers += (LazyLayer(ETHERNET, 0, data), LazyLayer(ip_layout, ip_off, data),
                   LazyLayer(UDP, udp_off, data))
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
    node = GRAPH.next(LRH.name, (int.from_bytes(data[_LNH_A:_LNH_B], "big") >> _LNH_SHIFT)
                      & _LNH_MASK)
    ib_end = ((int.from_bytes(data[_PKTLEN_A:_PKTLEN_B], "big") >> _PKTLEN_SHIFT)
              & _PKTLEN_MASK) * PKTLEN_UNIT
    if node not in (BTH.name, GRH.name) or ib_end < LRH.size + _TRANSPORT_MIN or ib_end > end:
        return False
    crc_end = ib_end - ICRC_LEN
    off = LRH.size
    has_grh = node == GRH.name
    if has_grh:
        if crc_end - off < GRH.size or GRAPH.next(GRH.name, data[off + _NXTHDR_A]) != BTH.name:
            return False
        off += GRH.size
    checked = _transport_ok(data, off, crc_end)
    if checked is None:
        return False
    pkt.ib_offset = 0
    pkt.layers.append(LazyLayer(LRH, 0, data))
    if has_grh:
        pkt.layers.append(LazyLayer(GRH, LRH.size, data))
    kind = "native_grh" if has_grh else "native"
    _transport(pkt, data, off, crc_end, checked, None, (0, kind, 0))
    _vcrc(pkt, 0, ib_end, end)
    return True
