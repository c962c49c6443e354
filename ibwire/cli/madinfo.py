"""MAD names for the Info column and the `ib,mad` histogram.

The Info text follows Wireshark 4.0 (what tshark prints for the same packets):
SMPs and SA MADs append `SubnGet(NodeInfo)` / `SubnAdmGetTable(PathRecord)` to the
transport text; CM and PerfMgt replace it (`CM: ConnectRequest`,
`PERF (PortCounters)`). Where Wireshark prints garbage for an attribute it does
not know (`SubnGet(bManagement Attribute!)` for 0xFF90) we print the attribute's
name or number instead.
"""

from __future__ import annotations

from typing import Any

from ibwire.constants import MGMT_CLASS_CM
from ibwire.mad import names
from ibwire.mad.classes import SMP_NODES, class_node
from ibwire.mad.dispatch import carries_mad
from ibwire.mad.header import MAD_HEADER
from ibwire.packet import Packet

# Wireshark's spellings, where they differ from `ibwire.mad.names` (the `ib,mad`
# histogram and the Info column line up with tshark's text).
_CLASS_SPELLINGS = {"mad_smp_lid": "SubnMgmt(LID)", "mad_smp_dr": "SubnMgmt(DR)",
                    "mad_perf": "Perf", "mad_bm": "BM", "mad_cm": "CM", "mad_cc": "CC"}
_SAME_SPELLING = frozenset({"SubnAdm", "DevMgt", "SNMP"})   # Wireshark's and ours
CM_CLASS = MGMT_CLASS_CM
_METHOD_SPELLINGS = {0x07: "TrapResp"}
# The methods Wireshark names for SMPs and SA MADs (`Subn` / `SubnAdm` + the name).
_SMP_METHODS = (0x01, 0x02, 0x81, 0x05, 0x07)
_SA_METHODS = (0x01, 0x81, 0x02, 0x06, 0x86, 0x12, 0x92, 0x13, 0x14, 0x94, 0x15, 0x95)
_GENERIC_METHODS = (0x01, 0x02, 0x81, 0x03, 0x05, 0x06, 0x86, 0x07, 0x12, 0x92, 0x15, 0x95)


def _methods(prefix: str, codes: tuple[int, ...]) -> dict[int, str]:
    return {m: prefix + (_METHOD_SPELLINGS.get(m, names.METHOD_NAMES[m]) if prefix
                         else names.METHOD_NAMES[m]) for m in codes}


SMP_METHODS = _methods("Subn", _SMP_METHODS)
SA_METHODS = _methods("SubnAdm", _SA_METHODS)
GENERIC_METHODS = _methods("", _GENERIC_METHODS)
# Attribute names come from ibwire.mad.names; the Info column keeps Wireshark's
# spelling where it differs (so text lines up with tshark's).
SMP_ATTRS = {**names.SMP_ATTRS, 0x0017: "SLtoVLMapptingTable"}
SA_ATTRS = names.SA_ATTRS
CM_ATTRS = names.CM_ATTRS
PERF_ATTRS = names.PERF_ATTRS
_ATTRS = {"mad_sa": SA_ATTRS, "mad_perf": PERF_ATTRS, "mad_cm": CM_ATTRS,
          **{n: SMP_ATTRS for n in SMP_NODES}}


def class_label(mgmt_class: int) -> str | None:
    """Wireshark's name of a management class (None where it has none)."""
    ours = names.CLASS_NAMES.get(mgmt_class)
    return _CLASS_SPELLINGS.get(class_node(mgmt_class),
                                ours if ours in _SAME_SPELLING else None)


class MadHeader:
    """The four MAD header values the CLI shows."""

    __slots__ = ("mgmt_class", "method", "attr", "status")

    def __init__(self, mgmt_class: int, method: int, attr: int, status: int) -> None:
        self.mgmt_class, self.method, self.attr, self.status = mgmt_class, method, attr, status


def _first(pkt: Packet, name: str) -> Any:
    vals = pkt.values_of(name)
    return vals[0] if vals else None


def mad_header(pkt: Packet) -> MadHeader | None:
    """The MAD header of a packet that carries a MAD (the protocol graph's rule): from
    the decoded fields when ibwire.mad decoded them, else read through the MAD header
    layout from the payload."""
    cls = _first(pkt, "infiniband.mad.mgmtclass")
    if cls is not None:
        return MadHeader(cls, _first(pkt, "infiniband.mad.method") or 0,
                         _first(pkt, "infiniband.mad.attributeid") or 0,
                         _first(pkt, "infiniband.mad.status") or 0)
    if not carries_mad(pkt):
        return None
    pay = pkt.payload
    if len(pay) < MAD_HEADER.size:
        return None
    hdr = MAD_HEADER.unpack(pay)
    return MadHeader(hdr["mgmt_class"], hdr["method"], hdr["attribute_id"], hdr["status"])


def _attr(table: dict[int, str], attr: int) -> str:
    return table.get(attr, f"0x{attr:04x}")


def mad_info(mad: MadHeader) -> tuple[str, bool]:
    """(text, replaces_transport_text) for the Info column."""
    method, attr = mad.method, mad.attr
    node = class_node(mad.mgmt_class)
    if node in SMP_NODES:
        return f"{SMP_METHODS.get(method, f'Method 0x{method:02x}')}({_attr(SMP_ATTRS, attr)})", \
            False
    if node == "mad_sa":
        return f"{SA_METHODS.get(method, f'Method 0x{method:02x}')}({_attr(SA_ATTRS, attr)})", \
            False
    if node == "mad_cm":
        return f"CM: {CM_ATTRS.get(attr, '(Unknown CM Attribute)')}", True
    if node == "mad_perf":
        return f"PERF ({PERF_ATTRS.get(attr, 'Unknown Attribute')})", True
    return "", False


def mad_kind(mad: MadHeader) -> tuple[str, str, str]:
    """(class, method, attribute) names for histograms."""
    cls, method, attr = mad.mgmt_class, mad.method, mad.attr
    node = class_node(cls)
    cname = class_label(cls) or f"0x{cls:02x}"
    table = _ATTRS.get(node, {})
    methods = SA_METHODS if node == "mad_sa" else SMP_METHODS if node in SMP_NODES \
        else GENERIC_METHODS
    mname = methods.get(method, f"0x{method:02x}")
    return f"0x{cls:02x} {cname}", f"0x{method:02x} {mname}", \
        f"0x{attr:04x} {table.get(attr, 'Unknown')}"
