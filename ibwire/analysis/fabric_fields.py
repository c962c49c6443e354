"""Per-packet fields resolved from the fabric view, as Wireshark resolves names:
the node (GUID, NodeDescription) and port behind a packet's source and
destination LID, and the node a directed-route SMP's route reaches.

The view is built from the whole capture first (two passes, like a name table
loaded before printing), optionally from other captures too (`fabric=`), so an
SMP sweep elsewhere names the LIDs of a data capture. `Resolver(fabric)(pkt)` gives
one decoded packet's fields; `iter_frame_values(path)` / `frame_values(path)` give
frame number -> {field name: value}; fields without a value are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ibwire.fields import REGISTRY, STRING, UINT8, UINT64

if TYPE_CHECKING:
    from ibwire.analysis.fabric_model import Fabric
    from ibwire.packet import Packet

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
# The registry imports this module (`FIELD_MODULES`); the fabric view loads on use.
for _name, _ft, _label, _base in FIELDS:
    REGISTRY.add(_name, _ft, _label, _base)
FIELD_NAMES = [f[0] for f in FIELDS]


class Resolver:
    """Per-packet name resolution from a fabric view: `resolver(pkt)` -> {field: value}
    for a decoded packet (what a dump's analysis-field hook calls per frame)."""

    def __init__(self, fab: Fabric) -> None:
        self.fab = fab
        self.routes = {(origin, tuple(p)): guid for guid, node in fab.nodes.items()
                       for origin, p in node.routes}
        self.by_lid: dict[tuple[int, str], dict[str, Any]] = {}
        for lid, end in fab.lids.items():
            node = fab.nodes.get(end.guid)
            for side in ("src", "dst"):
                vals: dict[str, Any] = {f"ibwire.lid.{side}_node_guid": end.guid,
                                        f"ibwire.lid.{side}_port": end.port}
                if node is not None and node.description is not None:
                    vals[f"ibwire.lid.{side}_node_description"] = node.description
                self.by_lid[(lid, side)] = vals

    def __call__(self, pkt: Packet, frame: int = 0, source: int = 0) -> dict[str, Any]:
        from ibwire.analysis.fabric_mads import mad_of, route_origin

        out: dict[str, Any] = {}
        lrh = pkt.layer("lrh")
        if lrh is not None:
            out.update(self.by_lid.get((lrh.slid, "src"), {}))
            out.update(self.by_lid.get((lrh.dlid, "dst"), {}))
        mad = mad_of(pkt, frame, source)
        if mad is not None and mad.directed and mad.path is not None:
            # A DR SMP carries its own anchor (HopPointer, C14-9/C14-13).
            guid = self.routes.get((route_origin(mad), mad.path))
            if guid is not None:
                out["ibwire.dr.node_guid"] = guid
                desc = self.fab.nodes[guid].description
                if desc is not None:
                    out["ibwire.dr.node_description"] = desc
        return out


def iter_frame_values(path: str, fabric: Fabric | None = None, also: Iterable[str] = ()
                      ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(frame number, resolved fields) for every frame of `path` that has any; the
    view is `fabric`, or built from `path` plus the files `also` (`path` first, so
    that its directed routes resolve)."""
    from ibwire.analysis.fabric import build_fabric
    from ibwire.capture.packets import read

    resolve = Resolver(fabric if fabric is not None else build_fabric([path, *also]))
    for n, pkt in enumerate(read(path), start=1):
        vals = resolve(pkt, n)
        if vals:
            yield n, vals


def frame_values(path: str, fabric: Fabric | None = None,
                 also: Iterable[str] = ()) -> dict[int, dict[str, Any]]:
    """`iter_frame_values` as a dict: frame number (1-based) -> resolved fields."""
    return dict(iter_frame_values(path, fabric, also))


def show(value: Any, name: str) -> str:
    """A value as `-T fields` prints it (GUIDs in hex like Wireshark's EUI-64s)."""
    if name.endswith("_guid"):
        from ibwire.analysis import fabric_names as fn
        return fn.guid_text(value) or ""
    return str(value)
