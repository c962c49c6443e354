"""`-z io,phs`: protocol hierarchy, frames and bytes per protocol path (tshark layout)."""

from __future__ import annotations

from ibwire.cli.frames import FrameInfo
from ibwire.cli.stats import Stat
from ibwire.packet import Packet

RULE = "=" * 67


class _Node:
    __slots__ = ("frames", "nbytes", "children")

    def __init__(self) -> None:
        self.frames = 0
        self.nbytes = 0
        self.children: dict[str, _Node] = {}


class Hierarchy(Stat):
    title = "Protocol Hierarchy Statistics"

    def __init__(self, filt: str = "") -> None:
        super().__init__(filt)
        self.root = _Node()

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        self.add_stack(info.stack, 1, info.length)

    def add_stack(self, stack: list[str], frames: int, nbytes: int) -> None:
        """`frames` frames of this protocol stack, `nbytes` bytes in all (the bulk
        path adds a group of alike frames at once)."""
        node = self.root
        # tshark's hierarchy leaves out the ethertype pseudo-protocol, the IPv6
        # extension headers (names with a dot) and the echo data under ICMP (which
        # frame.protocols does list).
        prev = ""
        for name in stack:
            if name == "ethertype" or "." in name or (name == "data" and prev == "icmp"):
                continue
            prev = name
            node = node.children.setdefault(name, _Node())
            node.frames += frames
            node.nbytes += nbytes

    def lines(self) -> list[str]:
        out = ["", RULE, self.title, f"Filter: {self.filter_text}", ""]

        def walk(node: _Node, depth: int) -> None:
            for name, child in node.children.items():
                label = ("  " * depth + name).ljust(40)
                out.append(f"{label} frames:{child.frames} bytes:{child.nbytes}")
                walk(child, depth + 1)

        walk(self.root, 0)
        out.append(RULE)
        return out
