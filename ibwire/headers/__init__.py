"""Header layouts: routing (LRH, GRH), transport (BTH and its extended headers),
link packets, and the Ethernet/IP/UDP/ERF carriers that RoCE and captures add."""

from ibwire.headers.bth import BTH
from ibwire.headers.carriers import ERF, ETHERNET, IPV4, IPV6, UDP, VLAN
from ibwire.headers.extended import (
    AETH,
    CNP_PAD,
    DETH,
    ETH_LAYOUTS,
    FETH,
    IETH,
    RDETH,
    RETH,
    XRCETH,
    AtomicAckETH,
    AtomicETH,
    ImmDt,
)
from ibwire.headers.link import LINK
from ibwire.headers.opcodes import OPCODES, Opcode
from ibwire.headers.routing import GRH, LRH, RWH

__all__ = [
    "AETH", "BTH", "CNP_PAD", "DETH", "ERF", "ETHERNET", "ETH_LAYOUTS", "FETH", "GRH", "IETH",
    "IPV4", "IPV6", "LINK", "LRH", "OPCODES", "RDETH", "RETH", "RWH", "UDP", "VLAN", "XRCETH",
    "AtomicAckETH", "AtomicETH", "ImmDt", "Opcode",
]
