"""Display filters over frames: `-Y` and the filters inside `-z` specs.

The filter engine (`dfilter.py`) reads a packet through `pkt.values_of` and
`pkt.has`. Some names tshark users filter on are not decoded fields: `frame.*`,
`_ws.col.*`, aggregates such as `ip.addr`/`udp.port`, and protocols ibwire only
names (`tcp`, `arp`, `data`). Before a test, the values of exactly those names the
filter reads are added to the packet, and taken away after it.
"""

from __future__ import annotations

from typing import Any

from ibwire.cli.columns import columns
from ibwire.cli.fields_out import ALIASES, UsageError
from ibwire.cli.frames import FrameInfo
from ibwire.packet import Packet

# Protocols that appear in frame.protocols but have no layout of their own.
STACK_PROTOCOLS = {"tcp", "arp", "icmp", "icmpv6", "igmp", "data", "sctp", "gre", "esp",
                   "lldp", "rarp", "ptp", "frame", "ethertype", "ipv6.hopopts"}


def _known(name: str) -> str | None:
    return "protocol" if name in STACK_PROTOCOLS else None


class FilterSyntaxError(UsageError):
    """A filter that does not compile; `str()` is tshark's caret display."""


class PacketFilter:
    """A compiled display filter that can also see frame and column values."""

    def __init__(self, text: str) -> None:
        from ibwire.cli.dfilter import FilterError, compile_filter
        try:
            self.filter = compile_filter(text, _known)
        except FilterError as exc:
            raise FilterSyntaxError(exc.format()) from None
        self.text = text
        self.extra = [n for n in self.filter.fields
                      if n.startswith(("frame.", "_ws.col.")) or n in ALIASES
                      or n in STACK_PROTOCOLS]

    def matches(self, info: FrameInfo, pkt: Packet) -> bool:
        if not self.extra:
            return self.filter.matches(pkt)
        added = []
        for name in self.extra:
            vals = _values(name, info, pkt)
            if vals:
                pkt.extras.setdefault(name, []).extend(vals)
                added.append(name)
        try:
            return self.filter.matches(pkt)
        finally:
            for name in added:
                pkt.extras.pop(name, None)


def _values(name: str, info: FrameInfo, pkt: Packet) -> list[Any]:
    if name.startswith("frame."):
        v = info.raw(name)
        return [] if v is None else [v]
    if name.startswith("_ws.col."):
        v = columns(info).get(name)
        return [] if v is None else [v]
    if name == "ip.version":
        # Decoded for IPv4 already; tshark's IPv6 dissector fills it as well.
        return [lay.values["version"] for lay in pkt.layers if lay.layout.name == "ipv6"]
    if name in ALIASES:
        return ALIASES[name][2](info, pkt)
    if name == "frame" or name in info.stack:
        return [True]
    return []
