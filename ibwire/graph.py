"""The protocol graph: how headers follow one another, declared once.

Rules this module keeps:

* Every "what comes next" decision of the wire formats ibwire reads is an entry
  here: the pcap link type, the ERF type, the EtherType (Ethernet, 802.1Q, Linux
  cooked, raw IB), the IP protocol, the UDP destination port, the LRH LNH, the GRH
  NxtHdr, the MAC Control opcode, the BTH opcode's extended-header chain
  (`headers.opcodes.OPCODES`) and the payload rule for MADs (UD SEND Only to or
  from QP0/QP1).
* It also says which field of which header is a length and what it counts, which
  trailers close a packet, and which field bits the ICRC treats as variant
  (`Layout.icrc_variant`, declared with each layout).
* The decoder's dispatch, the encoder's filling, the Scapy bindings, the CLI's
  protocol stack and the Numba lookup tables are all derived from it. Adding an
  edge (`GRAPH.add`) or an extended header (`GRAPH.add_extended_header`) is the one
  change that teaches all of them; consumers that build eagerly subscribe to
  changes, the others rebuild when `GRAPH.version` moves.

Theory of operation: a *node* is a decoding step, named like the decoder's
encapsulations ("eth", "vlan", "ip", "udp", "roce1", "roce2", "ib", "ib_link",
"erf", "bth", ...). An `Edge` belongs to a header: the field whose value chooses
the next node and the value -> node table. Nodes with no ibwire decoding step
("arp", "tcp", ...) are left to Scapy's layers (`ibwire.inner`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from ibwire.constants import (
    ERF_ETH_PAD,
    ERF_TYPE_ETH,
    ERF_TYPE_IB,
    ERF_TYPE_IB_LINK,
    ERF_TYPES_ETH,
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_MAC_CONTROL,
    ETHERTYPE_RARP,
    ETHERTYPE_ROCE,
    ETHERTYPE_VLANS,
    ICRC_LEN,
    IP_PROTO_UDP,
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LINKTYPE_INFINIBAND,
    LINKTYPE_IPOIB,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
    LNH_IBA_GLOBAL,
    LNH_IBA_LOCAL,
    LNH_IP_NON_IBA,
    LNH_RAW,
    MACC_OP_PAUSE,
    MACC_OP_PFC,
    MAD_QPS,
    MGMT_CLASS_BM,
    MGMT_CLASS_CC,
    MGMT_CLASS_CM,
    MGMT_CLASS_DM,
    MGMT_CLASS_PERF,
    MGMT_CLASS_SA,
    MGMT_CLASS_SMP_DR,
    MGMT_CLASS_SMP_LID,
    MGMT_CLASSES_VENDOR_OUI,
    NXTHDR_IBA,
    PKTLEN_UNIT,
    ROCEV2_PORT,
    VCRC_LEN,
)
from ibwire.fields import Layout
from ibwire.headers.extended import ETH_LAYOUTS
from ibwire.headers.opcodes import OPCODES, UD_SEND_ONLY, UD_SEND_ONLY_IMM, Opcode


@dataclass
class Edge:
    """How the header `lower` chooses what follows it."""

    lower: str                       # layout (or node) name of the deciding header
    field: str                       # its field whose value decides
    table: dict[int, str]            # value -> next node
    skip: dict[int, int] = field(default_factory=dict)  # value -> bytes before the next


@dataclass(frozen=True)
class Length:
    """A length field: `unit`-byte units from `start` ("header": the header's first
    byte, "after": the byte after it and after what lies between it and the next
    header, e.g. ERF extension headers and pad, which wlen does not count) up to
    `end` ("icrc": through the ICRC, not the VCRC; "record": the end of the capture
    record, a native packet's VCRC included)."""

    layout: str
    field: str
    unit: int = 1
    start: str = "header"
    end: str = "icrc"

    def measure(self, header: int, after: int) -> int:
        """The field's value for a `header`-byte header followed by `after` bytes up to
        `end` (a partial unit counts as a whole one)."""
        n = after + (header if self.start == "header" else 0)
        return -(-n // self.unit)

    def covered(self, value: int, header: int) -> int:
        """How many bytes after a `header`-byte header the field's `value` counts."""
        return value * self.unit - (header if self.start == "header" else 0)


@dataclass(frozen=True)
class Trailer:
    """Bytes that close what `opened_by` starts: the ICRC after the transport
    headers' payload and pad, the VCRC after a native packet's LRH..ICRC."""

    name: str
    size: int
    opened_by: str


# EtherType -> node, shared by every header that carries an EtherType.
_ETHERTYPES: dict[int, str] = {
    ETHERTYPE_ROCE: "roce1", ETHERTYPE_IPV4: "ip", ETHERTYPE_IPV6: "ip",
    ETHERTYPE_MAC_CONTROL: "macc", ETHERTYPE_ARP: "arp", ETHERTYPE_RARP: "rarp",
    **{t: "vlan" for t in ETHERTYPE_VLANS},
}


# Layouts whose node has another name where a carrier leads to them (a GRH after
# Ethernet starts RoCEv1, a BTH after UDP RoCEv2, an LRH in ERF native IB).
_LAYOUT_NODES: dict[str, tuple[str, ...]] = {
    "grh": ("roce1",), "ipv6": ("ip",), "bth": ("roce2",), "lrh": ("ib",), "link": ("ib_link",),
}
# Where several values lead to one node, the one that names this layout (the "ip"
# node reads the version nibble; the EtherType still says which version).
_LAYOUT_VALUES: dict[tuple[str, str], int] = {
    (fld, "ip"): ETHERTYPE_IPV4 for fld in ("type", "etype")} | {
    (fld, "ipv6"): ETHERTYPE_IPV6 for fld in ("type", "etype")}


class ProtocolGraph:
    """The edges, lengths and trailers of the formats ibwire reads (see the module doc)."""

    def __init__(self) -> None:
        self.linktypes: dict[int, str] = {
            LINKTYPE_ETHERNET: "eth", LINKTYPE_RAW: "ip", LINKTYPE_ERF: "erf",
            LINKTYPE_INFINIBAND: "ib", LINKTYPE_LINUX_SLL: "sll", LINKTYPE_LINUX_SLL2: "sll2",
            LINKTYPE_IPOIB: "ipoib",
        }
        self.edges: dict[str, Edge] = {}
        for lower, fld in (("eth", "type"), ("vlan", "etype"), ("sll", "etype"),
                           ("sll2", "etype"), ("rwh", "etype")):
            self.edges[lower] = Edge(lower, fld, _ETHERTYPES)
        self.edges["erf"] = Edge("erf", "type", {ERF_TYPE_IB: "ib", ERF_TYPE_IB_LINK: "ib_link",
                                                 ERF_TYPE_ETH: "eth"},
                                 skip={t: ERF_ETH_PAD for t in ERF_TYPES_ETH})
        self.edges["ip"] = Edge("ip", "proto", {IP_PROTO_UDP: "udp"})
        self.edges["ipv6"] = Edge("ipv6", "nxt", {IP_PROTO_UDP: "udp"})
        self.edges["udp"] = Edge("udp", "dstport", {ROCEV2_PORT: "roce2"})
        self.edges["lrh"] = Edge("lrh", "lnh", {LNH_RAW: "rwh", LNH_IP_NON_IBA: "ipv6",
                                                LNH_IBA_LOCAL: "bth", LNH_IBA_GLOBAL: "grh"})
        self.edges["grh"] = Edge("grh", "nxthdr", {NXTHDR_IBA: "bth"})
        self.edges["macc"] = Edge("macc", "opcode", {MACC_OP_PAUSE: "macc_pause",
                                                     MACC_OP_PFC: "macc_cbfc"})
        # MAD common header -> class node; `ibwire.mad.classes` maps each class node to
        # its class layouts and body decoder. Classes not listed: opaque data.
        self.edges["mad"] = Edge("mad", "mgmt_class", {
            MGMT_CLASS_SMP_LID: "mad_smp_lid", MGMT_CLASS_SMP_DR: "mad_smp_dr",
            MGMT_CLASS_SA: "mad_sa", MGMT_CLASS_PERF: "mad_perf", MGMT_CLASS_BM: "mad_bm",
            MGMT_CLASS_DM: "mad_dm", MGMT_CLASS_CM: "mad_cm", MGMT_CLASS_CC: "mad_cc",
            **{c: "mad_vendor_oui" for c in MGMT_CLASSES_VENDOR_OUI}})
        self.lengths: tuple[Length, ...] = (
            Length("lrh", "pktlen", PKTLEN_UNIT, "header", "icrc"),
            Length("grh", "paylen", 1, "after", "icrc"),
            Length("ip", "len", 1, "header", "icrc"),
            Length("ipv6", "plen", 1, "after", "icrc"),
            Length("udp", "length", 1, "header", "icrc"),
            Length("erf", "wlen", 1, "after", "record"),
            Length("erf", "rlen", 1, "header", "record"),
        )
        self.trailers: tuple[Trailer, ...] = (Trailer("icrc", ICRC_LEN, "bth"),
                                              Trailer("vcrc", VCRC_LEN, "lrh"))
        self.version = 0
        self._ports: tuple[int, frozenset[int]] = (-1, frozenset())
        self._listeners: list[Callable[[str, tuple], None]] = []

    # -- queries ----------------------------------------------------------------
    def next(self, lower: str, value: int) -> str | None:
        """The node after header `lower` whose deciding field holds `value`."""
        edge = self.edges.get(lower)
        return None if edge is None else edge.table.get(value)

    def value(self, lower: str, upper: str) -> int | None:
        """The first declared value of `lower`'s deciding field that leads to `upper`
        (what an encoder writes there)."""
        edge = self.edges.get(lower)
        if edge is None:
            return None
        return next((v for v, node in edge.table.items() if node == upper), None)

    def values(self, lower: str, upper: str) -> tuple[int, ...]:
        edge = self.edges.get(lower)
        return () if edge is None else tuple(v for v, n in edge.table.items() if n == upper)

    def encodings(self, lower: str, layout: str) -> tuple[int, ...]:
        """The values of `lower`'s deciding field that announce the header `layout`
        next, the one an encoder writes first (e.g. ("eth", "ipv6") -> (0x86DD,),
        ("udp", "bth") -> the RoCEv2 ports, ("lrh", "grh") -> (3,))."""
        for node in (layout, *_LAYOUT_NODES.get(layout, ())):
            found = self.values(lower, node)
            if found:
                want = _LAYOUT_VALUES.get((self.edges[lower].field, layout))
                return (want,) if want in found else found
        return ()

    def triples(self) -> Iterator[tuple[str, str, int, str]]:
        """(lower, field, value, upper) for every edge entry."""
        for edge in self.edges.values():
            for v, node in edge.table.items():
                yield edge.lower, edge.field, v, node

    def roce_ports(self) -> frozenset[int]:
        """UDP destination ports that carry RoCEv2 (kept per graph version: the
        decoder asks for every datagram)."""
        if self._ports[0] != self.version:
            self._ports = (self.version, frozenset(self.values("udp", "roce2")))
        return self._ports[1]

    def length_of(self, layout: str) -> list[Length]:
        return [ln for ln in self.lengths if ln.layout == layout]

    def length(self, layout: str, field: str) -> Length:
        """The declared length field `field` of `layout`."""
        return next(ln for ln in self.lengths if ln.layout == layout and ln.field == field)

    @staticmethod
    def chain(opcode: int) -> tuple[str, ...]:
        """The extended headers after a BTH with this opcode, in wire order."""
        return OPCODES[opcode].headers

    @staticmethod
    def extended_layout(name: str) -> Layout:
        return ETH_LAYOUTS[name]

    @staticmethod
    def carries_mad(opcode: int, destqp: int, srcqp: int | None) -> bool:
        """A payload is a MAD when a UD SEND Only (with or without immediate) goes to
        or comes from QP0/QP1 (IBA §13.5.1; Wireshark's rule)."""
        return opcode in MAD_OPCODES and ProtocolGraph.on_management_qp(destqp, srcqp)

    @staticmethod
    def on_management_qp(destqp: int, srcqp: int | None) -> bool:
        """Either end is QP0 or QP1: those QPs carry MADs only (IBA §3.5.2), so no
        other payload heuristic may claim the packet, whatever its opcode."""
        return destqp in MAD_QPS or srcqp in MAD_QPS

    def mad_class(self, mgmt_class: int) -> str:
        """The class node after a MAD common header ("mad_data" when the class has no
        layout of its own)."""
        return self.next("mad", mgmt_class) or "mad_data"

    # -- changes ------------------------------------------------------------------
    def add(self, lower: str, value: int, upper: str) -> None:
        """Declare that `value` in `lower`'s deciding field leads to `upper`, e.g.
        `GRAPH.add("udp", 4792, "roce2")` for RoCEv2 on another port."""
        # The EtherType table is shared: every header that carries one learns the value.
        self.edges[lower].table[value] = upper
        self._changed("edge", (lower, value, upper))

    def add_extended_header(self, opcode: int, layout: Layout, after: str | None = None,
                            name: str | None = None) -> Opcode:
        """Put `layout` in the extended-header chain of `opcode`, after the header
        named `after` (default: last). `name` defines a reserved or vendor opcode
        (which then carries a payload). Returns the new opcode entry."""
        ETH_LAYOUTS.setdefault(layout.name, layout)
        op = OPCODES[opcode]
        hdrs = list(op.headers)
        at = len(hdrs) if after is None else hdrs.index(after) + 1
        hdrs.insert(at, layout.name)
        new = replace(op, headers=tuple(hdrs))
        if name is not None:
            new = replace(new, name=name, valid=True, payload=True)
        OPCODES[opcode] = new
        self._changed("chain", (opcode, layout.name))
        return new

    def subscribe(self, listener: Callable[[str, tuple], None]) -> None:
        """Call `listener(kind, details)` after every change ("edge", "chain")."""
        self._listeners.append(listener)

    def _changed(self, kind: str, details: tuple) -> None:
        self.version += 1
        for listener in list(self._listeners):
            listener(kind, details)


MAD_OPCODES = frozenset({UD_SEND_ONLY, UD_SEND_ONLY_IMM})
# The extended headers ibwire defines, in wire order; `add_extended_header` adds to
# ETH_LAYOUTS after them (tables keep the built-in rows where they are).
BUILTIN_EXTENDED: tuple[str, ...] = tuple(ETH_LAYOUTS)
GRAPH = ProtocolGraph()

__all__ = ["BUILTIN_EXTENDED", "GRAPH", "MAD_OPCODES", "Edge", "Length", "ProtocolGraph", "Trailer"]
