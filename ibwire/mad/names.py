"""Names of management classes, methods, status codes and attributes (IBA Vol. 1
§13.4, §14, §15, §16; Annex A10 for congestion control).

Attribute IDs only mean something together with the class (0x0011 is NodeInfo for
SMPs, NodeRecord for SA, PortSamplesResult for PerfMgt, MRA for CM), so attribute
names are kept per class family; `attribute_name(mgmt_class, attribute_id)` looks
them up.
"""

from __future__ import annotations

from ibwire.constants import MGMT_CLASS_SA, MGMT_CLASS_SMP_DR
from ibwire.graph import GRAPH

CLASS_NAMES: dict[int, str] = {
    0x01: "SubnMgmt (LID routed)", 0x81: "SubnMgmt (directed route)",
    0x03: "SubnAdm", 0x04: "PerfMgt", 0x05: "BaseboardMgt", 0x06: "DevMgt",
    0x07: "ComMgt", 0x08: "SNMP", 0x10: "DevAdm", 0x11: "BootMgt", 0x12: "BIS",
    0x21: "CongestionControl",
    **{c: "Vendor (range 1)" for c in range(0x09, 0x10)},
    **{c: "Vendor (range 2, OUI)" for c in range(0x30, 0x50)},
}

METHOD_NAMES: dict[int, str] = {
    0x01: "Get", 0x02: "Set", 0x81: "GetResp", 0x03: "Send", 0x05: "Trap",
    0x06: "Report", 0x86: "ReportResp", 0x07: "TrapRepress", 0x12: "GetTable",
    0x92: "GetTableResp", 0x13: "GetTraceTable", 0x93: "GetTraceTableResp",
    0x14: "GetMulti", 0x94: "GetMultiResp", 0x15: "Delete", 0x95: "DeleteResp",
}

# Bits 4-2 of the status word (IBA 13.4.7 Table 106).
INVALID_FIELD = {0: "none", 1: "bad base or class version", 2: "method not supported",
                 3: "method/attribute combination not supported",
                 7: "invalid attribute or attribute modifier value"}
SA_STATUS = {1: "no resources", 2: "request invalid", 3: "no records",
             4: "too many records", 5: "invalid GID", 6: "insufficient components",
             7: "request denied", 8: "priority suggested"}

RMPP_TYPES = {0: "not RMPP", 1: "DATA", 2: "ACK", 3: "STOP", 4: "ABORT"}
RMPP_STATUS = {0: "normal", 1: "resources exhausted", 118: "total time too long",
               119: "inconsistent Last and PayloadLength",
               120: "inconsistent First and SegmentNumber", 121: "bad RMPPType",
               122: "NewWindowLast too small", 123: "SegmentNumber too big",
               124: "illegal status", 125: "unsupported version", 126: "too many retries",
               127: "unspecified"}

COMMON_ATTRS = {0x0001: "ClassPortInfo", 0x0002: "Notice", 0x0003: "InformInfo"}

SMP_ATTRS = {**COMMON_ATTRS,
             0x0010: "NodeDescription", 0x0011: "NodeInfo", 0x0012: "SwitchInfo",
             0x0014: "GUIDInfo", 0x0015: "PortInfo", 0x0016: "P_KeyTable",
             0x0017: "SLtoVLMappingTable", 0x0018: "VLArbitrationTable",
             0x0019: "LinearForwardingTable", 0x001A: "RandomForwardingTable",
             0x001B: "MulticastForwardingTable", 0x001C: "LinkSpeedWidthPairsTable",
             0x001D: "VendorMADsTable", 0x001E: "HierarchyInfo", 0x0020: "SMInfo",
             0x0030: "VendorDiag", 0x0031: "LedInfo", 0x0032: "CableInfo",
             0x0033: "PortInfoExtended", 0xFF90: "MlnxExtPortInfo"}

SA_ATTRS = {**COMMON_ATTRS,
            0x0011: "NodeRecord", 0x0012: "PortInfoRecord",
            0x0013: "SLtoVLMappingTableRecord", 0x0014: "SwitchInfoRecord",
            0x0015: "LinearForwardingTableRecord", 0x0016: "RandomForwardingTableRecord",
            0x0017: "MulticastForwardingTableRecord", 0x0018: "SMInfoRecord",
            0x0019: "LinkSpeedWidthPairsTableRecord", 0x0020: "LinkRecord",
            0x0030: "GuidInfoRecord", 0x0031: "ServiceRecord", 0x0033: "P_KeyTableRecord",
            0x0035: "PathRecord", 0x0036: "VLArbitrationTableRecord",
            0x0038: "MCMemberRecord", 0x0039: "TraceRecord", 0x003A: "MultiPathRecord",
            0x003B: "ServiceAssociationRecord", 0x003C: "HierarchyInfoRecord",
            0x003D: "CableInfoRecord", 0x003E: "PortInfoExtendedRecord",
            0x00F3: "InformInfoRecord"}

