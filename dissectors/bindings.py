"""Scapy bindings derived from the protocol graph (`ibwire.graph.GRAPH`).

Every `bind_layers` and `conf.l2types.register` of the ibwire layers comes from
the graph: each entry (lower, field, value, upper) whose two nodes have a Scapy
class, one of them an ibwire layer, is bound; each link type whose node is an
ibwire layer is registered. The modules that define layers `provide` the classes
of their nodes; Scapy's own layers are named here. Edges added later
(`GRAPH.add("udp", 4792, "roce2")`) are bound when the graph announces them.

Rules:

* A binding under one of Scapy's layers is tried before Scapy's own (UDP dport
  4791 wins over a TFTP sport 69 binding).
* The first value leading from one class to another is what a build writes
  (`bind_layers`); later values of the same pair only dissect (`bind_bottom_up`),
  so `UDP()/BTH()` keeps port 4791 when 4792 is declared RoCEv2 too.
"""

from __future__ import annotations

from collections.abc import Mapping

from ibwire.dissectors.generate import scapy_name
from scapy.config import conf
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1Q, Ether
from scapy.packet import Packet, bind_bottom_up, bind_layers

from ibwire.constants import ETHERTYPE_IPV6
from ibwire.graph import GRAPH

# Scapy's layers for graph nodes, and the Scapy name of each one's deciding field.
_SCAPY_NODES: dict[str, type[Packet]] = {
    "eth": Ether, "vlan": Dot1Q, "sll": CookedLinux, "sll2": CookedLinuxV2, "ip": IP,
    "ipv6": IPv6, "udp": UDP, "arp": ARP, "rarp": ARP,
}
_SCAPY_FIELDS: dict[str, str] = {
    "eth": "type", "vlan": "type", "sll": "proto", "sll2": "proto", "ip": "proto",
    "ipv6": "nh", "udp": "dport",
}

_NODES: dict[str, type[Packet]] = {}                  # node -> ibwire layer
_bound: set[tuple[type[Packet], type[Packet], str, int]] = set()
_build_pairs: set[tuple[type[Packet], type[Packet]]] = set()
_linktypes: dict[int, type[Packet]] = {}


def is_ibwire_layer(cls: type[Packet]) -> bool:
    return getattr(cls, "ib_layout", None) is not None


def node_class(node: str, value: int | None = None) -> type[Packet] | None:
    """The Scapy class that dissects `node` (reached through `value`)."""
    if node == "ip" and value == ETHERTYPE_IPV6:
        return IPv6        # the decoder's "ip" step reads both versions; Scapy has two layers
    return _NODES.get(node) or _SCAPY_NODES.get(node)


def linktype(node: str) -> int | None:
    """The pcap link type whose first header is `node`."""
    return next((num for num, n in GRAPH.linktypes.items() if n == node), None)


def provide(nodes: Mapping[str, type[Packet]]) -> None:
    """Declare the ibwire layers of some nodes and bind every edge they complete."""
    _NODES.update(nodes)
    bind_graph()


def bind_graph() -> None:
    """Bind every graph entry and register every link type not bound yet."""
    for lower, field, value, upper in GRAPH.triples():
        lo, up = node_class(lower), node_class(upper, value)
        if lo is None or up is None or not (is_ibwire_layer(lo) or is_ibwire_layer(up)):
            continue
        name = _field_name(lower, lo, field)
        if (lo, up, name, value) not in _bound:
            _bound.add((lo, up, name, value))
            _bind(lo, up, name, value)
    for num, node in GRAPH.linktypes.items():
        cls = node_class(node)
        if cls is not None and is_ibwire_layer(cls) and _linktypes.get(num) is not cls:
            _linktypes[num] = cls
            conf.l2types.register(num, cls)


def bind_edge(lower: type[Packet], field: str, value: int, upper: str) -> None:
    """Bind one entry of a graph table under a layer the graph has no node for (the
    IPoIB header reads the EtherType table)."""
    up = node_class(upper, value)
    if up is not None and (lower, up, field, value) not in _bound:
        _bound.add((lower, up, field, value))
        _bind(lower, up, field, value)


def _field_name(node: str, cls: type[Packet], field: str) -> str:
    if is_ibwire_layer(cls):
        return scapy_name(cls.ib_layout.by_name[field])
    return _SCAPY_FIELDS[node]


def _bind(lower: type[Packet], upper: type[Packet], field: str, value: int) -> None:
    fval = {field: value}
    if (lower, upper) in _build_pairs:
        bind_bottom_up(lower, upper, **fval)
    else:
        _build_pairs.add((lower, upper))
        bind_layers(lower, upper, **fval)
    if not is_ibwire_layer(lower):
        # Tried before older bindings on Scapy's layer.
        guess = lower.payload_guess
        entry = (fval, upper)
        guess.remove(entry)
        guess.insert(0, entry)


GRAPH.subscribe(lambda kind, details: bind_graph())

__all__ = ["bind_edge", "bind_graph", "is_ibwire_layer", "linktype", "node_class", "provide"]
