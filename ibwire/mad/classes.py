"""Dispatch tables: management class -> body decoder, and (class, attribute ID) ->
the parts of the attribute, in one place so builders, tests and docs can list
what is supported.

| class | body after the 24-byte common header |
|---|---|
| 0x01 SMP LID-routed | M_Key, reserved, 64-byte attribute, reserved (`smp.py`) |
| 0x81 SMP directed-route | M_Key, DrSLID/DrDLID, attribute, InitialPath, ReturnPath |
| 0x03 SA | RMPP, SA header, 200 bytes of records (`sa.py`) |
| 0x04 PerfMgt | 40 reserved bytes, 192-byte attribute (`perf.py`) |
| 0x05 BaseboardMgt | B_Key, reserved, 192 bytes of data |
| 0x06 DevMgt | 40 reserved bytes, 192 bytes of data |
| 0x07 CM | 232-byte message (`cm.py`) |
| 0x21 CC | CC_Key, then log data (byte 32) or reserved + attribute (byte 64) (`cc.py`) |
| 0x30-0x4F vendor range 2 | RMPP, OUI, 216 bytes of data |
| anything else | 232 bytes of data |

Which class node a management class leads to is the protocol graph's "mad" edge
(`GRAPH.mad_class`); this module maps each class node to its body decoder (the
class header, attribute and data layouts), so `GRAPH.add("mad", code, node)`
teaches the decoder, the Scapy layers and the CLI a class at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ibwire.constants import MGMT_CLASS_CC, MGMT_CLASS_CM, MGMT_CLASS_SA
from ibwire.graph import GRAPH
from ibwire.mad import cc, cm, perf, sa, smp
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad.header import decode_bm, decode_dm, decode_opaque, decode_vendor2

BodyDecoder = Callable[[Ctx], None]

# Class node (the graph's "mad" edge) -> body decoder.
CLASS_DECODERS: dict[str, BodyDecoder] = {
    "mad_smp_lid": smp.decode_lid, "mad_smp_dr": smp.decode_dr, "mad_sa": sa.decode,
    "mad_perf": perf.decode, "mad_bm": decode_bm, "mad_dm": decode_dm, "mad_cm": cm.decode,
    "mad_cc": cc.decode, "mad_vendor_oui": decode_vendor2, "mad_data": decode_opaque,
}
SMP_NODES = frozenset({"mad_smp_lid", "mad_smp_dr"})

# Class version a class uses today (IBA 1.3+): the builders' default.
# Every other class: version 1 (`CLASS_VERSIONS.get(mgmt_class, 1)`).
CLASS_VERSIONS = {MGMT_CLASS_SA: 2, MGMT_CLASS_CM: 2, MGMT_CLASS_CC: 2}


def class_node(mgmt_class: int) -> str:
    """The graph's class node for a management class ("mad_smp_lid", "mad_sa", ...)."""
    return GRAPH.mad_class(mgmt_class)


def body_decoder(mgmt_class: int) -> BodyDecoder:
    return CLASS_DECODERS.get(class_node(mgmt_class), decode_opaque)


def _attributes(node: str) -> Mapping[int, Any]:
    """The decoded attributes (parts, or SA records) of a class node."""
    if node in SMP_NODES:
        return smp.SMP_ATTRIBUTES
    return {"mad_sa": sa.RECORDS, "mad_perf": perf.PERF_ATTRIBUTES, "mad_cm": cm.CM_MESSAGES,
            "mad_cc": cc.CC_ATTRIBUTES}.get(node, {})


def attribute_parts(mgmt_class: int, attribute_id: int) -> tuple[Part, ...] | None:
    """The parts decoding an attribute of a class, or None when kept as bytes."""
    node = class_node(mgmt_class)
    found = _attributes(node).get(attribute_id)
    if node == "mad_sa":
        return found.parts if found else None
    return found


def supported() -> list[tuple[int, int]]:
    """Every (class, attribute ID) with a decoded attribute, in the graph's class order."""
    return [(c, a) for c, node in GRAPH.edges["mad"].table.items() for a in _attributes(node)]
