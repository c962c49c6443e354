"""Build packets from headers, filling lengths, pad and CRCs.

    encode(LRH(dlid=4, slid=1), BTH(opcode=0x11, destqp=0x11, psn=7), AETH(msn=1))

gives the wire bytes with LRH.LNH/PktLen, BTH.PadCnt, ICRC and VCRC computed.
RoCEv1 starts with ETHERNET + GRH, RoCEv2 with ETHERNET + IPV4/IPV6 + UDP + BTH;
a link packet is LINK(...) alone. `encode(packet)` re-encodes a decoded packet from
its field values without filling (so it is byte-identical to what was decoded),
and `encode(packet, fill=True)` repairs lengths and CRCs after edits.

What filling writes comes from the protocol graph (`ibwire.graph.GRAPH`): each
header's deciding field gets the value that announces the header after it
(`GRAPH.encodings`: EtherType, LNH, NxtHdr, IP protocol, UDP port, ERF type; a
value the graph does not know is the caller's and stays), every declared length
field (`GRAPH.lengths`: LRH PktLen, GRH PayLen, IPv4/IPv6/UDP lengths, ERF
rlen/wlen) its count, and the trailers (`GRAPH.trailers`) their sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibwire import crc
from ibwire.fields import Header, Layout
from ibwire.graph import GRAPH
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import IPV4, IPV6, UDP
from ibwire.headers.link import LINK
from ibwire.headers.routing import GRH, LRH
from ibwire.inet import internet_checksum, udp_checksum
from ibwire.packet import Layer, Packet

# A payload encoder rebuilds the payload of a decoded packet from its payload
# layers (MADs, IPoIB); it returns None when the layers are not its own.
PayloadEncoder = Callable[[list[Layer], Packet], "bytes | None"]
PAYLOAD_ENCODERS: list[PayloadEncoder] = []

# Trailer sizes, from the graph: the ICRC closes what a BTH opens, the VCRC an LRH.
_TRAILER = {t.opened_by: t.size for t in GRAPH.trailers}
# The pad aligns the payload to the unit LRH PktLen counts (IBA §9.2: 4-byte words).
_PAD_ALIGN = GRAPH.length(LRH.name, "pktlen").unit
_LPCRC_COVERS = LINK.by_name["lpcrc"].offset   # the LPCRC covers the bytes before it


class _Part:
    __slots__ = ("layout", "values", "gap")

    def __init__(self, layout: Layout, values: dict[str, Any], gap: bytes = b"") -> None:
        self.layout = layout
        self.values = values
        self.gap = gap          # bytes that follow this header before the next one

    def bytes(self) -> bytes:
        return self.layout.pack(self.values) + self.gap


def encode(*parts: Header | Layer | Packet, payload: bytes = b"", fill: bool | None = None,
           pad: bytes | None = None, icrc: bytes | None = None, vcrc: bytes | None = None,
           trailer: bytes = b"") -> bytes:
    """Wire bytes for a list of headers and a payload, or for a decoded packet."""
    if len(parts) == 1 and isinstance(parts[0], Packet):
        return encode_packet(parts[0], fill=bool(fill))
    seq = [_part(p) for p in parts]
    return _assemble(seq, payload, fill=True if fill is None else fill, pad=pad, icrc=icrc,
                     vcrc=vcrc, trailer=trailer)


def _part(p: Header | Layer) -> _Part:
    if isinstance(p, (Header, Layer)):
        return _Part(p.layout, dict(p.values))
    raise TypeError(f"cannot encode {type(p).__name__}; give headers such as BTH(...)")


def encode_packet(pkt: Packet, fill: bool = False) -> bytes:
    """Re-encode a decoded packet from its field values.

    A malformed packet (lengths that disagree, truncated headers) has no consistent
    structure to rebuild, so it re-encodes as the bytes it was decoded from."""
    if pkt.problems or pkt.undecoded_offset >= 0 or not pkt.layers:
        return pkt.data
    header_layers = [lay for lay in pkt.layers
                     if pkt.payload_offset < 0 or lay.offset < pkt.payload_offset]
    payload_layers = [lay for lay in pkt.layers if lay not in header_layers]
    seq: list[_Part] = []
    for i, lay in enumerate(header_layers):
        end = lay.offset + lay.size
        nxt = header_layers[i + 1].offset if i + 1 < len(header_layers) else None
        gap = pkt.data[end:nxt] if nxt is not None else b""
        seq.append(_Part(lay.layout, dict(lay.values), gap))
    payload = pkt.payload
    if payload_layers:
        for enc in PAYLOAD_ENCODERS:
            rebuilt = enc(payload_layers, pkt)
            if rebuilt is not None:
                payload = rebuilt
                break
    if not pkt.is_infiniband:
        # Not InfiniBand: headers, then whatever followed them.
        last = header_layers[-1]
        seq[-1].gap = b""
        tail = pkt.data[last.offset + last.size:]
        return b"".join(p.bytes() for p in seq) + tail
    if pkt.layer("bth") is None and pkt.layer("link") is None:
        # Raw or non-IBA payloads after the routing headers.
        return pkt.data
    # b"" keeps a VCRC the capture did not have absent (None would compute one).
    vcrc = pkt.vcrc if pkt.vcrc is not None or fill else b""
    return _assemble(seq, payload, fill=fill, pad=pkt.pad, icrc=pkt.icrc, vcrc=vcrc,
                     trailer=pkt.trailer)


def _assemble(seq: list[_Part], payload: bytes, *, fill: bool, pad: bytes | None,
              icrc: bytes | None, vcrc: bytes | None, trailer: bytes) -> bytes:
    names = [p.layout.name for p in seq]
    if "link" in names:
        link = seq[names.index("link")]
        if fill:
            link.values["lpcrc"] = crc.lpcrc(LINK.pack(link.values)[:_LPCRC_COVERS])
        return b"".join(p.bytes() for p in seq) + trailer
    if BTH.name not in names:
        raise ValueError("a transport packet needs a BTH (or LINK for a link packet)")
    ib_start = _ib_start(names)
    bth = seq[names.index(BTH.name)]
    if pad is None or fill:
        pad = bytes((-len(payload)) % _PAD_ALIGN) if fill else (pad or b"")
    if fill:
        bth.values["padcnt"] = len(pad)
    transport = sum(p.layout.size + len(p.gap) for p in seq[names.index(BTH.name):])
    transport += len(payload) + len(pad) + _TRAILER[BTH.name]     # ... + ICRC
    if fill:
        _fill_headers(seq, names, transport)
    head = [p.bytes() for p in seq]
    body = b"".join(head) + payload + pad
    ib_off = sum(len(h) for h in head[:ib_start])
    if icrc is None or fill:
        icrc = crc.icrc_wire(_masked(seq, names, body, ib_off))
    out = body + icrc
    if names[ib_start] == LRH.name:
        if vcrc is None or fill:
            vcrc = crc.vcrc_wire(out[ib_off:])
        out += vcrc
    if fill and UDP.name in names:
        out = _fill_udp_checksum(seq, names, out)
    return out + trailer


def _ib_start(names: list[str]) -> int:
    for i, n in enumerate(names):
        if n in (LRH.name, GRH.name, BTH.name):
            return i
    raise ValueError("no InfiniBand header")


def _fill_headers(seq: list[_Part], names: list[str], transport: int) -> None:
    """Fill every header before the BTH from the graph: the deciding field that
    announces the next header, the gap an edge skips, and every length field,
    given the transport size (BTH..ICRC)."""
    bth_at = names.index(BTH.name)
    vcrc = _TRAILER[LRH.name] if LRH.name in names else 0
    rest = transport    # bytes after part i (and its gap) through the ICRC
    for i in range(bth_at - 1, -1, -1):
        p = seq[i]
        _fill_next(p, names[i + 1])
        for ln in GRAPH.length_of(p.layout.name):
            after = rest + (vcrc if ln.end == "record" else 0)
            p.values[ln.field] = ln.measure(p.layout.size + len(p.gap), after)
        if p.layout is IPV4:
            p.values["checksum"] = 0
            p.values["checksum"] = internet_checksum(IPV4.pack(p.values) + p.gap)
        rest += p.layout.size + len(p.gap)


def _fill_next(p: _Part, upper: str) -> None:
    """Write the value of `p`'s deciding field that announces `upper`, unless it
    already holds one, or one the graph does not know (a port chosen for a run), and
    insert the bytes the edge skips before the next header (ERF Ethernet pad)."""
    edge = GRAPH.edges.get(p.layout.name)
    if edge is None:
        return
    wanted = GRAPH.encodings(edge.lower, upper)
    current = p.values.get(edge.field)
    if wanted and current not in wanted and (current is None or current in edge.table):
        p.values[edge.field] = wanted[0]
    skip = edge.skip.get(p.values.get(edge.field, -1), 0)
    if len(p.gap) < skip:
        p.gap = bytes(skip)


def _masked(seq: list[_Part], names: list[str], body: bytes, ib_off: int) -> bytes:
    first = names[_ib_start(names)]
    if first == LRH.name:
        return crc.icrc_input_native(body[ib_off:], len(body) - ib_off, GRH.name in names)
    if first == GRH.name:
        return crc.icrc_input_roce1(body[ib_off:])
    ip_name = _ip_name(names)
    if ip_name is None or UDP.name not in names:
        # RoCEv2 without IP/UDP headers: the ICRC cannot be known.
        raise ValueError("RoCEv2 ICRC needs the IPV4/IPV6 and UDP headers")
    offs = _offsets(seq)
    ip_i, udp_i = names.index(ip_name), names.index(UDP.name)
    return crc.icrc_input_roce2(body[offs[ip_i]:offs[udp_i]], body[offs[udp_i]:])


def _ip_name(names: list[str]) -> str | None:
    return next((n for n in names if n in (IPV4.name, IPV6.name)), None)


def _offsets(seq: list[_Part]) -> list[int]:
    out, pos = [], 0
    for p in seq:
        out.append(pos)
        pos += p.layout.size + len(p.gap)
    return out


def _fill_udp_checksum(seq: list[_Part], names: list[str], out: bytes) -> bytes:
    offs = _offsets(seq)
    udp_i = names.index(UDP.name)
    udp_off = offs[udp_i]
    ip_i = names.index(_ip_name(names) or IPV4.name)
    length = seq[udp_i].values["length"]
    segment = bytearray(out[udp_off:udp_off + length])
    at, size = UDP.offsets()["checksum"][:2]
    segment[at:at + size] = bytes(size)
    ip_header = seq[ip_i].layout.pack(seq[ip_i].values)
    csum = udp_checksum(ip_header, bytes(segment))
    seq[udp_i].values["checksum"] = csum
    return out[:udp_off + at] + csum.to_bytes(size, "big") + out[udp_off + at + size:]
