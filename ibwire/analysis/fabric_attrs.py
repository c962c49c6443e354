"""SMP attribute values onto the fabric model (IBA 14.2.5): NodeInfo, NodeDescription,
SwitchInfo, PortInfo, P_KeyTable, SLtoVLMappingTable, VLArbitrationTable and the
forwarding tables. The same functions serve SMP responses and the SA records that
embed these attributes (NodeRecord, PortInfoRecord, ...)."""

from __future__ import annotations

from typing import Any

from ibwire.analysis.fabric_model import End, Fabric, Node, Port

PKEYS_PER_BLOCK, LFT_PER_BLOCK, MFT_PER_BLOCK = 32, 64, 32
MCAST_LID_BASE = 0xC000
PORTS_PER_MFT_POSITION = 16
SWITCH = 2
VLARB_TABLES = {1: "low", 2: "low", 3: "high", 4: "high"}   # AttributeModifier 31:16
VLARB_ENTRIES = 32


def description(raw: bytes | str) -> str:
    if isinstance(raw, str):
        return raw.rstrip("\0")
    return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "replace")


def apply_node_info(fab: Fabric, v: dict[str, Any]) -> Node:
    node = fab.node(v["node_guid"])
    node.type = v["node_type"]
    node.num_ports = v["num_ports"]
    node.system_image_guid = v["system_image_guid"]
    node.vendor_id, node.device_id = v["vendor_id"], v["device_id"]
    node.revision, node.partition_cap = v["revision"], v["partition_cap"]
    # PortGUID is the GUID of the port the SMP arrived by; a switch has one, on port 0.
    num = 0 if node.is_switch else v["local_port_num"]
    node.port(num).guid = v["port_guid"]
    return node


def apply_port_info(fab: Fabric, node: Node, num: int, v: dict[str, Any],
                    frame: int, ts: float) -> Port:
    p = node.port(num)
    p.frame, p.ts = frame, ts
    p.state, p.phys_state = v["port_state"], v["port_physical_state"]
    if not p.history or p.history[-1][1:] != (p.state, p.phys_state):
        p.history.append((frame, p.state, p.phys_state))
    p.capability_mask = v["capability_mask"]
    if p.down:
        # C14-24.2.1: a Down port's other components need not be valid.
        return p
    p.lid, p.lmc = v["lid"], v["lmc"]
    p.width_active, p.width_enabled = v["link_width_active"], v["link_width_enabled"]
    p.width_supported = v["link_width_supported"]
    p.speed_active, p.speed_enabled = v["link_speed_active"], v["link_speed_enabled"]
    p.speed_supported = v["link_speed_supported"]
    p.ext_active, p.ext_enabled = v["link_speed_ext_active"], v["link_speed_ext_enabled"]
    p.ext_supported = v["link_speed_ext_supported"]
    p.ext2_active = v["link_speed_ext_active2"]
    p.mtu_cap, p.neighbor_mtu = v["mtu_cap"], v["neighbor_mtu"]
    p.vl_cap, p.operational_vls = v["vl_cap"], v["operational_vls"]
    p.master_sm_lid = v["master_sm_lid"]
    if p.lid and (num == 0 or not node.is_switch):
        for lid in range(p.lid, p.lid + (1 << (p.lmc or 0))):
            fab.lids[lid] = End(node.guid, num)
    return p


def port_of_switch_or(node: Node, field: int, arrival: int | None) -> int | None:
    """Tables addressed by port in the AttributeModifier on switches; on a CA or
    router they belong to the port the SMP arrived by."""
    return field if node.is_switch else arrival


def apply_pkeys(node: Node, modifier: int, entries: list[dict[str, Any]],
                arrival: int | None) -> None:
    num = port_of_switch_or(node, modifier >> 16, arrival)
    if num is None:
        return
    block = modifier & 0xFFFF
    port = node.port(num)
    for i, e in enumerate(entries):
        port.pkeys[block * PKEYS_PER_BLOCK + i] = e["p_key"]


def apply_sl2vl(node: Node, modifier: int, entries: list[dict[str, Any]],
                arrival: int | None) -> None:
    # Switch: bits 15:8 input port, 7:0 output port; the table belongs to the output.
    out_port = port_of_switch_or(node, modifier & 0xFF, arrival)
    if out_port is None:
        return
    table = {}
    for i, e in enumerate(entries):
        table[2 * i], table[2 * i + 1] = e["sl_to_vl_high"], e["sl_to_vl_low"]
    node.port(out_port).sl2vl[(modifier >> 8) & 0xFF] = table


def apply_vlarb(node: Node, modifier: int, entries: list[dict[str, Any]],
                arrival: int | None) -> None:
    num = port_of_switch_or(node, modifier & 0xFFFF, arrival)
    which = modifier >> 16
    if num is None or which not in VLARB_TABLES:
        return
    name = VLARB_TABLES[which]
    table = node.port(num).vlarb.setdefault(name, [(0, 0)] * (2 * VLARB_ENTRIES))
    base = VLARB_ENTRIES if which in (2, 4) else 0
    for i, e in enumerate(entries):
        table[base + i] = (e["vl"], e["weight"])


def apply_lft(node: Node, block: int, entries: list[dict[str, Any]]) -> None:
    for i, e in enumerate(entries):
        node.lft[block * LFT_PER_BLOCK + i] = e["port"]


def apply_mft(node: Node, modifier: int, entries: list[dict[str, Any]]) -> None:
    position, block = modifier >> 28, modifier & 0x1FF
    shift = position * PORTS_PER_MFT_POSITION
    for i, e in enumerate(entries):
        mlid = MCAST_LID_BASE + block * MFT_PER_BLOCK + i
        mask = node.mft.get(mlid, 0) & ~(0xFFFF << shift)
        node.mft[mlid] = mask | (e["port_mask"] << shift)


def route(fab: Fabric, src_lid: int, dst_lid: int, limit: int = 64) -> list[End] | None:
    """The ports a packet from src_lid to dst_lid leaves by, following the switches'
    linear forwarding tables over the known links; None where the walk leaves what
    the capture showed (unknown table entry, unknown link) or loops."""
    start = fab.lids.get(src_lid)
    if start is None:
        return None
    hops: list[End] = []
    here = start
    node = fab.nodes.get(here.guid)
    if node is not None and not node.is_switch:
        hops.append(here)
        nxt = fab.peer(here.guid, here.port)
        if nxt is None:
            return None
        here = nxt
    for _ in range(limit):
        node = fab.nodes.get(here.guid)
        if node is None:
            return None
        if not node.is_switch:
            return hops if fab.lids.get(dst_lid) == here else None
        if fab.lids.get(dst_lid, End(-1, -1)).guid == node.guid:
            return hops
        out = node.lft.get(dst_lid)
        if out is None or out == 0xFF:
            return None
        hops.append(End(node.guid, out))
        nxt = fab.peer(node.guid, out)
        if nxt is None:
            return None
        here = nxt
    return None
