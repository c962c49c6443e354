"""Subnet Administration (IBA 15): RMPP header, SA header and the SA records.

GetTableResp / GetMultiResp / GetTraceTableResp carry a table of records: the
first at MAD byte 56, the next ones every AttributeOffset x 8 bytes. Each record
(its layouts, plus the reserved space up to the stride) is its own set of layer
occurrences, so `pkt.values_of("infiniband.pathrecord.dlid")` lists every record.

Rules for tables (the data area is 200 bytes):
* records are taken while a whole record fits the area; trailing slots that are all
  zero are not records (a single-record response leaves two empty PathRecord slots),
  but a successful response always shows at least one (as Wireshark does), an error
  response (status "no records" ...) none when its area is empty;
* an RMPP DATA segment other than the first carries the continuation of the byte
  stream, not record-aligned data, so its area stays opaque;
* a request (Get, Set, GetTable, Delete ...) carries one record: the template.

Public names: Wireshark's where it has the field (note its choices: ServiceRecord
fields are `infiniband.linkrecord.service*`, GuidInfoRecord GUIDs are
`infiniband.switchinfo.guid`, record IDs are `infiniband.sa.lid/.portnum/...`),
ibwire names in the same style where it has none (PathRecord ServiceID and QoSClass,
PortInfoRecord Options, MultiPathRecord ServiceID ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibwire.constants import MAD_SIZE
from ibwire.fields import UINT16, UINT24
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad._layout import (
    mad_gid,
    mad_layout,
    mad_raw,
    mad_reserved,
    mad_reserved_bits,
    mad_text,
    mad_uint,
)
from ibwire.mad.general import CLASS_PORT_INFO, INFORM_INFO, INFORM_INFO_FIELDS, notice_gsi
from ibwire.mad.header import MAD_HEADER, RMPP, SA_HEADER, take_rmpp
from ibwire.mad.names import MTUS, RATES, SELECTORS
from ibwire.mad.smp import (
    GUID_ENTRY,
    LFT_ENTRY,
    MFT_ENTRY,
    NODE_INFO_FIELDS,
    PKEY_ENTRY,
    PORT_INFO_FIELDS,
    RFT_ENTRY,
    SL2VL_ENTRY,
    SM_INFO_FIELDS,
    SWITCH_INFO_FIELDS,
    VLARB_ENTRY,
    portinfo_overlays,
)

# SA data (records) follow the common, RMPP and SA headers and fill the MAD.
SA_DATA_OFFSET = MAD_HEADER.size + RMPP.size + SA_HEADER.size
SA_DATA_SIZE = MAD_SIZE - SA_DATA_OFFSET
TABLE_METHODS = (0x92, 0x93, 0x94)   # GetTableResp, GetTraceTableResp, GetMultiResp

_SA = "infiniband.sa"
_LID = mad_uint("lid", 16, f"{_SA}.lid")

NODE_RECORD = mad_layout("noderecord", "NodeRecord", None, [
    _LID, mad_reserved(2), *NODE_INFO_FIELDS,
    mad_text("node_string", 64, "infiniband.nodedescription.nodestring")])
PORTINFO_RECORD = mad_layout("portinforecord", "PortInfoRecord", None, [
    mad_uint("end_port_lid", 16, f"{_SA}.endportlid"), mad_uint("port_num", 8, f"{_SA}.portnum"),
    mad_uint("options", 8, "infiniband.portinforecord.options"),
    *PORT_INFO_FIELDS, *portinfo_overlays(32)])
SL2VL_RECORD = mad_layout("sl2vlrecord", "SLtoVLMappingTableRecord", None, [
    _LID, mad_uint("input_port_num", 8, f"{_SA}.inputportnum"),
    mad_uint("output_port_num", 8, f"{_SA}.outputportnum"), mad_reserved(4)])
SWITCHINFO_RECORD = mad_layout("switchinforecord", "SwitchInfoRecord", None, [
    _LID, mad_reserved(2), *SWITCH_INFO_FIELDS])
TABLE_RID = mad_layout("lftrecord",
                       "LinearForwardingTableRecord / RandomForwardingTableRecord", None,
              [_LID, mad_uint("block_num", 16, f"{_SA}.blocknum_sixteenbit"), mad_reserved(4)])
MFT_RECORD = mad_layout("mftrecord", "MulticastForwardingTableRecord", None, [
    _LID, mad_uint("position", 4, f"{_SA}.position"), mad_reserved_bits(3),
    mad_uint("block_num", 9, f"{_SA}.blocknum_ninebit", ftype=UINT16), mad_reserved(4)])
SMINFO_RECORD = mad_layout("sminforecord", "SMInfoRecord", None, [
    _LID, mad_reserved(2), *SM_INFO_FIELDS])
LINK_RECORD = mad_layout("linkrecord", "LinkRecord", "infiniband.linkrecord", [
    mad_uint("from_lid", 16), mad_uint("from_port", 8), mad_uint("to_port", 8),
    mad_uint("to_lid", 16), mad_reserved_bits(16)])
GUIDINFO_RECORD = mad_layout("guidinforecord", "GuidInfoRecord", None, [
    _LID, mad_uint("block_num", 8, f"{_SA}.blocknum_eightbit"), mad_reserved_bits(8),
    mad_reserved(4)])
_SR = "infiniband.linkrecord"   # Wireshark's name space for ServiceRecord fields
SERVICE_RECORD = mad_layout("servicerecord", "ServiceRecord", None, [
    mad_uint("service_id", 64, f"{_SR}.serviceid"), mad_gid("service_gid", f"{_SR}.servicegid"),
    mad_uint("service_p_key", 16, f"{_SR}.servicep_key"), mad_reserved_bits(16),
    mad_uint("service_lease", 32, f"{_SR}.servicelease"),
    mad_raw("service_key", 16, f"{_SR}.servicekey"),
    mad_raw("service_name", 64, f"{_SR}.servicename"),
    mad_raw("service_data8", 16, f"{_SR}.servicedata"),
    mad_raw("service_data16", 16, f"{_SR}.servicedata"),
    mad_raw("service_data32", 16, f"{_SR}.servicedata"),
    mad_raw("service_data64", 16, f"{_SR}.servicedata")])
PKEY_RECORD = mad_layout("pkeyrecord", "P_KeyTableRecord", None, [
    _LID, mad_uint("block_num", 16, f"{_SA}.blocknum_sixteenbit"),
    mad_uint("port_num", 8, f"{_SA}.portnum"), mad_reserved(3)])
_PR = "infiniband.pathrecord"
PATH_RECORD = mad_layout("pathrecord", "PathRecord", _PR, [
    mad_uint("service_id", 64), mad_gid("dgid"), mad_gid("sgid"), mad_uint("dlid", 16),
    mad_uint("slid", 16),
    mad_uint("raw_traffic", 1), mad_reserved_bits(3), mad_uint("flow_label", 20),
    mad_uint("hop_limit", 8), mad_uint("tclass", 8),
    mad_uint("reversible", 1), mad_uint("numb_path", 7), mad_uint("p_key", 16, "p_key"),
    mad_uint("qos_class", 12), mad_uint("sl", 4, ftype=UINT16),
    mad_uint("mtu_selector", 2, values=SELECTORS), mad_uint("mtu", 6, values=MTUS),
    mad_uint("rate_selector", 2, values=SELECTORS), mad_uint("rate", 6, values=RATES),
    mad_uint("packet_life_time_selector", 2, values=SELECTORS), mad_uint("packet_life_time", 6),
    mad_uint("preference", 8), mad_reserved_bits(48)])
VLARB_RECORD = mad_layout("vlarbrecord", "VLArbitrationTableRecord", None, [
    _LID, mad_uint("output_port_num", 8, f"{_SA}.outputportnum"),
    mad_uint("block_num", 8, f"{_SA}.blocknum_eightbit"), mad_reserved(4)])
MCMEMBER_RECORD = mad_layout("mcmemberrecord", "MCMemberRecord", "infiniband.mcmemberrecord", [
    mad_gid("mgid"), mad_gid("port_gid"), mad_uint("q_key", 32, "q_key"), mad_uint("mlid", 16),
    mad_uint("mtu_selector", 2, values=SELECTORS), mad_uint("mtu", 6, values=MTUS),
    mad_uint("tclass", 8),
    mad_uint("p_key", 16, "p_key"), mad_uint("rate_selector", 2, values=SELECTORS),
    mad_uint("rate", 6, values=RATES), mad_uint("packet_life_time_selector", 2, values=SELECTORS),
    mad_uint("packet_life_time", 6), mad_uint("sl", 4), mad_uint("flow_label", 20, ftype=UINT24),
    mad_uint("hop_limit", 8), mad_uint("scope", 4), mad_uint("join_state", 4),
    mad_uint("proxy_join", 1), mad_reserved_bits(23)])
TRACE_RECORD = mad_layout("tracerecord", "TraceRecord", "infiniband.tracerecord", [
    mad_uint("gid_prefix", 64), mad_uint("id_generation", 16), mad_reserved(1),
    mad_uint("node_type", 8),
    mad_uint("node_id", 64), mad_uint("chassis_id", 64), mad_uint("entry_port_id", 64),
    mad_uint("exit_port_id", 64),
    mad_uint("entry_port", 8), mad_uint("exit_port", 8), mad_reserved_bits(16)])
_MP = "infiniband.multipathrecord"
MULTIPATH_RECORD = mad_layout("multipathrecord", "MultiPathRecord", _MP, [
    mad_uint("raw_traffic", 1), mad_reserved_bits(3), mad_uint("flow_label", 20),
    mad_uint("hop_limit", 8), mad_uint("tclass", 8),
    mad_uint("reversible", 1), mad_uint("numb_path", 7), mad_uint("p_key", 16, "p_key"),
    mad_uint("qos_class", 12), mad_uint("sl", 4),
    mad_uint("mtu_selector", 2, values=SELECTORS), mad_uint("mtu", 6, values=MTUS),
    mad_uint("rate_selector", 2, values=SELECTORS), mad_uint("rate", 6, values=RATES),
    mad_uint("packet_life_time_selector", 2, values=SELECTORS), mad_uint("packet_life_time", 6),
    mad_uint("service_id_msb", 8), mad_uint("independence_selector", 2), mad_uint("gid_scope", 6),
    mad_uint("sgid_count", 8), mad_uint("dgid_count", 8), mad_uint("service_id_lsb", 56)])
MULTIPATH_GID = mad_layout("multipath_gid", "MultiPathRecord SGID/DGID", _MP, [mad_gid("sdgid")])
INFORMINFO_RECORD = mad_layout("informinforecord", "InformInfoRecord", None, [
    mad_gid("subscriber_gid", "infiniband.informinforecord.subscribergid"),
    mad_uint("enum", 16, "infiniband.informinforecord.enum"), mad_reserved(6), *INFORM_INFO_FIELDS])
SERVICE_ASSOCIATION_RECORD = mad_layout(
    "serviceassociationrecord", "ServiceAssociationRecord",
    "infiniband.serviceassociationrecord",
    [mad_raw("service_key", 16), mad_text("service_name", 64)])


def _multipath_gids(ctx: Ctx, limit: int) -> None:
    head = ctx.pkt.layers[-1].values
    count = head["sgid_count"] + head["dgid_count"]
    ctx.parts([(MULTIPATH_GID, count)], limit)


@dataclass(frozen=True)
class Record:
    """An SA attribute: its parts and its ComponentMask bits (field name -> bit)."""

    name: str
    parts: tuple[Part, ...]
    components: dict[str, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        total = 0
        for p in self.parts:
            if isinstance(p, tuple):
                total += p[0].size * p[1]
            elif hasattr(p, "size"):
                total += p.size
        return total


def _bits(*names: str) -> dict[str, int]:
    return {n: i for i, n in enumerate(names) if n}


_NODE_BITS = _bits("lid", "", "base_version", "class_version", "node_type", "num_ports",
                   "system_image_guid", "node_guid", "port_guid", "partition_cap",
                   "device_id", "revision", "local_port_num", "vendor_id", "node_string")
_PATH_BITS = {"service_id": 0, **_bits("", "", "dgid", "sgid", "dlid", "slid", "raw_traffic",
                                       "", "flow_label", "hop_limit", "tclass", "reversible",
                                       "numb_path", "p_key", "qos_class", "sl", "mtu_selector",
                                       "mtu", "rate_selector", "rate",
                                       "packet_life_time_selector", "packet_life_time",
                                       "preference")}
_MCM_BITS = _bits("mgid", "port_gid", "q_key", "mlid", "mtu_selector", "mtu", "tclass",
                  "p_key", "rate_selector", "rate", "packet_life_time_selector",
                  "packet_life_time", "sl", "flow_label", "hop_limit", "scope", "join_state",
                  "proxy_join")
_SR_BITS = _bits("service_id", "service_gid", "service_p_key", "", "service_lease",
                 "service_key", "service_name")
_MP_BITS = _bits("raw_traffic", "", "flow_label", "hop_limit", "tclass", "reversible",
                 "numb_path", "p_key", "qos_class", "sl", "mtu_selector", "mtu",
                 "rate_selector", "rate", "packet_life_time_selector", "packet_life_time",
                 "service_id_msb", "independence_selector", "", "sgid_count", "dgid_count",
                 "service_id_lsb")
_PIR_BITS = _bits("end_port_lid", "port_num", "options", "m_key", "gid_prefix", "lid",
                  "master_sm_lid", "capability_mask", "diag_code", "m_key_lease_period",
                  "local_port_num", "link_width_enabled", "link_width_supported",
                  "link_width_active", "link_speed_supported", "port_state",
                  "port_physical_state", "link_down_default_state", "m_key_protect_bits",
                  "", "lmc", "link_speed_active", "link_speed_enabled", "neighbor_mtu",
                  "master_sm_sl", "vl_cap", "init_type", "vl_high_limit",
                  "vl_arbitration_high_cap", "vl_arbitration_low_cap", "init_type_reply",
                  "mtu_cap", "vl_stall_count", "hoq_life", "operational_vls",
                  "partition_enforcement_inbound", "partition_enforcement_outbound",
                  "filter_raw_inbound", "filter_raw_outbound", "m_key_violations",
                  "p_key_violations", "q_key_violations", "guid_cap", "client_reregister",
                  "", "subnet_timeout", "", "resp_time_value", "local_phy_errors",
                  "overrun_errors", "max_credit_hint", "", "link_round_trip_latency",
                  "capability_mask2", "link_speed_ext_active", "link_speed_ext_supported",
                  "", "link_speed_ext_enabled")
_IIR_BITS = _bits("subscriber_gid", "enum", "", "gid", "lid_range_begin", "lid_range_end",
                  "", "is_generic", "subscribe", "type", "trap_number_device_id", "qpn", "",
                  "resp_time_value", "", "producer_type_vendor_id")

RECORDS: dict[int, Record] = {r_id: rec for r_id, rec in {
    0x0001: Record("ClassPortInfo", (CLASS_PORT_INFO,)),
    0x0002: Record("Notice", (notice_gsi,)),
    0x0003: Record("InformInfo", (INFORM_INFO,)),
    0x0011: Record("NodeRecord", (NODE_RECORD,), _NODE_BITS),
    0x0012: Record("PortInfoRecord", (PORTINFO_RECORD,), _PIR_BITS),
    0x0013: Record("SLtoVLMappingTableRecord", (SL2VL_RECORD, (SL2VL_ENTRY, 8)),
                   _bits("lid", "input_port_num", "output_port_num")),
    0x0014: Record("SwitchInfoRecord", (SWITCHINFO_RECORD,), _bits("lid")),
    0x0015: Record("LinearForwardingTableRecord", (TABLE_RID, (LFT_ENTRY, 64)),
                   _bits("lid", "block_num")),
    0x0016: Record("RandomForwardingTableRecord", (TABLE_RID, (RFT_ENTRY, 16)),
                   _bits("lid", "block_num")),
    0x0017: Record("MulticastForwardingTableRecord", (MFT_RECORD, (MFT_ENTRY, 32)),
                   _bits("lid", "position", "", "block_num")),
    0x0018: Record("SMInfoRecord", (SMINFO_RECORD,),
                   _bits("lid", "", "guid", "sm_key", "act_count", "priority", "sm_state")),
    0x0020: Record("LinkRecord", (LINK_RECORD,),
                   _bits("from_lid", "from_port", "to_port", "to_lid")),
    0x0030: Record("GuidInfoRecord", (GUIDINFO_RECORD, (GUID_ENTRY, 8)),
                   _bits("lid", "block_num")),
    0x0031: Record("ServiceRecord", (SERVICE_RECORD,), _SR_BITS),
    0x0033: Record("P_KeyTableRecord", (PKEY_RECORD, (PKEY_ENTRY, 32)),
                   _bits("lid", "block_num", "port_num")),
    0x0035: Record("PathRecord", (PATH_RECORD,), _PATH_BITS),
    0x0036: Record("VLArbitrationTableRecord", (VLARB_RECORD, (VLARB_ENTRY, 32)),
                   _bits("lid", "output_port_num", "block_num")),
    0x0038: Record("MCMemberRecord", (MCMEMBER_RECORD,), _MCM_BITS),
    0x0039: Record("TraceRecord", (TRACE_RECORD,)),
    0x003A: Record("MultiPathRecord", (MULTIPATH_RECORD, _multipath_gids), _MP_BITS),
    0x003B: Record("ServiceAssociationRecord", (SERVICE_ASSOCIATION_RECORD,)),
    0x00F3: Record("InformInfoRecord", (INFORMINFO_RECORD,), _IIR_BITS),
}.items()}


def component_mask(record: Record, given: list[str] | set[str]) -> int:
    """The ComponentMask selecting the given record fields (ServiceID sets both halves)."""
    mask = 0
    for name in given:
        if name not in record.components:
            continue
        mask |= 1 << record.components[name]
        if record.name == "PathRecord" and name == "service_id":
            mask |= 2
    return mask


def _all_zero(ctx: Ctx, start: int, size: int) -> bool:
    return not any(ctx.pkt.data[start:start + size])


def _records(ctx: Ctx, rec: Record, table: bool, attr_offset: int) -> None:
    area_end = ctx.pos + SA_DATA_SIZE
    size = rec.size
    if not table or size == 0:
        ctx.area(SA_DATA_SIZE, rec.parts)
        return
    stride = attr_offset * 8 if attr_offset else size
    if stride < size:
        ctx.pkt.mark("sa", ctx.mad + 44, f"AttributeOffset {attr_offset} ({stride} bytes) "
                     f"is smaller than a {rec.name} ({size} bytes)")
        stride = size
    starts = []
    pos = ctx.pos
    while pos + size <= area_end:
        starts.append(pos)
        pos += stride
    # Trailing all-zero slots are not records; an error response may have none.
    keep = 0 if ctx.hdr["status"] else 1
    while len(starts) > keep and _all_zero(ctx, starts[-1], size):
        starts.pop()
    for i, start in enumerate(starts):
        ctx.parts(rec.parts, start + size)
        nxt = starts[i + 1] if i + 1 < len(starts) else area_end
        ctx.fill_abs(nxt)
    ctx.fill_abs(area_end)


def decode(ctx: Ctx) -> None:
    """RMPP header, SA header, then the record(s)."""
    ctx.extra("infiniband.sa.drdlid", 0, MAD_SIZE)
    rmpp = take_rmpp(ctx)
    if rmpp is None:
        return
    sa = ctx.take(SA_HEADER)
    if sa is None:
        return
    ctx.extra("infiniband.sa.drdlid", SA_DATA_OFFSET, MAD_SIZE)
    rec = RECORDS.get(ctx.hdr["attribute_id"])
    continuation = rmpp["rmpp_type"] == 1 and rmpp["data1"] > 1
    if rec is None or continuation:
        ctx.area(SA_DATA_SIZE, (), kind="data")
        return
    if ctx.hdr["attribute_id"] == 0x0035:
        # Wireshark adds one more "SA Packet" item over the first PathRecord.
        ctx.extra("infiniband.sa.drdlid", SA_DATA_OFFSET, SA_DATA_OFFSET + 64)
    _records(ctx, rec, ctx.hdr["method"] in TABLE_METHODS, sa["attribute_offset"])


__all__ = ["RECORDS", "Record", "SA_DATA_OFFSET", "SA_DATA_SIZE", "TABLE_METHODS",
           "component_mask", "decode"]