PERF_ATTRS = {0x0001: "ClassPortInfo", 0x0010: "PortSamplesControl",
              0x0011: "PortSamplesResult", 0x0012: "PortCounters",
              0x0013: "PortExtendedSpeedsCounters (old)", 0x0015: "PortRcvErrorDetails",
              0x0016: "PortXmitDiscardDetails", 0x0017: "PortOpRcvCounters",
              0x0018: "PortFlowCtlCounters", 0x0019: "PortVLOpPackets",
              0x001A: "PortVLOpData", 0x001B: "PortVLXmitFlowCtlUpdateErrors",
              0x001C: "PortVLXmitWaitCounters", 0x001D: "PortCountersExtended",
              0x001F: "PortExtendedSpeedsCounters", 0x0030: "SwPortVLCongestion",
              0x0031: "PortRcvConCtrl", 0x0032: "PortSLRcvFECN", 0x0033: "PortSLRcvBECN",
              0x0034: "PortXmitConCtrl", 0x0035: "PortVLXmitTimeCong",
              0x0036: "PortXmitDataSL", 0x0037: "PortRcvDataSL"}

CM_ATTRS = {0x0001: "ClassPortInfo", 0x0010: "ConnectRequest", 0x0011: "MsgRcptAck",
            0x0012: "ConnectReject", 0x0013: "ConnectReply", 0x0014: "ReadyToUse",
            0x0015: "DisconnectRequest", 0x0016: "DisconnectReply",
            0x0017: "ServiceIDResReq", 0x0018: "ServiceIDResReqResp",
            0x0019: "LoadAlternatePath", 0x001A: "AlternatePathResponse",
            0x001B: "SuggestAlternatePath", 0x001C: "SuggestPathResponse"}

CC_ATTRS = {**COMMON_ATTRS, 0x0011: "CongestionInfo", 0x0012: "CongestionKeyInfo",
            0x0013: "CongestionLog", 0x0014: "SwitchCongestionSetting",
            0x0015: "SwitchPortCongestionSetting", 0x0016: "CACongestionSetting",
            0x0017: "CongestionControlTable", 0x0018: "Timestamp"}

BM_ATTRS = {0x0001: "ClassPortInfo", 0x0002: "Notice", 0x0010: "BKeyInfo",
            0x0020: "WriteVPD", 0x0021: "ReadVPD", 0x0022: "ResetIBML",
            0x0029: "SetModuleState", 0x002B: "GetModuleStatus", 0x002F: "OEM"}

DM_ATTRS = {**COMMON_ATTRS, 0x0010: "IOUnitInfo", 0x0011: "IOControllerProfile",
            0x0012: "ServiceEntries", 0x0020: "DiagnosticTimeout", 0x0021: "PrepareToTest",
            0x0022: "TestDeviceOnce", 0x0023: "TestDeviceLoop", 0x0024: "DiagCode"}

CM_REJ_REASONS = {
    1: "No QP available", 2: "No EEC available", 3: "No resources available",
    4: "Timeout", 5: "Unsupported request", 6: "Invalid Communication ID",
    7: "Invalid Communication Instance", 8: "Invalid Service ID",
    9: "Invalid Transport Service Type", 10: "Stale connection", 11: "RDC does not exist",
    12: "Primary Remote Port GID rejected", 13: "Primary Remote Port LID rejected",
    14: "Invalid Primary SL", 15: "Invalid Primary Traffic Class",
    16: "Invalid Primary Hop Limit", 17: "Invalid Primary Packet Rate",
    18: "Alternate Remote Port GID rejected", 19: "Alternate Remote Port LID rejected",
    20: "Invalid Alternate SL", 21: "Invalid Alternate Traffic Class",
    22: "Invalid Alternate Hop Limit", 23: "Invalid Alternate Packet Rate",
    24: "Port CM Redirection", 25: "Port Redirection", 26: "Invalid Path MTU",
    27: "Insufficient Responder Resources", 28: "Consumer Reject",
    29: "Invalid RNR NAK Retry Count", 30: "Duplicate Local Communication ID",
    31: "Unsupported Class Version", 32: "Invalid Primary Flow Label",
    33: "Invalid Alternate Flow Label", 35: "Vendor option not supported"}
CM_MSG_KINDS = {0: "REQ", 1: "REP", 2: "LAP / other", 3: "reserved"}
CM_APR_STATUS = {0: "success", 1: "invalid communication ID", 2: "unsupported request",
                 3: "rejected", 4: "redirect", 5: "path is current", 6: "invalid QPN/EECN",
                 7: "invalid LID", 8: "invalid GID", 9: "invalid flow label",
                 10: "invalid traffic class", 11: "invalid hop limit",
                 12: "invalid packet rate", 13: "invalid SL"}
