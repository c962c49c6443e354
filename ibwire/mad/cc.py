"""Congestion Control (class 0x21, IBA Annex A10): CC_Key at byte 24, then the
attribute data at byte 64 (192 bytes) - except CongestionLog, whose data starts
at byte 32 (224 bytes, libibmad `IB_CC_LOG_DATA_OFFS`).

CongestionLog has a switch form (LogType 1: 15 events of SLID/DLID/SL/timestamp)
and a CA form (LogType 2: 13 events of QP/SL/service type/LIDs/timestamp); the
LogType byte chooses. Wireshark 4.0 has no CC fields: every name here is ibwire's
(`infiniband.congestioninfo.*`, `infiniband.congestionlog.*`, ...).
"""

from __future__ import annotations

from ibwire.constants import MAD_SIZE
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad._layout import L, d, raw, rz, u
from ibwire.mad.general import CLASS_PORT_INFO, notice_gsi
from ibwire.mad.header import CC_HEADER, CC_RESERVED

CONGESTION_INFO = L("cc_congestioninfo", "CongestionInfo", "infiniband.congestioninfo", [
    u("congestion_info", 16), u("control_table_cap", 8), rz(8)])
CONGESTION_KEY_INFO = L("cc_congestionkeyinfo", "CongestionKeyInfo",
                        "infiniband.congestionkeyinfo", [
    u("cc_key", 64), u("cc_key_protect_bit", 1), rz(15), d("cc_key_lease_period", 16),
    d("cc_key_violations", 16)])

_LOG = "infiniband.congestionlog"
LOG_SWITCH = L("cc_log_switch", "CongestionLog (switch)", _LOG, [
    u("log_type", 8), u("congestion_flags", 8), d("log_events_counter", 16),
    d("current_time_stamp", 32), raw("port_map", 32)])
LOG_SWITCH_EVENT = L("cc_log_switch_event", "CongestionLogEvent (switch)",
                     f"{_LOG}.switch", [
    d("slid", 16), d("dlid", 16), u("sl", 4), rz(28), d("time_stamp", 32)])
LOG_CA = L("cc_log_ca", "CongestionLog (CA)", _LOG, [
    u("log_type", 8), u("congestion_flags", 8), d("threshold_event_counter", 16),
    u("threshold_congestion_event_map", 16), rz(16), d("current_time_stamp", 32)])
LOG_CA_EVENT = L("cc_log_ca_event", "CongestionLogEvent (CA)", f"{_LOG}.ca", [
    u("local_qp_cn_entry", 24), u("sl_cn_entry", 4), u("service_type_cn_entry", 4),
    u("remote_qp_number_cn_entry", 24), rz(8), d("local_lid_cn", 16),
    d("remote_lid_cn_entry", 16), d("time_stamp_cn_entry", 32)])
LOG_TYPES = {1: "switch", 2: "CA"}

SWITCH_CONGESTION_SETTING = L("cc_switchcongestionsetting", "SwitchCongestionSetting",
                              "infiniband.switchcongestionsetting", [
    u("control_map", 32), raw("victim_mask", 32), raw("credit_mask", 32),
    u("threshold", 4), rz(4), d("packet_size", 8), u("cs_threshold", 4), rz(12),
    u("cs_return_delay", 16), d("marking_rate", 16)])
SWITCH_PORT_CONGESTION_ENTRY = L("cc_switchportcongestion", "SwitchPortCongestionSetting "
                                 "element", "infiniband.switchportcongestionsetting", [
    u("valid", 1), u("control_type", 1), rz(2), u("threshold", 4), d("packet_size", 8),
    d("cong_parm_marking_rate", 16)])
CA_CONGESTION_SETTING = L("cc_cacongestionsetting", "CACongestionSetting",
                          "infiniband.cacongestionsetting", [
    u("port_control", 16), u("control_map", 16)])
CA_CONGESTION_ENTRY = L("cc_cacongestionentry", "CACongestionEntry",
                        "infiniband.cacongestionsetting.entry", [
    d("ccti_timer", 16), d("ccti_increase", 8), d("trigger_threshold", 8), d("ccti_min", 8),
    rz(24)])
CC_TABLE = L("cc_table", "CongestionControlTable", "infiniband.congestioncontroltable", [
    d("ccti_limit", 16), rz(16)])
CC_TABLE_ENTRY = L("cc_table_entry", "CongestionControlTableEntry",
                   "infiniband.congestioncontroltable.entry", [
    u("cct_shift", 2), d("cct_multiplier", 14)])
CC_TIMESTAMP = L("cc_timestamp", "Timestamp", "infiniband.cctimestamp", [d("timestamp", 32)])


def _log(ctx: Ctx, limit: int) -> None:
    kind = ctx.peek(ctx.rel, 1)
    if kind == 1:
        ctx.parts((LOG_SWITCH, (LOG_SWITCH_EVENT, 15)), limit)
    elif kind == 2:
        ctx.parts((LOG_CA, (LOG_CA_EVENT, 13)), limit)
    else:
        ctx.fill_abs(limit, "data")


CC_ATTRIBUTES: dict[int, tuple[Part, ...]] = {
    0x0001: (CLASS_PORT_INFO,),
    0x0002: (notice_gsi,),
    0x0011: (CONGESTION_INFO,),
    0x0012: (CONGESTION_KEY_INFO,),
    0x0013: (_log,),
    0x0014: (SWITCH_CONGESTION_SETTING,),
    0x0015: ((SWITCH_PORT_CONGESTION_ENTRY, 32),),
    0x0016: (CA_CONGESTION_SETTING, (CA_CONGESTION_ENTRY, 16)),
    0x0017: (CC_TABLE, (CC_TABLE_ENTRY, 64)),
    0x0018: (CC_TIMESTAMP,),
}
CONGESTION_LOG = 0x0013


def decode(ctx: Ctx) -> None:
    """CC_Key, then either the log data (from byte 32) or 32 reserved bytes and the
    attribute (from byte 64)."""
    ctx.extra("infiniband.smplid.smpdata", 24, MAD_SIZE)   # Wireshark: application class
    if ctx.take(CC_HEADER) is None:
        return
    attr = ctx.hdr["attribute_id"]
    parts = CC_ATTRIBUTES.get(attr)
    if attr == CONGESTION_LOG:
        ctx.area(MAD_SIZE - 32, parts)
        return
    if ctx.take(CC_RESERVED) is None:
        return
    ctx.area(MAD_SIZE - 64, parts or (), kind="pad" if parts else "data")
