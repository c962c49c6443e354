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
from ibwire.dissectors.generate import layer_class
from ibwire.dissectors.payload import PAYLOAD_CLASSES, find_layer
from scapy.config import conf
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP
from scapy.packet import Packet, bind_bottom_up, bind_layers

from ibwire.constants import (
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_RARP,
    LINKTYPE_IPOIB,
)
from ibwire.ipoib import IPOIB, IPOIB_DADDR, IPOIB_GRH, is_ipoib_payload


class _IPoIBMixin:
    def mysummary(self) -> str:
        return f"IPoIB type {self.type:#06x}"


IPoIB = layer_class(IPOIB, "IPoIB", bases=(_IPoIBMixin,))
IPoIBDAddr = layer_class(IPOIB_DADDR, "IPoIBDAddr")


def _pseudo_dispatch(cls: type[Packet], _pkt: bytes | None = None, *args: Any,
                     **kargs: Any) -> type[Packet]:
    # Wireshark: bytes 0-1 zero means "no GRH, destination address only".
    if _pkt is not None and len(_pkt) >= 2 and _pkt[:2] == b"\0\0":
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

bind_layers(IPoIB, IP, type=ETHERTYPE_IPV4)
bind_layers(IPoIB, IPv6, type=ETHERTYPE_IPV6)
bind_layers(IPoIB, ARP, type=ETHERTYPE_ARP)
bind_bottom_up(IPoIB, ARP, type=ETHERTYPE_RARP)  # dissect only: build uses ARP
bind_layers(IPoIBGRH, IPoIB)
bind_layers(IPoIBDAddr, IPoIB)
conf.l2types.register(LINKTYPE_IPOIB, IPoIBGRH)
conf.l2types.register_layer2num(LINKTYPE_IPOIB, IPoIBDAddr)

__all__ = ["IPoIB", "IPoIBDAddr", "IPoIBGRH", "guess_ipoib"]
