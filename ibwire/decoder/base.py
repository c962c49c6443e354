"""Shared decoder state: options, the step registry and the layer helpers every
decoding step uses (decode one layout or mark it truncated).

A *step* decodes the header a protocol-graph node names ("eth", "ip", "udp",
"roce2", "ib", "erf", ...) and what follows it. Which step runs next is never
written here: `follow` asks `GRAPH` which node a header's deciding field leads
to and runs the step registered for it (`STEPS`)."""

from __future__ import annotations

from collections.abc import Callable

from ibwire.fields import Layout
from ibwire.graph import GRAPH
from ibwire.packet import Layer, Packet

# A payload decoder looks at a packet whose transport headers are decoded and may
# claim data[start:end]: it appends its layers and returns True.
PayloadDecoder = Callable[[Packet, int, int], bool]
PAYLOAD_DECODERS: list[PayloadDecoder] = []
Step = Callable[[Packet, int, int], None]
# Protocol-graph node -> the step that decodes it: function(packet, offset, end).
# Other modules add steps for their nodes (IPoIB, "mad"); `ENCAPS` is the old name.
STEPS: dict[str, Step] = {}
ENCAPS = STEPS


def register_step(node: str, step: Step) -> None:
    """Decode graph node `node` with `step` (wherever an edge leads to it)."""
    STEPS[node] = step


class Options:
    """Decoder settings shared by a whole capture.

    `roce_ports`: UDP destination ports decoded as RoCEv2; None (the default) means
    the graph's (`GRAPH.roce_ports()`), read at decode time so a port declared later
    counts."""

    def __init__(self, roce_ports: frozenset[int] | None = None,
                 verify_crc: bool = True, fast_path: bool = True) -> None:
        self._roce_ports = None if roce_ports is None else frozenset(roce_ports)
        self.verify_crc = verify_crc
        # The common chains first go through decoder.fastpath (same results, faster);
        # False sends every packet through the general steps (tests compare both).
        self.fast_path = fast_path

    @property
    def roce_ports(self) -> frozenset[int]:
        return GRAPH.roce_ports() if self._roce_ports is None else self._roce_ports

    @roce_ports.setter
    def roce_ports(self, ports: frozenset[int] | None) -> None:
        self._roce_ports = None if ports is None else frozenset(ports)


DEFAULT = Options()


def follow(pkt: Packet, lower: str, value: int, off: int, end: int) -> bool:
    """Run the step of the node `value` in `lower`'s deciding field leads to (after the
    edge's skip bytes); False when the graph or the step registry has none."""
    edge = GRAPH.edges.get(lower)
    node = None if edge is None else edge.table.get(value)
    step = None if node is None else STEPS.get(node)
    if step is None:
        return False
    step(pkt, off + edge.skip.get(value, 0), end)  # type: ignore[union-attr]
    return True


def take(pkt: Packet, layout: Layout, off: int, end: int) -> Layer | None:
    """Decode one fixed-size layout at `off`, or mark it truncated."""
    if off + layout.size > end:
        pkt.mark(layout.name, off, f"truncated: {layout.size} bytes needed, "
                 f"{max(end - off, 0)} available")
        keep_undecoded(pkt, off, end)
        return None
    lay = Layer(layout, off, layout.values_at(pkt.data, off))
    pkt.layers.append(lay)
    return lay


def keep_undecoded(pkt: Packet, off: int, end: int) -> None:
    if end > off and pkt.undecoded_offset < 0:
        pkt.undecoded = pkt.data[off:end]
        pkt.undecoded_offset = off
        pkt.add("infiniband.raw", pkt.undecoded)


def options_of(pkt: Packet) -> Options:
    return pkt.options or DEFAULT
