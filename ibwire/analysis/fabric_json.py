"""The fabric view as plain data (the `-T json` output; schema in
docs/schemas/fabric.schema.json). GUIDs are "0x" + 16 hex digits; widths and
speeds are spelled as infiniband-diags prints them ("4X", "25.78125 Gbps")."""

from __future__ import annotations

from typing import Any

from ibwire.analysis import fabric_names as fn
from ibwire.analysis.fabric_model import Fabric, Link, Node, Port
from ibwire.analysis.fabric_perf import flags, series
from ibwire.mad.names import MTUS, SM_STATES, VL_CAPS

SCHEMA_VERSION = 1


def port_lid(node: Node, port: Port) -> int | None:
    """A switch's external ports answer at the switch's LID (infiniband-diags prints
    that one for them too)."""
    if node.is_switch:
        return node.lid
    return port.lid


def port_dict(node: Node, port: Port) -> dict[str, Any]:
    guid = port.guid
    if guid is None and node.is_switch and 0 in node.ports:
        guid = node.ports[0].guid
    ext = node.ext_capable(port.num)
    out: dict[str, Any] = {
        "num": port.num, "lid": port_lid(node, port), "lmc": port.lmc,
        "state": fn.state_text(port.state), "phys_state": fn.phys_text(port.phys_state),
        "width": port.width(), "speed": port.speed(ext), "guid": fn.guid_text(guid),
    }
    if port.state is not None and not port.down:
        out.update({
            "width_enabled": fn.bits_text(port.width_enabled, fn.WIDTHS),
            "width_supported": fn.bits_text(port.width_supported, fn.WIDTHS),
            "speed_enabled": fn.bits_text(port.speed_enabled, fn.SPEEDS),
            "speed_supported": fn.bits_text(port.speed_supported, fn.SPEEDS),
            "ext_speed_enabled": fn.bits_text(port.ext_enabled, fn.EXT_SPEEDS) if ext else None,
            "ext_speed_supported": fn.bits_text(port.ext_supported, fn.EXT_SPEEDS)
            if ext else None,
            "mtu_cap": MTUS.get(port.mtu_cap or 0), "neighbor_mtu": MTUS.get(
                port.neighbor_mtu or 0),
            "vl_cap": VL_CAPS.get(port.vl_cap or 0),
            "operational_vls": VL_CAPS.get(port.operational_vls or 0),
            "sm_lid": port.master_sm_lid,
        })
    if port.pkeys:
        out["pkeys"] = [f"0x{port.pkeys[i]:04x}" for i in sorted(port.pkeys)
                        if port.pkeys[i] & 0x7FFF]
    if port.sl2vl:
        out["sl2vl"] = {str(k): [v.get(sl) for sl in range(16)] for k, v in port.sl2vl.items()}
    if port.vlarb:
        out["vlarb"] = {k: [[vl, w] for vl, w in v if w] for k, v in port.vlarb.items()}
    out["frame"] = port.frame
    if len(port.history) > 1:
        out["history"] = [{"frame": f, "state": fn.state_text(st), "phys_state":
                           fn.phys_text(ph)} for f, st, ph in port.history]
    return out


