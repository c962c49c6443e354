"""Native InfiniBand and RoCE: LRH, GRH, BTH, the opcode's extended headers,
payload and pad, and the ICRC/VCRC checks (IBA Vol. 1 ch. 7-9; RoCE annexes).

Native packets end where LRH.PktLen says (ICRC last), then the VCRC; RoCEv1 ends
where GRH.PayLen says; RoCEv2 ends with the UDP datagram."""

from __future__ import annotations

from ibwire import crc
from ibwire.constants import ICRC_LEN, VCRC_LEN
from ibwire.crc import CrcStatus
from ibwire.decoder.base import PAYLOAD_DECODERS, options_of, take
from ibwire.graph import GRAPH
from ibwire.headers.bth import BTH
from ibwire.headers.carriers import IPV6
from ibwire.headers.extended import ETH_LAYOUTS
from ibwire.headers.link import LINK
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import GRH, LRH, RWH
from ibwire.packet import Packet

# LRH PktLen's unit (4-byte words), from the graph's length declarations.
PKTLEN_UNIT = GRAPH.length(LRH.name, "pktlen").unit
_PKTLEN_AT = LRH.by_name["pktlen"].offset
_PAYLEN_AT = GRH.by_name["paylen"].offset
_NXTHDR_AT = GRH.by_name["nxthdr"].offset
# Raw (non-IBA) nodes after the LRH and the layout each one starts with.
_RAW_AFTER_LRH = {RWH.name: RWH, "ipv6": IPV6}


def decode_ib(pkt: Packet, off: int, end: int) -> None:
    if end - off == LINK.size:
        # Six bytes can only be a link packet (IBA §7.9.4): the smallest data packet,
        # LRH + VCRC, is ten. LINKTYPE_INFINIBAND carries both kinds unmarked.
        from ibwire.decoder.carriers import decode_link
        decode_link(pkt, off, end)
        return
    pkt.ib_offset = off
    lrh = take(pkt, LRH, off, end)
    if lrh is None:
        return
    ib_len = lrh.pktlen * PKTLEN_UNIT
    ib_end = off + ib_len
    node = GRAPH.next(LRH.name, lrh.lnh)
    if node in (BTH.name, GRH.name):
        has_grh = node == GRH.name
        if ib_len < LRH.size + BTH.size + ICRC_LEN:
            pkt.mark("lrh", off + _PKTLEN_AT, f"PktLen {lrh.pktlen} ({ib_len} bytes) is "
                     "shorter than the smallest transport packet")
            ib_end = min(end, off + max(ib_len, LRH.size))
        if ib_end > end:
            pkt.mark("lrh", off + _PKTLEN_AT, f"PktLen {lrh.pktlen} ({ib_len} bytes) exceeds "
                     f"the {end - off} bytes captured")
            ib_end = end
            _transport_body(pkt, off + LRH.size, ib_end, has_grh, crc_end=None)
            _icrc_not_captured(pkt)
            return
        _transport_body(pkt, off + LRH.size, ib_end, has_grh, crc_end=ib_end - ICRC_LEN)
        _vcrc(pkt, off, ib_end, end)
        return
    # Raw packets: no ICRC, VCRC after PktLen*4 bytes.
    if ib_end > end:
        pkt.mark("lrh", off + _PKTLEN_AT, f"PktLen {lrh.pktlen} ({ib_len} bytes) exceeds the "
                 f"{end - off} bytes captured")
        ib_end = end
    body = off + LRH.size
    raw = _RAW_AFTER_LRH.get(node or "")
    if raw is not None and take(pkt, raw, body, ib_end) is not None:
        _set_payload(pkt, body + raw.size, ib_end)
    _vcrc(pkt, off, ib_end, end)


def _vcrc(pkt: Packet, off: int, ib_end: int, end: int) -> None:
    if ib_end + VCRC_LEN <= end:
        pkt.vcrc = pkt.data[ib_end:ib_end + VCRC_LEN]
        pkt.add("infiniband.variant.crc", int.from_bytes(pkt.vcrc, "big"))
        if options_of(pkt).verify_crc:
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
        grh = take(pkt, GRH, off, crc_end if crc_end is not None else end)
        if grh is None:
            return
        off += GRH.size
        if GRAPH.next(GRH.name, grh.nxthdr) != BTH.name:
            # LNH 3 and RoCEv1 both promise IBA transport after the GRH.
            pkt.mark("grh", off - GRH.size + _NXTHDR_AT, f"NxtHdr {grh.nxthdr:#04x} is not "
                     f"IBA transport ({GRAPH.value(GRH.name, BTH.name):#04x})")
            _set_payload(pkt, off, end)
            return
    limit = crc_end if crc_end is not None else end
    _transport_headers(pkt, off, limit)
    if crc_end is not None:
        # Checked even when the headers did not fit: the ICRC position is known.
        _icrc(pkt, crc_end, roce)


