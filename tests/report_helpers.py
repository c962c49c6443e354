"""Captures for the report tests that the bundled samples do not cover."""

from __future__ import annotations

from pathlib import Path

import ibwire
from ibwire.gen.mgmt_events import Script, events, polled_ports
from ibwire.gen.sweep import CA, fat_tree, sweep

LINKTYPE_INFINIBAND = 247


def fabric_capture(where: Path) -> Path:
    """A fat-tree sweep, then a performance manager polling: one port congested
    (PortXmitWait rises), one with a bad cable (symbol errors rise)."""
    topo = fat_tree()
    ports = polled_ports(topo)
    origin = next(g for g, n in topo.nodes.items() if n.kind == CA)
    script = Script(congested={ports[0]}, bad_cable={ports[1]},
                    sm_lid=topo.nodes[origin].lids[1])
    path = where / "fabric_events.pcap"
    ibwire.write(path, sweep(topo, origin) + events(topo, script),
                 linktype=LINKTYPE_INFINIBAND, step_ns=1_000_000)
    return path
