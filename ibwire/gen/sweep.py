"""Multi-node fabrics and the directed-route sweep a subnet manager (or
ibnetdiscover) makes of them, as captured at the sweeping port.

`Topology` holds switches and channel adapters, their LIDs and the cabled links
(ports without a cable are Down/Polling; `down` ports are cabled but Disabled).
`sweep(topo, origin, port)` walks it breadth first from a CA port the way
ibnetdiscover does: NodeInfo at every route, NodeDescription, SwitchInfo and
PortInfo of every port of a new node, then NodeInfo through each active port; a
node already known (reached by another route) is not explored again. Each SMP is
a real DR request and its GetResp (D bit, ReturnPath filled hop by hop, IBA
14.2.2), so the captures exercise the fabric view's route walk. The truth is the
topology itself: `topo.link_set()` and `topo.nodes`.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from ibwire.constants import MGMT_CLASS_SMP_DR
from ibwire.mad.build import build_mad, mad_packet, smp_get

SWITCH, CA = 2, 1
DR_CLASS = MGMT_CLASS_SMP_DR
ACTIVE, DOWN = 4, 1
LINKUP, POLLING, DISABLED = 5, 2, 3
WIDTH_4X, SPEED_10G, EXT_EDR = 2, 4, 2
CAP_EXT_SPEEDS = 1 << 14
VENDOR = 0x02C9


@dataclass
class TNode:
    guid: int
    kind: int
    nports: int
    desc: str
    lids: dict[int, int] = field(default_factory=dict)    # port (0 for a switch) -> LID

    def port_guid(self, port: int) -> int:
        return self.guid if self.kind == SWITCH else self.guid + port


@dataclass
class Topology:
    nodes: dict[int, TNode] = field(default_factory=dict)
    peer: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    down: set[tuple[int, int]] = field(default_factory=set)

    def add(self, kind: int, nports: int, desc: str) -> TNode:
        base = 0x0002C90200C00000 if kind == SWITCH else 0x0002C90300D00000
        guid = base + 0x10 * (len(self.nodes) + 1)
        node = TNode(guid, kind, nports, desc)
        self.nodes[guid] = node
        return node

    def cable(self, a: TNode, pa: int, b: TNode, pb: int) -> None:
        assert (a.guid, pa) not in self.peer and (b.guid, pb) not in self.peer
        self.peer[(a.guid, pa)] = (b.guid, pb)
        self.peer[(b.guid, pb)] = (a.guid, pa)

    def free_port(self, node: TNode) -> int:
        return next(p for p in range(node.nports, 0, -1) if (node.guid, p) not in self.peer)

    def active(self, guid: int, port: int) -> bool:
        return (guid, port) in self.peer and (guid, port) not in self.down and \
            self.peer[(guid, port)] not in self.down

    def link_set(self) -> set[frozenset]:
        return {frozenset({a, b}) for a, b in self.peer.items()
                if self.active(*a)}

    def first_hops(self, sw: int) -> dict[int, int]:
        """Switch GUID -> the port `sw` leaves by towards it (shortest path over active
        switch-to-switch links, lowest port first; 0 for `sw` itself)."""
        first = {sw: 0}
        queue = deque([sw])
        while queue:
            here = queue.popleft()
            for p in range(1, self.nodes[here].nports + 1):
                if self.active(here, p):
                    nxt = self.peer[(here, p)][0]
                    if nxt not in first and self.nodes[nxt].kind == SWITCH:
                        first[nxt] = first[here] or p
                        queue.append(nxt)
        return first

    def lft(self, sw: int) -> dict[int, int]:
        """The linear forwarding table a shortest-path SM gives switch `sw`."""
        hops = self.first_hops(sw)
        table = {}
        for node in self.nodes.values():
            for port, lid in node.lids.items():
                if node.kind == SWITCH:
                    target, last = node.guid, 0
                elif self.active(node.guid, port):
                    target, last = self.peer[(node.guid, port)]
                else:
                    continue
                if target in hops:
                    table[lid] = hops[target] if target != sw else last
        return table

    def assign_lids(self) -> None:
        lid = 1
        for node in self.nodes.values():
            for port in ([0] if node.kind == SWITCH else range(1, node.nports + 1)):
                node.lids[port] = lid
                lid += 1


def fat_tree(spines: int = 2, leaves: int = 3, hosts: int = 2, nports: int = 8) -> Topology:
    """A two-level tree; leaf ports past the hosts and spines stay uncabled (Down)."""
    t = Topology()
    sp = [t.add(SWITCH, nports, f"spine{i + 1}") for i in range(spines)]
    lf = [t.add(SWITCH, nports, f"leaf{i + 1}") for i in range(leaves)]
    for li, leaf in enumerate(lf):
        for si, spine in enumerate(sp):
            t.cable(leaf, nports - si, spine, li + 1)
        for h in range(hosts):
            ca = t.add(CA, 1, f"host{li + 1}-{h + 1} HCA-1")
            t.cable(ca, 1, leaf, h + 1)
    t.assign_lids()
    return t


def ring(switches: int = 4, dual_hosts: int = 2, seed: int = 0) -> Topology:
    """Switches in a ring with a double cable between the first two (parallel links);
    dual-ported CAs cabled to two neighbouring switches, so nodes are reached by
    several routes; one cabled port Disabled."""
    rng = random.Random(seed)
    t = Topology()
    sw = [t.add(SWITCH, 8, f"sw{i + 1}") for i in range(switches)]
    for i, s in enumerate(sw):
        t.cable(s, 1, sw[(i + 1) % switches], 2)
    t.cable(sw[0], 3, sw[1], 3)
    single = t.add(CA, 1, "sm-host HCA-1")
    t.cable(single, 1, sw[0], 4)
    for h in range(dual_hosts):
        ca = t.add(CA, 2, f"dual{h + 1} HCA-1")
        i = rng.randrange(switches)
        t.cable(ca, 1, sw[i], t.free_port(sw[i]))
        t.cable(ca, 2, sw[(i + 1) % switches], t.free_port(sw[(i + 1) % switches]))
    t.down.add((sw[2].guid, 1))          # Disabled: the ring is open there
    t.assign_lids()
    return t


def _state(topo: Topology, guid: int, port: int) -> tuple[int, int]:
    if port == 0 or topo.active(guid, port):
        return ACTIVE, LINKUP
    return DOWN, DISABLED if (guid, port) in topo.down else POLLING


def _walk(topo: Topology, origin: int, path: tuple[int, ...]) -> tuple[int, list[int]] | None:
    """The node a directed route reaches and the ingress port at each hop."""
    here, ins = origin, []
    for egress in path:
        if not topo.active(here, egress):
            return None
        here, ingress = topo.peer[(here, egress)]
        ins.append(ingress)
    return here, ins


def _attr(topo: Topology, node: TNode, attr: str, mod: int, entered: int, sm_lid: int
          ) -> dict:
    if attr == "NodeInfo":
        port = 0 if node.kind == SWITCH else entered
        return dict(node_type=node.kind, num_ports=node.nports, system_image_guid=node.guid,
                    node_guid=node.guid, port_guid=node.port_guid(port), partition_cap=8,
                    device_id=0xC738 if node.kind == SWITCH else 0x1003, revision=1,
                    local_port_num=entered, vendor_id=VENDOR)
    if attr == "NodeDescription":
        return dict(node_string=node.desc.encode().ljust(64, b"\0"))
    if attr in TABLE_ATTRS:
        return table_fields(topo, node, attr, mod, entered)
    if attr == "SwitchInfo":
        return dict(linear_fdb_cap=0xC000, linear_fdb_top=len(topo.nodes) * 2,
                    default_port=0)
    port = mod if node.kind == SWITCH else (mod or entered)
    state, phys = _state(topo, node.guid, port)
    lid = node.lids.get(0 if node.kind == SWITCH else port, 0)
    return dict(lid=lid, local_port_num=entered, port_state=state, port_physical_state=phys,
                link_width_active=WIDTH_4X, link_width_enabled=WIDTH_4X,
                link_width_supported=3, link_speed_active=SPEED_10G,
                link_speed_enabled=7, link_speed_supported=7,
                link_speed_ext_active=EXT_EDR, link_speed_ext_supported=3,
                link_speed_ext_enabled=3, capability_mask=CAP_EXT_SPEEDS, mtu_cap=5,
                neighbor_mtu=5, vl_cap=4, operational_vls=4, master_sm_lid=sm_lid)


class Sweeper:
    def __init__(self, topo: Topology, origin: int, include_local: bool, qos: bool,
                 observe: tuple[int, int] | None = None) -> None:
        self.topo, self.origin, self.include_local, self.qos = topo, origin, include_local, qos
        self.observe = observe
        self.tid = 0x0001_0000_0000_1000
        self.packets: list[bytes] = []

    def seen_at(self, path: tuple[int, ...]) -> int | None:
        """The HopPointer with which the capture sees this route's SMPs (both ways,
        IBA C14-9/C14-13: j on the route's j-th link), or None if they pass elsewhere.
        Without `observe` the capture is at the sweeping port (hop-0 SMPs only with
        `include_local`)."""
        if self.observe is None:
            if not path:
                return 0 if self.include_local else None
            return 1
        here = self.origin
        link = {self.observe, self.topo.peer.get(self.observe)}
        for j, egress in enumerate(path, start=1):
            if (here, egress) in link:
                return j
            here = self.topo.peer[(here, egress)][0]
        return None

    def smp(self, attr: str, path: tuple[int, ...], mod: int = 0) -> int | None:
        """One DR Get and its response; returns the ingress port of the final node."""
        self.tid += 1
        hops = len(path)
        hp = self.seen_at(path) if _walk(self.topo, self.origin, path) is not None else None
        req = smp_get(attr, dr_path=[0, *path], attribute_modifier=mod,
                      transaction_id=self.tid, hop_pointer=hp or 0)
        if hp is not None:
            self.packets.append(mad_packet(req))
        walk = _walk(self.topo, self.origin, path)
        if walk is None:
            return None
        guid, ins = walk
        node = self.topo.nodes[guid]
        entered = ins[-1] if ins else self.sm_port
        resp = build_mad(DR_CLASS, "GetResp", attr, attribute_modifier=mod,
                         transaction_id=self.tid,
                         header={"status": 1 << 15, "class_specific": ((hp or 0) << 8) | hops},
                         dr_slid=0xFFFF, dr_dlid=0xFFFF, initial_path=bytes([0, *path]),
                         return_path=bytes([0, *ins]),
                         **_attr(self.topo, node, attr, mod, entered,
                                 self.topo.nodes[self.origin].lids.get(self.sm_port, 0)))
        if hp is not None:
            self.packets.append(mad_packet(resp))
        return entered

    def run(self, sm_port: int) -> list[bytes]:
        self.sm_port = sm_port
        topo = self.topo
        known: set[int] = set()
        queue: deque[tuple[int, ...]] = deque([()])
        self.smp("NodeInfo", ())
        known.add(self.origin)
        while queue:
            path = queue.popleft()
            guid, _ = _walk(topo, self.origin, path)  # type: ignore[misc]
            node = topo.nodes[guid]
            entered = self.smp("NodeDescription", path)
            if node.kind == SWITCH:
                self.smp("SwitchInfo", path)
                ports = list(range(1, node.nports + 1))
                for p in range(node.nports + 1):
                    self.smp("PortInfo", path, p)
            else:
                ports = [sm_port] if not path else []
                self.smp("PortInfo", path, entered or 0)
            if self.qos:
                from ibwire.gen.sweep_tables import queries
                for attr, mod in queries(topo, node, entered or 0):
                    self.smp(attr, path, mod)
            for p in ports:
                if not topo.active(guid, p):
                    continue
                nxt = path + (p,)
                entered = self.smp("NodeInfo", nxt)
                peer = topo.peer[(guid, p)][0]
                if peer in known and topo.nodes[peer].kind == CA:
                    self.smp("PortInfo", nxt, entered or 0)   # another port of a known CA
                elif peer not in known:
                    known.add(peer)
                    queue.append(nxt)
        return self.packets


def sweep(topo: Topology, origin: int, port: int = 1, include_local: bool = True,
          qos: bool = False, observe: tuple[int, int] | None = None) -> list[bytes]:
    """The native packets (LRH ... VCRC) of a DR sweep from CA `origin`'s `port`, as
    captured at that port - or, with `observe=(GUID, port)`, on that cable elsewhere
    in the fabric (only the SMPs crossing it, with the HopPointer they carry there).
    `include_local` keeps the hop-count-0 SMPs a real port would not put on the wire;
    `qos` also reads every node's tables (see `sweep_tables`)."""
    return Sweeper(topo, origin, include_local, qos, observe).run(port)


def table_fields(topo: Topology, node: TNode, attr: str, mod: int, entered: int) -> dict:
    from ibwire.gen.sweep_tables import fields
    return fields(topo, node, attr, mod, entered)


TABLE_ATTRS = ("P_KeyTable", "SLtoVLMappingTable", "VLArbitrationTable",
               "LinearForwardingTable", "MulticastForwardingTable")
