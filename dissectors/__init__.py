"""Scapy layers for InfiniBand, RoCE, ERF, IPoIB and MADs, generated from the
field registry (`ibwire.fields`): no header field is written twice.

    from scapy.all import rdpcap, Ether, IP, UDP, Raw
    from ibwire.dissectors import BTH, RETH

    frame = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=49152) / \\
        BTH(opcode=0x0A, destqp=0x11, psn=5) / RETH(va=0x1000, r_key=7, dmalen=3) / Raw(b"abc")
    bytes(frame)          # UDP length, PadCnt + pad and ICRC filled, as ibwire.encode does
    frame.summary()       # '... RC RDMA Write Only QP=0x000011 PSN=5 ...'
    rdpcap("native.pcap")[0].show()   # ERF / LRH / BTH / DETH / MAD ... / VCRC shown on LRH

Modules: `generate` (Layout -> Packet class), `bindings` (every bind_layers and
link type, derived from the protocol graph `ibwire.graph.GRAPH` and kept in step
with it), `lengths` (length fields and pad as `GRAPH.lengths` declares them), `ib`
(LRH, GRH, BTH, ETHs, link packets, trailers), `erf` (ERF records), `ipoib` (IPoIB
and its link type), `mad` (MADs on QP0/QP1 when `ibwire.mad` is present),
`payload` (the payload guessers). A header or port declared in the graph
(`GRAPH.add_extended_header`, `GRAPH.add`) is built and dissected with no change here.
"""

from __future__ import annotations

from ibwire.dissectors.erf import ERF
from ibwire.dissectors.generate import (
    TrailerField,
    class_for,
    layer_class,
    layer_values,
    scapy_field,
    to_header,
)
from ibwire.dissectors.ib import (
    AETH,
    BTH,
    DETH,
    ETH_CLASSES,
    FETH,
    GRH,
    IETH,
    LRH,
    RDETH,
    RETH,
    RWH,
    XRCETH,
    AtomicAckETH,
    AtomicETH,
    CNPPad,
    IBLink,
    ImmDt,
    bind_rocev2_port,
    eth_class,
)
from ibwire.dissectors.ipoib import IPoIB, IPoIBDAddr, IPoIBGRH
from ibwire.dissectors.mad import MAD, MAD_AVAILABLE, mad_class
from ibwire.dissectors.payload import PAYLOAD_CLASSES

__all__ = [
    "AETH", "BTH", "CNPPad", "DETH", "ERF", "ETH_CLASSES", "FETH", "GRH", "IBLink", "IETH",
    "IPoIB", "IPoIBDAddr", "IPoIBGRH", "LRH", "MAD", "MAD_AVAILABLE", "PAYLOAD_CLASSES", "RDETH",
    "RETH", "RWH", "TrailerField", "XRCETH", "AtomicAckETH", "AtomicETH", "ImmDt",
    "bind_rocev2_port", "class_for", "eth_class", "layer_class", "layer_values", "mad_class",
    "scapy_field", "to_header",
]
