"""Length fields and pad, filled and read as the protocol graph declares them.

`GRAPH.lengths` says which field of which header is a length, in what unit and
from where to where; the layers' `post_build` and `do_dissect` use these helpers
so no header size or unit is written here.
"""

from __future__ import annotations

from ibwire.dissectors.generate import patch
from scapy.packet import Packet

from ibwire.graph import GRAPH


def fill_lengths(layer: Packet, p: bytes, pay: bytes, header: int | None = None) -> bytes:
    """`p` (the layer's bytes) with each unset length field of its layout computed.

    `header` is the size of the header the lengths start from (default: all of
    `p`); what follows it in `p`, then `pay`, is what they count."""
    layout = layer.ib_layout
    header = len(p) if header is None else header
    after = len(p) - header + len(pay)
    for ln in GRAPH.length_of(layout.name):
        if layer.getfieldval(ln.field) is None:
            p = patch(layout, p, ln.field, ln.measure(header, after))
    return p


def covered(layer: Packet, field: str, header: int | None = None) -> int:
    """How many bytes after the layer's header its length field `field` counts."""
    layout = layer.ib_layout
    ln = GRAPH.length(layout.name, field)
    return ln.covered(layer.getfieldval(field), layout.size if header is None else header)


def measure(layout: str, field: str, header: int, after: int) -> int:
    """The value of `layout`'s length field for a `header`-byte header and `after` bytes."""
    return GRAPH.length(layout, field).measure(header, after)


def pad_length(payload: int) -> int:
    """BTH PadCnt for a payload of `payload` bytes: the pad makes the packet a whole
    number of LRH PktLen units (IBA §9.2.4; RoCE keeps the rule)."""
    return -payload % GRAPH.length("lrh", "pktlen").unit


__all__ = ["covered", "fill_lengths", "measure", "pad_length"]
