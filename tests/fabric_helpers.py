"""Parsing ibnetdiscover's topology text (the tool's own output, and ours) into
comparable sets: nodes with their identity and ports, and links."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-f]{16})"\s+#\s+"([^"]*)"(.*)$')
_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-f]+)\))?\s+"([SHR])-([0-9a-f]{16})"\[(\d+)\]'
                   r'(?:\(([0-9a-f]+)\))?\s+#(.*)$')


@dataclass
class TopoNode:
    guid: int
    kind: str
    nports: int
    desc: str
    ident: dict[str, int]
    lid: int | None = None
    ports: dict[int, dict] = field(default_factory=dict)


def parse_topology(text: str) -> dict[int, TopoNode]:
    nodes: dict[int, TopoNode] = {}
    for block in text.split("\n\n"):
        if "vendid=" not in block:
            continue
        ident = {k: int(v, 16) for k, v in re.findall(r"^(\w+)=0x([0-9a-f]+)", block, re.M)}
        node = None
        for line in block.splitlines():
            m = _NODE.match(line)
            if m:
                kind, nports, _, guid, desc, rest = m.groups()
                node = TopoNode(int(guid, 16), kind, int(nports), desc, ident)
                lm = re.search(r"port 0 lid (\d+) lmc (\d+)", rest)
                if lm:
                    node.lid = int(lm[1])
                nodes[node.guid] = node
                continue
            m = _PORT.match(line)
            if m and node is not None:
                port, own, _, peer, peer_port, peer_pguid, comment = m.groups()
                lids = [int(x) for x in re.findall(r"lid (\d+)", comment)]
                node.ports[int(port)] = {
                    "peer": (int(peer, 16), int(peer_port)),
                    "guid": int(own, 16) if own else None,
                    "peer_guid": int(peer_pguid, 16) if peer_pguid else None,
                    "lid": lids[0] if node.kind != "Switch" else None,
                    "peer_lid": lids[-1], "speed": comment.split()[-1]}
    return nodes


def topology_links(nodes: dict[int, TopoNode]) -> set[frozenset]:
    return {frozenset({(n.guid, p), port["peer"]}) for n in nodes.values()
            for p, port in n.ports.items()}