def node_dict(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {
        "guid": fn.guid_text(node.guid),
        "type": fn.NODE_KINDS.get(node.type or 0),
        "description": node.description,
        "system_image_guid": fn.guid_text(node.system_image_guid),
        "num_ports": node.num_ports, "vendor_id": node.vendor_id,
        "device_id": node.device_id, "lid": node.lid,
        "ports": [port_dict(node, node.ports[n]) for n in sorted(node.ports)],
        "routes": sorted({",".join(str(p) for p in (0, *path)) for _, path in node.routes}),
    }
    if node.switch_info is not None:
        out["switch_info"] = {k: v for k, v in node.switch_info.items()
                              if not k.startswith("reserved")}
    if node.lft:
        out["lft"] = {str(lid): port for lid, port in sorted(node.lft.items()) if port != 0xFF}
    if node.mft:
        out["mft"] = {f"0x{mlid:04x}": f"0x{mask:04x}" for mlid, mask in sorted(
            node.mft.items()) if mask}
    return out


def link_ends(fab: Fabric, link: Link) -> tuple[Port | None, Node | None]:
    """The port whose PortInfo describes the link (either end that has one)."""
    for end in (link.a, link.b):
        node = fab.nodes.get(end.guid)
        if node is not None and end.port in node.ports and \
                node.ports[end.port].state is not None:
            return node.ports[end.port], node
    return None, None


def link_dict(fab: Fabric, link: Link) -> dict[str, Any]:
    port, node = link_ends(fab, link)
    ext = node.ext_capable(port.num) if node and port else True
    return {"a": {"guid": fn.guid_text(link.a.guid), "port": link.a.port},
            "b": {"guid": fn.guid_text(link.b.guid), "port": link.b.port},
            "width": port.width() if port else None,
            "speed": port.speed(ext) if port else None,
            "state": fn.state_text(port.state) if port else None,
            "frames": link.frames}


def sm_list(fab: Fabric) -> list[dict[str, Any]]:
    """Each subnet manager seen, with its state over time (changes only)."""
    by_guid: dict[Any, dict[str, Any]] = {}
    for s in sorted(fab.sm, key=lambda s: (s.ts, s.frame)):
        entry = by_guid.setdefault(s.guid, {"guid": fn.guid_text(s.guid), "lid": s.lid,
                                            "priority": s.priority, "history": []})
        entry["lid"] = s.lid or entry["lid"]
        entry["priority"] = s.priority
        state = SM_STATES.get(s.state or 0, str(s.state))
        hist = entry["history"]
        if not hist or hist[-1]["state"] != state:
            hist.append({"ts": s.ts, "frame": s.frame, "state": state,
                         "act_count": s.act_count, "from": s.how})
        entry["state"] = state
    # Ports name their master SM (PortInfo.MasterSMLID) even when no SMInfo was seen.
    known = {e["lid"] for e in by_guid.values()}
    told = sorted({p.master_sm_lid for n in fab.nodes.values() for p in n.ports.values()
                   if p.master_sm_lid} - known)
    for lid in told:
        end = fab.lids.get(lid)
        node = fab.nodes.get(end.guid) if end is not None else None
        port = node.ports.get(end.port) if node is not None and end is not None else None
        by_guid[("lid", lid)] = {"guid": fn.guid_text(port.guid if port else None),
                                 "lid": lid, "priority": None, "state": None, "history": [],
                                 "from": "PortInfo.MasterSMLID"}
    return list(by_guid.values())


def counters_list(fab: Fabric) -> list[dict[str, Any]]:
    out = []
    for (lid, port), reads in sorted(fab.counters.items(), key=lambda kv: (kv[0][0] or 0,
                                                                          kv[0][1])):
        owner = fab.owner(lid)
        out.append({"lid": lid, "port": port,
                    "node": fn.guid_text(owner.guid) if owner else None,
                    "description": owner.description if owner else None,
                    "reads": series(reads), "flags": flags(reads)})
    return out


def fabric_dict(fab: Fabric) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "mads": fab.mads,
        "nodes": [node_dict(fab.nodes[g]) for g in sorted(fab.nodes)],
        "links": [link_dict(fab, lk) for lk in fab.links],
        "sm": sm_list(fab),
        "counters": counters_list(fab),
        "traps": [{"ts": t.ts, "frame": t.frame, "number": t.number, "name": t.name,
                   "issuer_lid": t.issuer_lid, "producer": t.producer,
                   "details": t.details, "repressed": t.repressed} for t in fab.traps],
        "lids": {str(lid): {"guid": fn.guid_text(e.guid), "port": e.port}
                 for lid, e in sorted(fab.lids.items())},
        "missing": fab.missing,
        "errors": fab.errors,
    }
