"""The fabric view: nodes, ports, links, subnet managers, forwarding tables, port
counter reads and traps, as reconstructed from management traffic.

Every fact remembers the frame it came from, so a report can say why it holds.
Nothing is guessed: a value that was not on the wire stays None, and what could
not be known is listed in `Fabric.missing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ibwire.analysis import fabric_names as fn


@dataclass
class Port:
    num: int
    guid: int | None = None
    lid: int | None = None
    lmc: int | None = None
    state: int | None = None
    phys_state: int | None = None
    width_active: int | None = None
    width_enabled: int | None = None
    width_supported: int | None = None
    speed_active: int | None = None
    speed_enabled: int | None = None
    speed_supported: int | None = None
    ext_active: int | None = None
    ext_enabled: int | None = None
    ext_supported: int | None = None
    ext2_active: int | None = None
    capability_mask: int | None = None
    mtu_cap: int | None = None
    neighbor_mtu: int | None = None
    vl_cap: int | None = None
    operational_vls: int | None = None
    master_sm_lid: int | None = None
    pkeys: dict[int, int] = field(default_factory=dict)        # index -> P_Key
    sl2vl: dict[int, dict[int, int]] = field(default_factory=dict)  # in port -> {SL: VL}
    vlarb: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # table -> [(VL, w)]
    frame: int | None = None                                    # last PortInfo
    ts: float | None = None                                     # ... and its time
    history: list[tuple[int, int, int]] = field(default_factory=list)  # (frame, state, phys)

    @property
    def down(self) -> bool:
        return self.state == fn.PORT_DOWN

    def width(self) -> str | None:
        return None if self.down else fn.width_text(self.width_active)

    def speed(self, ext_capable: bool = True) -> str | None:
        if self.down:
            return None
        ext = self.ext_active if ext_capable else 0
        return fn.speed_text(self.speed_active, ext, self.ext2_active if ext_capable else 0)


@dataclass
class Node:
    guid: int
    type: int | None = None
    description: str | None = None
    system_image_guid: int | None = None
    num_ports: int | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    revision: int | None = None
    partition_cap: int | None = None
    ports: dict[int, Port] = field(default_factory=dict)
    switch_info: dict[str, Any] | None = None
    lft: dict[int, int] = field(default_factory=dict)          # DLID -> egress port
    mft: dict[int, int] = field(default_factory=dict)          # MLID -> port mask
    routes: list[tuple[Any, tuple[int, ...]]] = field(default_factory=list)  # DR routes

    def port(self, num: int) -> Port:
        p = self.ports.get(num)
        if p is None:
            p = self.ports[num] = Port(num)
        return p

    @property
    def is_switch(self) -> bool:
        return self.type == 2

    @property
    def lid(self) -> int | None:
        """A switch's LID is its port 0's; a CA's the first port with one."""
        nums = [0] if self.is_switch else sorted(self.ports)
        for n in nums:
            p = self.ports.get(n)
            if p is not None and p.lid:
                return p.lid
        return None

    def ext_capable(self, num: int) -> bool:
        """Extended speeds count when CapabilityMask says so (a switch's on port 0)."""
        p = self.ports.get(0 if self.is_switch else num)
        if p is None or p.capability_mask is None:
            return True
        return bool(p.capability_mask & fn.CAP_EXT_SPEEDS)


@dataclass(frozen=True, order=True)
class End:
    guid: int
    port: int


@dataclass
class Link:
    a: End
    b: End
    frames: list[int] = field(default_factory=list)
    ts: float = 0.0                     # time of the last evidence


@dataclass
class SmSeen:
    ts: float
    frame: int
    guid: int | None
    lid: int | None
    priority: int | None
    state: int | None
    act_count: int | None
    how: str


@dataclass
class CounterRead:
    ts: float
    frame: int
    lid: int | None
    port: int
    kind: str                          # PortCounters / PortCountersExtended / ...
    values: dict[str, int]
    reset: bool = False                # a Set with CounterSelect (counters cleared)
    reset_mask: int = 0
    selects: dict[str, int] = field(default_factory=dict)   # PortSelect, CounterSelect(2)


@dataclass
class Trap:
    ts: float
    frame: int
    number: int | None
    name: str
    issuer_lid: int | None
    producer: int | None
    details: dict[str, Any]
    repressed: bool = False


@dataclass
class Fabric:
    nodes: dict[int, Node] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    sm: list[SmSeen] = field(default_factory=list)
    counters: dict[tuple[int | None, int], list[CounterRead]] = field(default_factory=dict)
    traps: list[Trap] = field(default_factory=list)
    lids: dict[int, End] = field(default_factory=dict)   # LID -> (node GUID, port)
    pma_caps: dict[int | None, tuple[int, int]] = field(default_factory=dict)  # LID -> caps
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)      # captures not read to their end
    mads: int = 0

    def node(self, guid: int) -> Node:
        n = self.nodes.get(guid)
        if n is None:
            n = self.nodes[guid] = Node(guid)
        return n

    def peer(self, guid: int, port: int) -> End | None:
        me = End(guid, port)
        for link in self.links:
            if link.a == me:
                return link.b
            if link.b == me:
                return link.a
        return None

    def owner(self, lid: int | None) -> Node | None:
        if lid is None:
            return None
        end = self.lids.get(lid)
        return self.nodes.get(end.guid) if end is not None else None