CM_SIDR_STATUS = {0: "valid", 1: "service ID not supported", 2: "rejected",
                  3: "no QP", 4: "redirect", 5: "unsupported class version"}

NODE_TYPES = {1: "Channel Adapter", 2: "Switch", 3: "Router"}
PORT_STATES = {0: "No State Change", 1: "Down", 2: "Initialize", 3: "Armed", 4: "Active",
               5: "ActiveDefer"}
PHYS_STATES = {0: "No State Change", 1: "Sleep", 2: "Polling", 3: "Disabled",
               4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery",
               7: "PhyTest"}
MTUS = {1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}
VL_CAPS = {1: "VL0", 2: "VL0-1", 3: "VL0-3", 4: "VL0-7", 5: "VL0-14"}
SM_STATES = {0: "NotActive", 1: "Discovering", 2: "Standby", 3: "Master"}
SELECTORS = {0: "greater than", 1: "less than", 2: "exactly", 3: "largest/smallest"}
RATES = {2: "2.5 Gb/s", 3: "10 Gb/s", 4: "30 Gb/s", 5: "5 Gb/s", 6: "20 Gb/s",
         7: "40 Gb/s", 8: "60 Gb/s", 9: "80 Gb/s", 10: "120 Gb/s", 11: "14 Gb/s",
         12: "56 Gb/s", 13: "112 Gb/s", 14: "168 Gb/s", 15: "25 Gb/s", 16: "100 Gb/s",
         17: "200 Gb/s", 18: "300 Gb/s", 19: "28 Gb/s", 20: "50 Gb/s", 21: "400 Gb/s",
         22: "600 Gb/s", 23: "800 Gb/s", 24: "1200 Gb/s"}
TRAP_NAMES = {64: "GID in service", 65: "GID out of service",
              66: "multicast group created", 67: "multicast group deleted",
              68: "paths no longer valid", 69: "paths recomputed",
              128: "link state changed", 129: "local link integrity threshold reached",
              130: "excessive buffer overrun threshold reached",
              131: "flow control update watchdog timer expired",
              144: "capability mask / local changes", 145: "system image GUID changed",
              256: "bad M_Key", 257: "bad P_Key", 258: "bad Q_Key",
              259: "bad P_Key at switch external port"}


def attribute_table(mgmt_class: int) -> dict[int, str]:
    """The attribute names of the class's family (its class node in the graph)."""
    return {"mad_smp_lid": SMP_ATTRS, "mad_smp_dr": SMP_ATTRS, "mad_sa": SA_ATTRS,
            "mad_perf": PERF_ATTRS, "mad_bm": BM_ATTRS, "mad_dm": DM_ATTRS, "mad_cm": CM_ATTRS,
            "mad_cc": CC_ATTRS}.get(GRAPH.mad_class(mgmt_class), COMMON_ATTRS)


def attribute_name(mgmt_class: int, attribute_id: int) -> str:
    """`PortInfo`, `PathRecord`, ... or `0xff12` when the class does not name it."""
    name = attribute_table(mgmt_class).get(attribute_id)
    if name is None:
        return f"vendor 0x{attribute_id:04x}" if attribute_id >= 0xFF00 else \
            f"0x{attribute_id:04x}"
    return name


def attribute_id(mgmt_class: int, name: str | int) -> int:
    """The attribute ID for a name (case-insensitive) in a class; ints pass through."""
    if isinstance(name, int):
        return name
    want = name.lower().replace("_", "")
    for aid, n in attribute_table(mgmt_class).items():
        if n.lower().replace("_", "") == want:
            return aid
    raise KeyError(f"class 0x{mgmt_class:02x} has no attribute {name!r}")


def class_name(mgmt_class: int) -> str:
    if mgmt_class in CLASS_NAMES:
        return CLASS_NAMES[mgmt_class]
    if 0x10 <= mgmt_class <= 0x2F:
        return "Application"
    return "Reserved"


def status_text(mgmt_class: int, status: int) -> str:
    """A readable status: `success`, `busy, redirect`, `SA: no records`, ..."""
    parts = []
    if mgmt_class == MGMT_CLASS_SMP_DR:
        status &= 0x7FFF          # bit 15 is the D bit
    if status & 1:
        parts.append("busy")
    if status & 2:
        parts.append("redirect required")
    code = (status >> 2) & 7
    if code:
        parts.append(INVALID_FIELD.get(code, f"reserved invalid-field code {code}"))
    cls = status >> 8
    if cls:
        if mgmt_class == MGMT_CLASS_SA:
            parts.append("SA: " + SA_STATUS.get(cls, f"class status {cls}"))
        else:
            parts.append(f"class-specific status 0x{cls:02x}")
    return ", ".join(parts) or "success"
