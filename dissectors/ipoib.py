"""Scapy layers for IPoIB, generated from the layouts in `ibwire.ipoib`.

* `IPoIB` (4 bytes) follows the last ETH of a UD SEND or the BTH of an RC/UC SEND
  First/Only when `is_ipoib_payload` says so (the same heuristic as the library
  decoder) and hands its payload to Scapy's IP / IPv6 / ARP by `type`.
* LINKTYPE_IPOIB (242) starts with `IPoIBGRH`, which dispatches to
  `IPoIBDAddr` when bytes 0-1 are zero (Wireshark's two pseudo-header forms).
* A BTH is never dissected under IPoIB: UDP to port 4791 inside IPoIB is not RoCE.
"""

from __future__ import annotations

from typing import Any

from ibwire.dissectors import ib
from ibwire.dissectors.bindings import bind_edge, linktype, provide
from ibwire.dissectors.generate import layer_class, scapy_name
from ibwire.dissectors.payload import PAYLOAD_CLASSES, find_layer
from scapy.config import conf
from scapy.packet import Packet, bind_layers

from ibwire.graph import GRAPH
from ibwire.ipoib import IPOIB, IPOIB_DADDR, IPOIB_GRH, is_ipoib_payload

# What the IPoIB header's EtherType may announce (RFC 4391: IP and (R)ARP).
IPOIB_CARRIES = ("ip", "arp", "rarp")


class _IPoIBMixin:
    def mysummary(self) -> str:
        return f"IPoIB type {self.type:#06x}"


IPoIB = layer_class(IPOIB, "IPoIB", bases=(_IPoIBMixin,))
IPoIBDAddr = layer_class(IPOIB_DADDR, "IPoIBDAddr")


_DADDR_MARK = bytes(2)


def _pseudo_dispatch(cls: type[Packet], _pkt: bytes | None = None, *args: Any,
                     **kargs: Any) -> type[Packet]:
    # Wireshark: bytes 0-1 zero means "no GRH, destination address only".
    if _pkt is not None and _pkt[:len(_DADDR_MARK)] == _DADDR_MARK:
        return IPoIBDAddr
    return cls


IPoIBGRH = layer_class(IPOIB_GRH, "IPoIBGRH",
                       namespace={"dispatch_hook": classmethod(_pseudo_dispatch)})


def guess_ipoib(bth: Packet, last: Packet, data: bytes) -> type[Packet] | None:
    """UD datagram mode (DETH) and RC/UC connected mode (no DETH) alike."""
    deth = find_layer(last, "deth")
    srcqp, q_key = (deth.srcqp, deth.q_key) if deth is not None else (None, None)
    if is_ipoib_payload(bth.opcode, bth.destqp, srcqp, q_key, data):
        return IPoIB
    return None


if guess_ipoib not in PAYLOAD_CLASSES:
    PAYLOAD_CLASSES.append(guess_ipoib)
ib.NOT_UNDER.add(IPoIB)



_TYPE = scapy_name(IPOIB.by_name["type"])


def _bind_ethertypes(*_: object) -> None:
    # The EtherType table every Ethernet-like header shares (RARP dissects only:
    # a build writes ARP's value, the first for the class).
    for value, node in GRAPH.edges["eth"].table.items():
        if node in IPOIB_CARRIES:
            bind_edge(IPoIB, _TYPE, value, node)


_bind_ethertypes()
GRAPH.subscribe(_bind_ethertypes)
bind_layers(IPoIBGRH, IPoIB)       # either pseudo-header form, then the IPoIB header
bind_layers(IPoIBDAddr, IPoIB)
provide({"ipoib": IPoIBGRH})
conf.l2types.register_layer2num(linktype("ipoib"), IPoIBDAddr)

__all__ = ["IPoIB", "IPoIBDAddr", "IPoIBGRH", "guess_ipoib"]
