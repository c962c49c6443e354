"""Where MADs are found, and the hooks that decode and re-encode them.

A payload is a MAD when it travels in a UD SEND Only (0x64) or SEND Only with
Immediate (0x65) packet whose BTH DestQP or DETH SrcQP is 0 or 1 - Wireshark's
rule (source or destination QP 0/1). That covers native InfiniBand (QP0 SMPs on
VL15, QP1 GSI MADs) and RoCEv1/RoCEv2 (CM on QP1). Bare MAD bytes decode with
`decode_mad(data)` (encapsulation "mad").

Decoding appends one layer per header, attribute, table entry, record and filler,
covering every payload byte (see `_ctx.py`); re-encoding packs those layers from
their values, so `encode(decode(p)) == p` and an edited value is re-encoded.
Wireshark's container items (`infiniband.mad`, `infiniband.smplid`, ...) are
packet extras: byte ranges, not decoded fields.
"""

from __future__ import annotations

from ibwire.constants import MAD_SIZE
from ibwire.decoder import ENCAPS, PAYLOAD_DECODERS, decode
from ibwire.encode import PAYLOAD_ENCODERS
from ibwire.fields import BYTES, REGISTRY
from ibwire.graph import GRAPH
from ibwire.mad._ctx import Ctx
from ibwire.mad._layout import is_mad_layout
from ibwire.mad.classes import body_decoder
from ibwire.mad.header import MAD_HEADER
from ibwire.packet import Layer, Packet

REGISTRY.add("infiniband.mad.rawdata", BYTES, "Attribute or class data (ibwire)")
for _name, _label in (("infiniband.smplid", "Subnet Management Packet (LID Routed)"),
                      ("infiniband.smpdirected", "Subnet Management Packet (Directed Route)"),
                      ("infiniband.smplid.smpdata", "SMP Data"),
                      ("infiniband.sa.drdlid", "SA Packet (Subnet Administration)"),
                      ("infiniband.mad.data", "MAD Data Payload"),
                      ("infiniband.notice.datadetails", "DataDetails"),
                      ("infiniband.p_keytable.p_keytableblock", "P_KeyTableBlock"),
                      ("infiniband.rmpp.transferreddata", "Transferred Data"),
                      ("infiniband.rmpp.extendederrordata", "Optional Extended Error Data")):
    REGISTRY.add(_name, BYTES, _label)
REGISTRY.add("infiniband.mad", BYTES, "MAD (Management Datagram) Common Header")


def carries_mad(pkt: Packet) -> bool:
    """The protocol graph's MAD rule (UD SEND Only to or from QP0/QP1) on a packet."""
    op = pkt.opcode
    bth, deth = pkt.layer("bth"), pkt.layer("deth")
    if op is None or bth is None or deth is None:
        return False
    return GRAPH.carries_mad(op.code, bth.destqp, deth.srcqp)


def decode_into(pkt: Packet, start: int, end: int) -> None:
    """Decode the MAD in pkt.data[start:end] into pkt.layers."""
    ctx = Ctx(pkt, start, end)
    hdr = ctx.take(MAD_HEADER)
    if hdr is None:
        return
    ctx.hdr = hdr
    ctx.extra("infiniband.mad", 0, MAD_SIZE)
    ctx.extra("infiniband.mad.data", 24, MAD_SIZE)
    body_decoder(hdr["mgmt_class"])(ctx)
    ctx.fill(MAD_SIZE, "data")
    ctx.finish(MAD_SIZE)


def payload_decoder(pkt: Packet, start: int, end: int) -> bool:
    """PAYLOAD_DECODERS hook."""
    if end <= start or not carries_mad(pkt):
        return False
    decode_into(pkt, start, end)
    return True


def encode_layers(layers: list[Layer]) -> bytes | None:
    """The bytes of contiguous MAD layers, packed from their values (None if the
    layers are not a MAD's)."""
    if not layers or not is_mad_layout(layers[0].layout):
        return None
    out = []
    pos = layers[0].offset
    for lay in layers:
        if lay.offset != pos or not is_mad_layout(lay.layout):
            return None
        out.append(lay.layout.pack(lay.values))
        pos += lay.layout.size
    return b"".join(out)


def payload_encoder(layers: list[Layer], pkt: Packet) -> bytes | None:
    """PAYLOAD_ENCODERS hook."""
    return encode_layers(layers)


def _mad_encap(pkt: Packet, off: int, end: int) -> None:
    decode_into(pkt, off, end)


def decode_mad(data: bytes) -> Packet:
    """Decode bare MAD bytes (offsets in the result are MAD offsets)."""
    return decode(data, "mad")


def encode_mad(pkt_or_layers: Packet | list[Layer]) -> bytes:
    """The MAD bytes of a decoded packet (or of its MAD layers), from the values."""
    if isinstance(pkt_or_layers, Packet):
        layers = mad_layers(pkt_or_layers)
    else:
        layers = list(pkt_or_layers)
    out = encode_layers(layers)
    if out is None:
        raise ValueError("no MAD layers to encode")
    return out


def mad_layers(pkt: Packet) -> list[Layer]:
    """The layers of the MAD in a packet (from the common header on)."""
    for i, lay in enumerate(pkt.layers):
        if lay.layout is MAD_HEADER:
            return pkt.layers[i:]
    return [lay for lay in pkt.layers if is_mad_layout(lay.layout)]


def install() -> None:
    """Register the hooks (idempotent; `import ibwire.mad` calls it)."""
    if payload_decoder not in PAYLOAD_DECODERS:
        PAYLOAD_DECODERS.append(payload_decoder)
    if payload_encoder not in PAYLOAD_ENCODERS:
        PAYLOAD_ENCODERS.append(payload_encoder)
    ENCAPS["mad"] = _mad_encap
