"""Shared decoder state: options, extension registries and the layer helpers
every decoding step uses (decode one layout or mark it truncated)."""

from __future__ import annotations

from collections.abc import Callable

from ibwire.constants import ROCEV2_PORT
from ibwire.fields import Layout
from ibwire.packet import Layer, Packet

# A payload decoder looks at a packet whose transport headers are decoded and may
# claim data[start:end]: it appends its layers and returns True.
PayloadDecoder = Callable[[Packet, int, int], bool]
PAYLOAD_DECODERS: list[PayloadDecoder] = []
# Extra encapsulations: name or link type -> function(packet, offset, end).
ENCAPS: dict[str | int, Callable[[Packet, int, int], None]] = {}


class Options:
    """Decoder settings shared by a whole capture."""

    def __init__(self, roce_ports: frozenset[int] = frozenset({ROCEV2_PORT}),
                 verify_crc: bool = True, fast_path: bool = True) -> None:
        self.roce_ports = roce_ports
        self.verify_crc = verify_crc
        # The common chains first go through decoder.fastpath (same results, faster);
        # False sends every packet through the general steps (tests compare both).
        self.fast_path = fast_path


DEFAULT = Options()


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


