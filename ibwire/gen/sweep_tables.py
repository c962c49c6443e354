"""The tables a subnet manager reads or programs during a sweep (`sweep(qos=True)`):
P_Key tables, SL-to-VL mapping, VL arbitration, linear and multicast forwarding.

Their contents are simple functions of the port numbers (the truth the tests
compare with); the LFT is the shortest-path table `Topology.lft` computes.
AttributeModifier layouts are the IBA's (14.2.5.7-10, 14.2.5.14-15).
"""

from __future__ import annotations

from ibwire.gen.sweep import SWITCH, TABLE_ATTRS, TNode, Topology

LFT_BLOCK, MFT_BLOCK = 64, 32
MCAST_BASE = 0xC000
UNROUTED = 0xFF
VLARB_LOW, VLARB_HIGH = 1, 3
__all__ = ["TABLE_ATTRS", "fields", "queries"]


def pkeys(port: int) -> list[int]:
    """The default full-member partition and one limited-member partition per port."""
    return [0xFFFF, 0x0001 + port]


def sl2vl(in_port: int, out_port: int, sl: int) -> int:
    return (sl + in_port + out_port) % 8


def vlarb(which: int, i: int) -> tuple[int, int]:
    return (i % 8, 32 * which + i) if i < 8 else (0, 0)


def mft_mask(topo: Topology, node: TNode) -> int:
    """MLID 0xC000 floods to every active port (bit n = port n)."""
    return sum(1 << p for p in range(1, node.nports + 1) if topo.active(node.guid, p))


def queries(topo: Topology, node: TNode, entered: int) -> list[tuple[str, int]]:
    """(attribute, modifier) of every table read of `node`."""
    if node.kind != SWITCH:
        return [("P_KeyTable", 0), ("SLtoVLMappingTable", 0),
                ("VLArbitrationTable", VLARB_LOW << 16), ("VLArbitrationTable", VLARB_HIGH << 16)]
    out: list[tuple[str, int]] = []
    active = [p for p in range(1, node.nports + 1) if topo.active(node.guid, p)]
    for p in active:
        out.append(("P_KeyTable", p << 16))
        out.append(("SLtoVLMappingTable", (active[0] << 8) | p))
        out += [("VLArbitrationTable", (VLARB_LOW << 16) | p),
                ("VLArbitrationTable", (VLARB_HIGH << 16) | p)]
    top = max(lid for n in topo.nodes.values() for lid in n.lids.values())
    out += [("LinearForwardingTable", b) for b in range(top // LFT_BLOCK + 1)]
    out.append(("MulticastForwardingTable", 0))
    return out


def fields(topo: Topology, node: TNode, attr: str, mod: int, entered: int) -> dict:
    """The response's attribute fields (lists fill successive table entries)."""
    switch = node.kind == SWITCH
    if attr == "P_KeyTable":
        keys = pkeys(mod >> 16 if switch else entered)
        return dict(membership_type=[k >> 15 for k in keys], p_key_base=[k & 0x7FFF for k in keys])
    if attr == "SLtoVLMappingTable":
        in_port, out_port = ((mod >> 8) & 0xFF, mod & 0xFF) if switch else (0, entered)
        vls = [sl2vl(in_port, out_port, sl) for sl in range(16)]
        return dict(sl_to_vl_high=vls[0::2], sl_to_vl_low=vls[1::2])
    if attr == "VLArbitrationTable":
        entries = [vlarb(mod >> 16, i) for i in range(32)]
        return dict(vl=[e[0] for e in entries], weight=[e[1] for e in entries])
    if attr == "LinearForwardingTable":
        table = topo.lft(node.guid)
        base = mod * LFT_BLOCK
        return dict(port=[table.get(base + i, UNROUTED) for i in range(LFT_BLOCK)])
    if attr == "MulticastForwardingTable":
        return dict(port_mask=[mft_mask(topo, node)] + [0] * (MFT_BLOCK - 1))
    raise KeyError(attr)
