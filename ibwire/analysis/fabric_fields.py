"""Per-packet fields resolved from the fabric view, as Wireshark resolves names:
the node (GUID, NodeDescription) and port behind a packet's source and
destination LID, and the node a directed-route SMP's route reaches.

The view is built from the whole capture first (two passes, like a name table
loaded before printing), optionally from other captures too (`fabric=`), so an
SMP sweep elsewhere names the LIDs of a data capture. `frame_values(path)` maps
frame number -> {field name: value}; fields without a value are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ibwire.analysis import fabric_names as fn
from ibwire.analysis.fabric import build_fabric
from ibwire.analysis.fabric_mads import assign_origins, pair, read_mads
from ibwire.analysis.fabric_model import Fabric
from ibwire.fields import REGISTRY, STRING, UINT8, UINT64
from ibwire.io import read

FIELDS = [
    ("ibwire.lid.src_node_guid", UINT64, "Source LID: node GUID (fabric view)", "hex"),
    ("ibwire.lid.src_node_description", STRING, "Source LID: NodeDescription (fabric view)",
     "dec"),
    ("ibwire.lid.src_port", UINT8, "Source LID: port number (fabric view)", "dec"),
    ("ibwire.lid.dst_node_guid", UINT64, "Destination LID: node GUID (fabric view)", "hex"),
    ("ibwire.lid.dst_node_description", STRING,
     "Destination LID: NodeDescription (fabric view)", "dec"),
    ("ibwire.lid.dst_port", UINT8, "Destination LID: port number (fabric view)", "dec"),
    ("ibwire.dr.node_guid", UINT64, "Directed route: GUID of the node it reaches", "hex"),
    ("ibwire.dr.node_description", STRING,
     "Directed route: NodeDescription of the node it reaches", "dec"),
]
for _name, _ft, _label, _base in FIELDS:
    REGISTRY.add(_name, _ft, _label, _base)
FIELD_NAMES = [f[0] for f in FIELDS]


def _lid_values(fab: Fabric, lid: int | None, side: str) -> dict[str, Any]:
    end = fab.lids.get(lid) if lid is not None else None
    if end is None:
        return {}
    node = fab.nodes.get(end.guid)
    out: dict[str, Any] = {f"ibwire.lid.{side}_node_guid": end.guid,
                           f"ibwire.lid.{side}_port": end.port}
    if node is not None and node.description is not None:
        out[f"ibwire.lid.{side}_node_description"] = node.description
    return out


def frame_values(path: str, fabric: Fabric | None = None,
                 also: Iterable[str] = ()) -> dict[int, dict[str, Any]]:
    """frame number (1-based) -> resolved fields for every frame of `path` that has
    any. The fabric view is `fabric`, or built from `path` plus the files `also`
    (a given `fabric` must have been built with `path` as its first file for the
    directed routes to resolve)."""
    fab = fabric if fabric is not None else build_fabric([path, *also])
    routes = {(origin, tuple(p)): guid for guid, node in fab.nodes.items()
              for origin, p in node.routes}
    out: dict[int, dict[str, Any]] = {}
    for n, pkt in enumerate(read(path), start=1):
        lrh = pkt.layer("lrh")
        if lrh is None:
            continue
        vals = {**_lid_values(fab, lrh.slid, "src"), **_lid_values(fab, lrh.dlid, "dst")}
        if vals:
            out[n] = vals
    mads = list(read_mads([path]))
    assign_origins(pair(mads))
    for mad in mads:
        if not mad.directed or mad.path is None:
            continue
        guid = routes.get((mad.origin, mad.path))
        if guid is None:
            continue
        vals = out.setdefault(mad.frame, {})
        vals["ibwire.dr.node_guid"] = guid
        desc = fab.nodes[guid].description
        if desc is not None:
            vals["ibwire.dr.node_description"] = desc
    return out


def show(value: Any, name: str) -> str:
    """A value as `-T fields` prints it (GUIDs in hex like Wireshark's EUI-64s)."""
    if name.endswith("_guid"):
        return fn.guid_text(value) or ""
    return str(value)
