"""What follows the last transport header: the payload guessers.

After the BTH and its extended headers (chosen by the opcode table), the
payload's Scapy class is asked of `PAYLOAD_CLASSES` in order: each guesser gets
the BTH layer, the layer the payload hangs from, and the payload bytes, and
returns a class or None. MADs (QP0/QP1) and IPoIB register here; anything else
is Raw. This mirrors `ibwire.decoder.PAYLOAD_DECODERS` on the library side.
"""

from __future__ import annotations

from collections.abc import Callable

from scapy.config import conf
from scapy.packet import Packet

PayloadGuesser = Callable[[Packet, Packet, bytes], "type[Packet] | None"]
PAYLOAD_CLASSES: list[PayloadGuesser] = []


def find_layer(layer: Packet, layout_name: str) -> Packet | None:
    """The nearest layer at or below `layer` (towards the frame start) of a layout."""
    cur: Packet | None = layer
    while cur is not None:
        lay = getattr(type(cur), "ib_layout", None)
        if lay is not None and lay.name == layout_name:
            return cur
        cur = cur.underlayer
    return None


def payload_class(bth: Packet, last: Packet, data: bytes) -> type[Packet]:
    for guess in PAYLOAD_CLASSES:
        try:
            cls = guess(bth, last, data)
        except Exception:  # noqa: BLE001 - a guesser must not stop the dissection
            cls = None
        if cls is not None:
            return cls
    return conf.raw_layer
