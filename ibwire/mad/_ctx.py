"""Decoding state for one MAD: where we are, where the bytes end, what to mark.

Rules the decoders keep (they make `encode(decode(m)) == m` hold by construction):

* every byte of the MAD payload ends up in exactly one layer, in order, so the
  payload is the concatenation of the packed layers;
* a layout that does not fit the captured bytes is never half-decoded: the packet
  is marked once (layer, offset, reason) and the rest becomes one `infiniband.raw`
  layer, after which nothing more is taken;
* space an attribute does not use inside its data area becomes an unnamed
  reserved layer (`filler("pad")`), opaque data an `infiniband.mad.rawdata` layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union

from ibwire.fields import Layout
from ibwire.mad._layout import filler
from ibwire.packet import Layer, Packet

# A part of an attribute: a layout, a layout repeated n times (table entries), or a
# function that decodes a variable structure up to a limit (absolute offset).
Part = Union[Layout, tuple[Layout, int], Callable[["Ctx", int], None]]


class Ctx:
    def __init__(self, pkt: Packet, start: int, end: int) -> None:
        self.pkt = pkt
        self.mad = start          # absolute offset of MAD byte 0
        self.end = end            # absolute end of the payload
        self.pos = start
        self.stopped = False
        self.hdr: dict[str, Any] = {}

    # -- taking layouts ---------------------------------------------------------
    def take(self, layout: Layout) -> dict[str, Any] | None:
        """Decode `layout` at the current position, or mark the MAD truncated."""
        if self.stopped:
            return None
        if self.pos + layout.size > self.end:
            self.truncated(layout.name, layout.size)
            return None
        values = layout.unpack(self.pkt.data, self.pos)
        layout.derived_values(values)
        self.pkt.layers.append(Layer(layout, self.pos, values))
        self.pos += layout.size
        return values

    def fits(self, nbytes: int, limit: int) -> bool:
        return not self.stopped and self.pos + nbytes <= limit

    def parts(self, parts: Sequence[Part], limit: int) -> None:
        """Decode parts in order while they fit before `limit` (the data area end)."""
        for part in parts:
            if self.stopped:
                return
            if callable(part) and not isinstance(part, Layout):
                part(self, limit)
                continue
            layout, count = part if isinstance(part, tuple) else (part, 1)
            for _ in range(count):
                if self.pos + layout.size > limit:
                    return        # the attribute is larger than its area: rest is pad
                if self.take(layout) is None:
                    return

    def fill(self, upto_rel: int, kind: str = "pad") -> None:
        """Cover the bytes up to MAD offset `upto_rel` with one filler layer."""
        self.fill_abs(self.mad + upto_rel, kind)

    def fill_abs(self, upto: int, kind: str = "pad") -> None:
        if self.stopped or upto <= self.pos:
            return
        if upto > self.end:
            if self.end > self.pos:
                self.take(filler(kind, self.end - self.pos))
            self.pkt.mark("mad", self.end, f"truncated: the MAD ends {upto - self.end} "
                          "bytes early")
            self.stopped = True
            return
        self.take(filler(kind, upto - self.pos))

    def area(self, size: int, parts: Sequence[Part], kind: str = "pad") -> None:
        """An attribute data area of `size` bytes holding `parts`, the rest filler."""
        limit = self.pos + size
        self.parts(parts, limit)
        self.fill_abs(limit, kind)

    # -- problems and extras ----------------------------------------------------
    def truncated(self, what: str, needed: int) -> None:
        have = max(self.end - self.pos, 0)
        self.pkt.mark(what, self.pos, f"truncated: {needed} bytes needed, {have} available")
        if have:
            layout = filler("raw", have)
            values = layout.unpack(self.pkt.data, self.pos)
            self.pkt.layers.append(Layer(layout, self.pos, values))
            self.pos = self.end
        self.stopped = True

    def finish(self, mad_size: int) -> None:
        """Bytes after a complete MAD are kept (raw) and marked."""
        if self.stopped or self.pos >= self.end:
            return
        extra = self.end - self.pos
        self.pkt.mark("mad", self.pos, f"{extra} bytes follow the {mad_size}-byte MAD")
        self.take(filler("raw", extra))

    def extra(self, name: str, lo_rel: int, hi_rel: int) -> None:
        """A Wireshark container item: the MAD bytes [lo, hi) as an extra value."""
        lo, hi = self.mad + lo_rel, min(self.mad + hi_rel, self.end)
        if lo < hi:
            self.pkt.add(name, self.pkt.data[lo:hi])

    def peek(self, rel: int, nbytes: int) -> int | None:
        """An integer at MAD offset `rel`, if captured (to choose a layout)."""
        lo = self.mad + rel
        if lo + nbytes > self.end:
            return None
        return int.from_bytes(self.pkt.data[lo:lo + nbytes], "big")

    @property
    def rel(self) -> int:
        return self.pos - self.mad
