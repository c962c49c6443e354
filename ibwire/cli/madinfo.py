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

from ibwire.mad import names
from ibwire.packet import Packet

SMP_CLASSES = (0x01, 0x81)
SA_CLASS, PERF_CLASS, CM_CLASS = 0x03, 0x04, 0x07

CLASS_NAMES = {
    0x01: "SubnMgmt(LID)", 0x81: "SubnMgmt(DR)", 0x03: "SubnAdm", 0x04: "Perf",
    0x05: "BM", 0x06: "DevMgt", 0x07: "CM", 0x08: "SNMP", 0x21: "CC",
}
SMP_METHODS = {0x01: "SubnGet", 0x02: "SubnSet", 0x81: "SubnGetResp", 0x05: "SubnTrap",
               0x07: "SubnTrapResp"}
SA_METHODS = {0x01: "SubnAdmGet", 0x81: "SubnAdmGetResp", 0x02: "SubnAdmSet",
              0x06: "SubnAdmReport", 0x86: "SubnAdmReportResp", 0x12: "SubnAdmGetTable",
              0x92: "SubnAdmGetTableResp", 0x13: "SubnAdmGetTraceTable",
              0x14: "SubnAdmGetMulti", 0x94: "SubnAdmGetMultiResp", 0x15: "SubnAdmDelete",
              0x95: "SubnAdmDeleteResp"}
GENERIC_METHODS = {0x01: "Get", 0x02: "Set", 0x81: "GetResp", 0x03: "Send", 0x05: "Trap",
                   0x06: "Report", 0x86: "ReportResp", 0x07: "TrapRepress",
                   0x12: "GetTable", 0x92: "GetTableResp", 0x15: "Delete",
                   0x95: "DeleteResp"}
# Attribute names come from ibwire.mad.names; the Info column keeps Wireshark's
# spelling where it differs (so text lines up with tshark's).
SMP_ATTRS = {**names.SMP_ATTRS, 0x0017: "SLtoVLMapptingTable"}
SA_ATTRS = names.SA_ATTRS
CM_ATTRS = names.CM_ATTRS
PERF_ATTRS = names.PERF_ATTRS


class MadHeader:
    """The four MAD header values the CLI shows."""

    __slots__ = ("mgmt_class", "method", "attr", "status")

    def __init__(self, mgmt_class: int, method: int, attr: int, status: int) -> None:
        self.mgmt_class, self.method, self.attr, self.status = mgmt_class, method, attr, status


def _first(pkt: Packet, name: str) -> Any:
    vals = pkt.values_of(name)
    return vals[0] if vals else None


def mad_header(pkt: Packet) -> MadHeader | None:
    """The MAD header of a QP0/QP1 datagram: from the decoded fields when ibwire.mad
    decoded them, else from the first bytes of the payload (as Wireshark selects
    MADs: source or destination QP 0 or 1)."""
    cls = _first(pkt, "infiniband.mad.mgmtclass")
    if cls is not None:
        return MadHeader(cls, _first(pkt, "infiniband.mad.method") or 0,
                         _first(pkt, "infiniband.mad.attributeid") or 0,
                         _first(pkt, "infiniband.mad.status") or 0)
    bth = pkt.layer("bth")
    if bth is None:
        return None
    deth = pkt.layer("deth")
    qps = {bth.values["destqp"]} | ({deth.values["srcqp"]} if deth is not None else set())
    if not qps & {0, 1}:
        return None
    pay = pkt.payload
    if len(pay) < 24:
        return None
    return MadHeader(pay[1], pay[3], int.from_bytes(pay[16:18], "big"),
                     int.from_bytes(pay[4:6], "big"))


def _attr(table: dict[int, str], attr: int) -> str:
    return table.get(attr, f"0x{attr:04x}")


def mad_info(mad: MadHeader) -> tuple[str, bool]:
    """(text, replaces_transport_text) for the Info column."""
    cls, method, attr = mad.mgmt_class, mad.method, mad.attr
    if cls in SMP_CLASSES:
        return f"{SMP_METHODS.get(method, f'Method 0x{method:02x}')}({_attr(SMP_ATTRS, attr)})", \
            False
    if cls == SA_CLASS:
        return f"{SA_METHODS.get(method, f'Method 0x{method:02x}')}({_attr(SA_ATTRS, attr)})", \
            False
    if cls == CM_CLASS:
        return f"CM: {CM_ATTRS.get(attr, '(Unknown CM Attribute)')}", True
    if cls == PERF_CLASS:
        return f"PERF ({PERF_ATTRS.get(attr, 'Unknown Attribute')})", True
    return "", False


def mad_kind(mad: MadHeader) -> tuple[str, str, str]:
    """(class, method, attribute) names for histograms."""
    cls, method, attr = mad.mgmt_class, mad.method, mad.attr
    cname = CLASS_NAMES.get(cls, f"0x{cls:02x}")
    table = {0x03: SA_ATTRS, 0x04: PERF_ATTRS, 0x07: CM_ATTRS}.get(
        cls, SMP_ATTRS if cls in SMP_CLASSES else {})
    methods = SA_METHODS if cls == SA_CLASS else SMP_METHODS if cls in SMP_CLASSES \
        else GENERIC_METHODS
    mname = methods.get(method, f"0x{method:02x}")
    return f"0x{cls:02x} {cname}", f"0x{method:02x} {mname}", \
        f"0x{attr:04x} {table.get(attr, 'Unknown')}"