def _transport_headers(pkt: Packet, off: int, limit: int) -> bool:
    """BTH, the opcode's extended headers, payload and pad; False if truncated."""
    bth = take(pkt, BTH, off, limit)
    if bth is None:
        return False
    op = OPCODES[bth.opcode]
    pkt.opcode = op
    pkt.add("ibwire.opcode.name", op.label)
    if not op.valid:
        pkt.mark("bth", off, f"opcode {bth.opcode:#04x} is reserved or vendor specific")
    off += BTH.size
    for name in op.headers:
        lay = take(pkt, ETH_LAYOUTS[name], off, limit)
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


def _icrc(pkt: Packet, crc_end: int, roce: str | None,
          where: tuple[int, str, int] | None = None) -> None:
    """`where` (start, kind, IP header length for crc.icrc_fast) is given by a
    caller that knows the headers, saving the layer lookups."""
    data = pkt.data
    pkt.icrc = data[crc_end:crc_end + ICRC_LEN]
    if len(pkt.icrc) < ICRC_LEN:
        pkt.mark("icrc", crc_end, "truncated ICRC")
        pkt.icrc = None
        return
    pkt.add("infiniband.invariant.crc", int.from_bytes(pkt.icrc, "big"))
    status = CrcStatus.UNVERIFIED
    if options_of(pkt).verify_crc:
        value = None if where is None else crc.icrc_fast(pkt.data, where[0], crc_end, *where[1:])
        if value is None:
            value = _icrc_value(pkt, crc_end, roce)
        if value is not None:
            good = value.to_bytes(ICRC_LEN, "little") == pkt.icrc
            status = CrcStatus.GOOD if good else CrcStatus.BAD
    pkt.icrc_status = status
    pkt.add("infiniband.invariant.crc.status", int(status))


def _icrc_not_captured(pkt: Packet) -> None:
    if pkt.layer("bth") is not None and pkt.icrc is None:
        pkt.icrc_status = CrcStatus.UNVERIFIED
        pkt.add("infiniband.invariant.crc.status", int(CrcStatus.UNVERIFIED))


def _icrc_value(pkt: Packet, crc_end: int, roce: str | None) -> int | None:
    """The ICRC over the masked bytes, without building them (crc.icrc_fast)."""
    data = pkt.data
    start = pkt.ib_offset
    if roce is None:
        kind = "native_grh" if pkt.layer("grh") is not None else "native"
        value = crc.icrc_fast(data, start, crc_end, kind)
    elif roce == "roce1":
        value = crc.icrc_fast(data, start, crc_end, "roce1")
    else:
        ip = pkt.layer("ip") or pkt.layer("ipv6")
        udp = pkt.layer("udp")
        if ip is None or udp is None:
            return None
        kind = "ipv4" if ip.layout.name == "ip" else "ipv6"
        value = crc.icrc_fast(data, ip.offset, crc_end, kind, udp.offset - ip.offset)
    if value is not None:
        return value
    masked = icrc_masked_input(pkt, crc_end, roce)
    return None if masked is None else crc.crc32(masked)


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
        take(pkt, GRH, off, end)
        return
    paylen = GRH.unpack(pkt.data, off)["paylen"]
    ib_end = off + GRH.size + paylen
    if ib_end > end:
        pkt.mark("grh", off + _PAYLEN_AT, f"PayLen {paylen} exceeds the "
                 f"{end - off - GRH.size} bytes captured")
        _transport_body(pkt, off, end, True, crc_end=None, roce="roce1")
        _icrc_not_captured(pkt)
        return
    if paylen < BTH.size + ICRC_LEN:
        pkt.mark("grh", off + _PAYLEN_AT, f"PayLen {paylen} is shorter than a BTH and ICRC")
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


