"""Build packets from headers, filling lengths, pad and CRCs.

    encode(LRH(dlid=4, slid=1), BTH(opcode=0x11, destqp=0x11, psn=7), AETH(msn=1))

gives the wire bytes with LRH.LNH/PktLen, BTH.PadCnt, ICRC and VCRC computed.
RoCEv1 starts with ETHERNET + GRH, RoCEv2 with ETHERNET + IPV4/IPV6 + UDP + BTH;
a link packet is LINK(...) alone. `encode(packet)` re-encodes a decoded packet from
its field values without filling (so it is byte-identical to what was decoded),
and `encode(packet, fill=True)` repairs lengths and CRCs after edits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibwire import crc
from ibwire.constants import ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_ROCE, NXTHDR_IBA
from ibwire.fields import Header, Layout
from ibwire.headers.carriers import ERF, IPV4, IPV6, UDP, VLAN
from ibwire.headers.link import LINK
from ibwire.headers.routing import GRH, LRH
from ibwire.inet import internet_checksum, udp_checksum
from ibwire.packet import Layer, Packet

# A payload encoder rebuilds the payload of a decoded packet from its payload
# layers (MADs, IPoIB); it returns None when the layers are not its own.
PayloadEncoder = Callable[[list[Layer], Packet], "bytes | None"]
PAYLOAD_ENCODERS: list[PayloadEncoder] = []

_NEXT_ETHERTYPE = {GRH.name: ETHERTYPE_ROCE, IPV4.name: ETHERTYPE_IPV4,
                   IPV6.name: ETHERTYPE_IPV6, VLAN.name: 0x8100}


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
            first4 = LINK.pack(link.values)[:4]
            link.values["lpcrc"] = crc.lpcrc(first4)
        return b"".join(p.bytes() for p in seq) + trailer
    if "bth" not in names:
        raise ValueError("a transport packet needs a BTH (or LINK for a link packet)")
    ib_start = _ib_start(names)
    bth = seq[names.index("bth")]
    if pad is None or fill:
        pad = bytes((-len(payload)) & 3) if fill else (pad or b"")
    if fill:
        bth.values["padcnt"] = len(pad)
    transport = sum(p.layout.size + len(p.gap) for p in seq[names.index("bth"):])
    transport += len(payload) + len(pad) + 4          # ... + ICRC
    if fill:
        _fill_lengths(seq, names, transport)
    head = [p.bytes() for p in seq]
    body = b"".join(head) + payload + pad
    ib_off = sum(len(h) for h in head[:ib_start])
    if icrc is None or fill:
        icrc = crc.icrc_wire(_masked(seq, names, body, ib_off))
    out = body + icrc
    if names[ib_start] == "lrh":
        if vcrc is None or fill:
            vcrc = crc.vcrc_wire(out[ib_off:])
        out += vcrc
    if fill and "udp" in names:
        out = _fill_udp_checksum(seq, names, out)
    return out + trailer


def _ib_start(names: list[str]) -> int:
    for i, n in enumerate(names):
        if n in ("lrh", "grh", "bth"):
            return i
    raise ValueError("no InfiniBand header")


def _fill_lengths(seq: list[_Part], names: list[str], transport: int) -> None:
    """Set every length field from the transport size (BTH..ICRC)."""
    size_after = transport
    for i in range(len(seq) - 1, -1, -1):
        p, name = seq[i], names[i]
        v = p.values
        nxt = names[i + 1] if i + 1 < len(names) else None
        if name == "grh":
            v["paylen"] = size_after
            v.setdefault("nxthdr", NXTHDR_IBA)
        elif name == "lrh":
            v["pktlen"] = (LRH.size + size_after) // 4
            v["lnh"] = 3 if nxt == "grh" else 0 if nxt == "rwh" else 2
        elif name == "udp":
            v["length"] = UDP.size + size_after
        elif name == "ip":
            v["len"] = v.get("ihl", 5) * 4 + size_after
            v["checksum"] = 0
            v["checksum"] = internet_checksum(IPV4.pack(v) + p.gap)
        elif name == "ipv6":
            v["plen"] = size_after
        elif name in ("eth", "vlan") and nxt in _NEXT_ETHERTYPE:
            v["type" if name == "eth" else "etype"] = _NEXT_ETHERTYPE[nxt]
        elif name == "erf":
            # The record holds the VCRC of a native packet; Ethernet has 2 bytes of offset.
            v["wlen"] = size_after + (2 if "lrh" in names else 0) + \
                (2 if v.get("type") == 2 else 0)
            v["rlen"] = ERF.size + len(p.gap) + v["wlen"]
        if names.index("bth") > i:
            size_after += p.layout.size + len(p.gap)


def _masked(seq: list[_Part], names: list[str], body: bytes, ib_off: int) -> bytes:
    first = names[_ib_start(names)]
    if first == "lrh":
        return crc.icrc_input_native(body[ib_off:], len(body) - ib_off, "grh" in names)
    if first == "grh":
        return crc.icrc_input_roce1(body[ib_off:])
    ip_name = "ip" if "ip" in names else "ipv6" if "ipv6" in names else None
    if ip_name is None or "udp" not in names:
        # RoCEv2 without IP/UDP headers: the ICRC cannot be known.
        raise ValueError("RoCEv2 ICRC needs the IPV4/IPV6 and UDP headers")
    offs = _offsets(seq)
    ip_i, udp_i = names.index(ip_name), names.index("udp")
    return crc.icrc_input_roce2(body[offs[ip_i]:offs[udp_i]], body[offs[udp_i]:])


def _offsets(seq: list[_Part]) -> list[int]:
    out, pos = [], 0
    for p in seq:
        out.append(pos)
        pos += p.layout.size + len(p.gap)
    return out


def _fill_udp_checksum(seq: list[_Part], names: list[str], out: bytes) -> bytes:
    offs = _offsets(seq)
    udp_i = names.index("udp")
    udp_off = offs[udp_i]
    ip_i = names.index("ip" if "ip" in names else "ipv6")
    length = seq[udp_i].values["length"]
    segment = bytearray(out[udp_off:udp_off + length])
    at = UDP.by_name["checksum"].offset
    segment[at:at + 2] = b"\0\0"
    ip_header = seq[ip_i].layout.pack(seq[ip_i].values)
    csum = udp_checksum(ip_header, bytes(segment))
    seq[udp_i].values["checksum"] = csum
    return out[:udp_off + at] + csum.to_bytes(2, "big") + out[udp_off + at + 2:]
