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
from ibwire.mad._layout import mad_layout, mad_raw, mad_reserved_bits, mad_uint, mad_uint_dec
from ibwire.mad.general import CLASS_PORT_INFO, notice_gsi
from ibwire.mad.header import CC_HEADER, CC_RESERVED

CONGESTION_INFO = mad_layout("cc_congestioninfo", "CongestionInfo", "infiniband.congestioninfo", [
    mad_uint("congestion_info", 16), mad_uint("control_table_cap", 8), mad_reserved_bits(8)])
CONGESTION_KEY_INFO = mad_layout("cc_congestionkeyinfo", "CongestionKeyInfo",
                                 "infiniband.congestionkeyinfo", [
    mad_uint("cc_key", 64), mad_uint("cc_key_protect_bit", 1), mad_reserved_bits(15),
    mad_uint_dec("cc_key_lease_period", 16),
    mad_uint_dec("cc_key_violations", 16)])

_LOG = "infiniband.congestionlog"
LOG_SWITCH = mad_layout("cc_log_switch", "CongestionLog (switch)", _LOG, [
    mad_uint("log_type", 8), mad_uint("congestion_flags", 8),
    mad_uint_dec("log_events_counter", 16),
    mad_uint_dec("current_time_stamp", 32), mad_raw("port_map", 32)])
LOG_SWITCH_EVENT = mad_layout("cc_log_switch_event", "CongestionLogEvent (switch)",
                              f"{_LOG}.switch", [
    mad_uint_dec("slid", 16), mad_uint_dec("dlid", 16), mad_uint("sl", 4), mad_reserved_bits(28),
    mad_uint_dec("time_stamp", 32)])
LOG_CA = mad_layout("cc_log_ca", "CongestionLog (CA)", _LOG, [
    mad_uint("log_type", 8), mad_uint("congestion_flags", 8),
    mad_uint_dec("threshold_event_counter", 16),
    mad_uint("threshold_congestion_event_map", 16), mad_reserved_bits(16),
    mad_uint_dec("current_time_stamp", 32)])
LOG_CA_EVENT = mad_layout("cc_log_ca_event", "CongestionLogEvent (CA)", f"{_LOG}.ca", [
    mad_uint("local_qp_cn_entry", 24), mad_uint("sl_cn_entry", 4),
    mad_uint("service_type_cn_entry", 4),
    mad_uint("remote_qp_number_cn_entry", 24), mad_reserved_bits(8),
    mad_uint_dec("local_lid_cn", 16),
    mad_uint_dec("remote_lid_cn_entry", 16), mad_uint_dec("time_stamp_cn_entry", 32)])
LOG_TYPES = {1: "switch", 2: "CA"}

SWITCH_CONGESTION_SETTING = mad_layout("cc_switchcongestionsetting", "SwitchCongestionSetting",
                                       "infiniband.switchcongestionsetting", [
    mad_uint("control_map", 32), mad_raw("victim_mask", 32), mad_raw("credit_mask", 32),
    mad_uint("threshold", 4), mad_reserved_bits(4), mad_uint_dec("packet_size", 8),
    mad_uint("cs_threshold", 4), mad_reserved_bits(12),
    mad_uint("cs_return_delay", 16), mad_uint_dec("marking_rate", 16)])
SWITCH_PORT_CONGESTION_ENTRY = mad_layout("cc_switchportcongestion", "SwitchPortCongestionSetting "
                                          "element", "infiniband.switchportcongestionsetting", [
    mad_uint("valid", 1), mad_uint("control_type", 1), mad_reserved_bits(2),
    mad_uint("threshold", 4), mad_uint_dec("packet_size", 8),
    mad_uint_dec("cong_parm_marking_rate", 16)])
CA_CONGESTION_SETTING = mad_layout("cc_cacongestionsetting", "CACongestionSetting",
                                   "infiniband.cacongestionsetting", [
    mad_uint("port_control", 16), mad_uint("control_map", 16)])
CA_CONGESTION_ENTRY = mad_layout("cc_cacongestionentry", "CACongestionEntry",
                                 "infiniband.cacongestionsetting.entry", [
    mad_uint_dec("ccti_timer", 16), mad_uint_dec("ccti_increase", 8),
    mad_uint_dec("trigger_threshold", 8), mad_uint_dec("ccti_min", 8),
    mad_reserved_bits(24)])
CC_TABLE = mad_layout("cc_table", "CongestionControlTable", "infiniband.congestioncontroltable", [
    mad_uint_dec("ccti_limit", 16), mad_reserved_bits(16)])
CC_TABLE_ENTRY = mad_layout("cc_table_entry", "CongestionControlTableEntry",
                            "infiniband.congestioncontroltable.entry", [
    mad_uint("cct_shift", 2), mad_uint_dec("cct_multiplier", 14)])
CC_TIMESTAMP = mad_layout("cc_timestamp", "Timestamp", "infiniband.cctimestamp", [
    mad_uint_dec("timestamp", 32)])


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
