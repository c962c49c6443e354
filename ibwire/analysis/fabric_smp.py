"""Subnet management packets onto the fabric view: who answered, what it said, and
the links the directed routes prove.

Who answered a response:
* directed route: the node at the end of (origin, InitialPath[1..HopCount]) - the
  NodeInfo response for that same route names it (its NodeGUID), and its
  LocalPortNum is the port the SMP entered by (IBA 14.2.5.3);
* LID-routed: the port whose LID is the response's SLID (NodeInfo / PortInfo tell
  which node and port own a LID).

Routes are anchored where the capture sees them (`fabric_mads.route_origin`:
HopPointer and the InitialPath before the captured link). A link is
(node at route[:-1], egress port route[-1]) <-> (node at route, its
LocalPortNum): both ends must be known, and a port that two routes
would connect to different peers gets no link at all (the capture spans a change,
or two requesters share it) - it is reported instead of guessed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ibwire.analysis import fabric_attrs as fa
from ibwire.analysis.fabric_mads import SMP_DR, SMP_LID, Exchange, Mad
from ibwire.analysis.fabric_model import End, Fabric, Link, Node, SmSeen
from ibwire.mad.names import attribute_id, attribute_name

NODE_DESC, NODE_INFO, SWITCH_INFO, PORT_INFO, PKEY_TABLE, SL2VL, VLARB, LFT, MFT, SM_INFO = (
    attribute_id(SMP_LID, name) for name in (
        "NodeDescription", "NodeInfo", "SwitchInfo", "PortInfo", "P_KeyTable",
        "SLtoVLMappingTable", "VLArbitrationTable", "LinearForwardingTable",
        "MulticastForwardingTable", "SMInfo"))
DR_STATUS_MASK = 0x7FFF            # the D bit is not part of a DR SMP's status
Origin = tuple[Any, ...]
Evidence = tuple[End, End, float, int]          # link ends, time and frame that prove it


def ok(mad: Mad) -> bool:
    status = mad.status & DR_STATUS_MASK if mad.directed else mad.status
    return mad.is_response and status == 0


class SmpView:
    """Two passes: identities first (routes and LIDs to GUIDs), then attributes."""

    def __init__(self, fab: Fabric) -> None:
        self.fab = fab
        self.at_route: dict[tuple[Origin, tuple[int, ...]], set[int]] = defaultdict(set)
        self.entered: dict[tuple[Origin, tuple[int, ...]], set[int]] = defaultdict(set)
        self.route_seen: dict[tuple[Origin, tuple[int, ...]], list[tuple[float, int]]] = \
            defaultdict(list)
        self.lid_nodeinfo: dict[int, set[tuple[int, int]]] = defaultdict(set)

    # -- pass 1: identities -------------------------------------------------------
    def identify(self, exchanges: list[Exchange]) -> None:
        mismatched = 0
        for ex in exchanges:
            mad = ex.response
            if mad is None or mad.mgmt_class not in (SMP_LID, SMP_DR) or not ok(mad):
                continue
            if mad.attribute != NODE_INFO:
                continue
            v = mad.values("nodeinfo")
            if v is None:
                continue
            node = fa.apply_node_info(self.fab, v)
            if mad.directed:
                origin = mad.origin
                if origin is None or mad.path is None:
                    continue
                key = (origin, mad.path)
                self.at_route[key].add(node.guid)
                self.entered[key].add(v["local_port_num"])
                self.route_seen[key].append((mad.ts, mad.frame))
                # ReturnPath[HopCount] is the same ingress port, written by the node
                # itself (C14-9:3); some SMP sources leave ReturnPath unfilled, so a
                # mismatch is reported, and LocalPortNum used.
                if mad.return_path and mad.return_path[-1] != v["local_port_num"]:
                    mismatched += 1
            elif mad.slid is not None:
                num = 0 if node.is_switch else v["local_port_num"]
                self.lid_nodeinfo[mad.slid].add((node.guid, num))
        if mismatched:
            self.fab.missing.append(f"{mismatched} DR NodeInfo response(s) whose ReturnPath "
                                    "does not end in NodeInfo.LocalPortNum (LocalPortNum used)")
        for lid, owners in self.lid_nodeinfo.items():
            if len(owners) == 1:
                guid, num = next(iter(owners))
                self.fab.lids.setdefault(lid, End(guid, num))
            else:
                self.fab.missing.append(f"LID {lid} answered as {len(owners)} different "
                                        "ports (LIDs reassigned during the capture?)")
        for (origin, path), guids in self.at_route.items():
            if len(guids) > 1:
                self.fab.missing.append(
                    f"directed route {_route_text(origin, path)} reached {len(guids)} "
                    "different nodes (the fabric changed or several requesters); no "
                    "link is drawn from it")
            else:
                self.fab.node(next(iter(guids))).routes.append((origin, path))

    def node_at(self, origin: Origin | None, path: tuple[int, ...] | None) -> Node | None:
        if origin is None or path is None:
            return None
        guids = self.at_route.get((origin, path))
        if not guids or len(guids) != 1:
            return None
        return self.fab.nodes[next(iter(guids))]

    def responder(self, mad: Mad) -> tuple[Node | None, int | None]:
        """The node that answered and the port the SMP entered it by."""
        if mad.directed:
            origin = mad.origin
            node = self.node_at(origin, mad.path)
            ports = self.entered.get((origin, mad.path)) if origin is not None else None
            port = next(iter(ports)) if ports and len(ports) == 1 else None
            return node, port
        end = self.fab.lids.get(mad.slid) if mad.slid is not None else None
        if end is None:
            return None, None
        return self.fab.nodes.get(end.guid), end.port

    # -- pass 2: attributes ---------------------------------------------------------
    def apply(self, exchanges: list[Exchange]) -> None:
        unresolved: dict[str, int] = defaultdict(int)
        for ex in exchanges:
            mad = ex.response
            if mad is None or mad.mgmt_class not in (SMP_LID, SMP_DR) or not ok(mad):
                continue
            node, arrival = self.responder(mad)
            if mad.attribute == SM_INFO:
                self._sminfo(mad, node)
                continue
            if node is None:
                unresolved[_attr_name(mad.attribute)] += 1
                continue
            self._attribute(mad, node, arrival)
        for name, n in sorted(unresolved.items()):
            self.fab.missing.append(f"{n} {name} response(s) from a node the capture does "
                                    "not identify (no NodeInfo for its route or LID)")

    def _attribute(self, mad: Mad, node: Node, arrival: int | None) -> None:
        attr = mad.attribute
        if attr == NODE_DESC:
            v = mad.values("nodedescription")
            if v is not None:
                node.description = fa.description(v["node_string"])
        elif attr == SWITCH_INFO:
            node.switch_info = mad.values("switchinfo")
        elif attr == PORT_INFO:
            v = mad.values("portinfo")
            if v is None:
                return
            num = mad.modifier & 0xFF
            if num == 0 and not node.is_switch:
                num = v["local_port_num"]     # a CA answers for the port it was asked on
            fa.apply_port_info(self.fab, node, num, v, mad.frame, mad.ts)
        elif attr == PKEY_TABLE:
            fa.apply_pkeys(node, mad.modifier, _entries(mad, "pkey_entry"), arrival)
        elif attr == SL2VL:
            fa.apply_sl2vl(node, mad.modifier, _entries(mad, "sl2vl_entry"), arrival)
        elif attr == VLARB:
            fa.apply_vlarb(node, mad.modifier, _entries(mad, "vlarb_entry"), arrival)
        elif attr == LFT:
            fa.apply_lft(node, mad.modifier, _entries(mad, "lft_entry"))
        elif attr == MFT:
            fa.apply_mft(node, mad.modifier, _entries(mad, "mft_entry"))

    def _sminfo(self, mad: Mad, node: Node | None) -> None:
        v = mad.values("sminfo")
        if v is None:
            return
        lid = mad.slid if not mad.directed else (node.lid if node is not None else None)
        self.fab.sm.append(SmSeen(mad.ts, mad.frame, v["guid"], lid, v["priority"],
                                  v["sm_state"], v["act_count"], "SMInfo"))

    # -- links ------------------------------------------------------------------------
    def links(self) -> list[Evidence]:
        """(egress end, ingress end, time, frame) for every route whose ends are known."""
        out = []
        for (origin, path), guids in self.at_route.items():
            if not path or len(guids) != 1:
                continue
            near = self.node_at(origin, path[:-1])
            entered = self.entered[(origin, path)]
            if near is None or len(entered) != 1 or path[-1] == 0:
                continue
            far_port = next(iter(entered))
            ts, frame = max(self.route_seen[(origin, path)])
            out.append((End(near.guid, path[-1]), End(next(iter(guids)), far_port), ts, frame))
        return out


def add_links(fab: Fabric, found: list[Evidence]) -> None:
    """Links from every source of evidence, keeping only ends with one peer."""
    peers: dict[End, set[End]] = defaultdict(set)
    frames: dict[frozenset, list[tuple[float, int]]] = defaultdict(list)
    for a, b, ts, frame in found:
        if a == b:
            continue
        peers[a].add(b)
        peers[b].add(a)
        frames[frozenset((a, b))].append((ts, frame))
    bad = {end for end, ps in peers.items() if len(ps) > 1}
    for end in sorted(bad):
        fab.missing.append(f"port {end.port} of 0x{end.guid:016x} appears linked to "
                           f"{len(peers[end])} different ports; no link is drawn for it")
    for pair_ends, fr in frames.items():
        a, b = sorted(pair_ends)
        if a in bad or b in bad:
            continue
        fab.links.append(Link(a, b, sorted({f for _, f in fr}), max(t for t, _ in fr)))
    fab.links.sort(key=lambda lk: (lk.a, lk.b))


def missing_responses(fab: Fabric, exchanges: list[Exchange]) -> None:
    """Requests whose answer the capture lacks, and routes seen only one way."""
    unanswered: dict[str, int] = defaultdict(int)
    orphans: dict[str, int] = defaultdict(int)
    for ex in exchanges:
        mad = ex.any
        if mad.mgmt_class not in (SMP_LID, SMP_DR):
            continue
        if ex.response is None:
            unanswered[_attr_name(mad.attribute)] += 1
        elif ex.request is None:
            orphans[_attr_name(mad.attribute)] += 1
    for name, n in sorted(unanswered.items()):
        fab.missing.append(f"{n} SMP {name} request(s) without a response in the capture")
    for name, n in sorted(orphans.items()):
        fab.missing.append(f"{n} SMP {name} response(s) without their request (used as "
                           "they are: a response carries its route)")


def _entries(mad: Mad, layer: str) -> list[dict[str, Any]]:
    return [lay.values for lay in mad.all(layer)]


def _attr_name(attr: int) -> str:
    return attribute_name(SMP_LID, attr)


def _route_text(origin: Origin, path: tuple[int, ...]) -> str:
    ports = ",".join(str(p) for p in (0, *path))
    if origin[0] == "lid":
        return f"from LID {origin[2]}:{ports}"
    return ports if origin[2] == 1 else f"{ports} (seen at hop {origin[2]})"
