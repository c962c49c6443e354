"""Attributes every class may use: ClassPortInfo (IBA 13.4.8.1), Notice and the
per-trap DataDetails (13.4.8.2, 14.2.5.1), InformInfo (13.4.8.3).

A Notice is 80 bytes (IssuerGID last); in an SMP only its first 64 bytes fit the
data area, so the SMP form stops after DataDetails. The 54-byte DataDetails is
decoded by trap number for generic notices (IsGeneric = 1); vendor notices keep
it as bytes. Trap field names are Wireshark's (`infiniband.trap.*`, including its
`linkspeecenabledchange` spelling); fields it lacks get names in the same style.
"""

from __future__ import annotations

from ibwire.mad._ctx import Ctx
from ibwire.mad._layout import L, gid, named, raw, rb, rz, u
from ibwire.mad.header import NOTICE_ISSUER
from ibwire.mad.names import TRAP_NAMES

CPI_FIELDS = named("infiniband.classportinfo", [
    u("base_version", 8), u("class_version", 8), u("capability_mask", 16),
    u("capability_mask2", 27), u("resp_time_value", 5),
    gid("redirect_gid"),
    u("redirect_tc", 8), u("redirect_sl", 4), u("redirect_fl", 20),
    u("redirect_lid", 16), u("redirect_p_key", 16, "redirectpkey"),
    u("redirect_reserved", 8, "reserved", label="Reserved"),
    u("redirect_qp", 24), u("redirect_q_key", 32, "redirectqkey"),
    gid("trap_gid"),
    u("trap_tc", 8), u("trap_sl", 4), u("trap_fl", 20),
    u("trap_lid", 16), u("trap_p_key", 16, "trappkey"),
    # Wireshark 4.0 shows TrapHL as classportinfo.reserved (a pinned difference).
    u("trap_hl", 8),
    u("trap_qp", 24), u("trap_q_key", 32, "trapqkey"),
])
CLASS_PORT_INFO = L("classportinfo", "ClassPortInfo", None, CPI_FIELDS)
# In an SMP only the first 64 of its 72 bytes fit the data area (up to TrapP_Key).
CLASS_PORT_INFO_SMP = L("classportinfo_smp", "ClassPortInfo (first 64 bytes)", None,
                        CPI_FIELDS[:CPI_FIELDS.index(next(
                            f for f in CPI_FIELDS if f.name == "trap_hl"))])

NOTICE = L("notice", "Notice", "infiniband.notice", [
    u("is_generic", 1), u("type", 7),
    u("producer_type_vendor_id", 24),
    u("trap_number_device_id", 16),
    u("issuer_lid", 16),
    u("notice_toggle", 1), u("notice_count", 15),
])

_T = "infiniband.trap"
TRAP_GID = L("trap_gid", "Trap 64-67 DataDetails", _T, [
    rz(48), gid("gid_addr")], size=54)
TRAP_PATHS = L("trap_paths", "Trap 68/69 DataDetails", _T, [
    u("comp_mask", 64, "comp_mask"), u("wait_for_repath", 1, "wait_for_repath"), rz(7)],
    size=54)
TRAP_128 = L("trap_128", "Trap 128 DataDetails", _T, [u("lid_addr", 16)], size=54)
TRAP_129 = L("trap_129", "Trap 129-131 DataDetails", _T, [
    rz(16), u("lid_addr", 16), u("port_no", 8)], size=54)
TRAP_144 = L("trap_144", "Trap 144 DataDetails", _T, [
    rz(16), u("lid_addr", 16), rz(8), rz(7), u("other_local_changes", 1),
    u("capability_mask", 32),
    rz(10), u("capability_mask2_change", 1), u("hierarchy_info_change", 1),
    u("sm_priority_change", 1), u("link_speed_enabled_change", 1, "linkspeecenabledchange"),
    u("link_width_enabled_change", 1), u("node_description_change", 1),
    u("capability_mask2", 16)], size=54)
TRAP_145 = L("trap_145", "Trap 145 DataDetails", _T, [
    rz(16), u("lid_addr", 16), rz(16), u("system_image_guid", 64)], size=54)
TRAP_256 = L("trap_256", "Trap 256 DataDetails", _T, [
    rz(16), u("lid_addr", 16), u("dr_slid", 16), u("method", 8), rz(8),
    u("attribute_id", 16), u("attribute_modifier", 32), u("m_key", 64, "mkey"), rz(8),
    u("dr_notice", 1), u("dr_path_truncated", 1), u("dr_hop_count", 6),
    raw("dr_notice_return_path", 30)], size=54)
TRAP_257 = L("trap_257", "Trap 257/258 DataDetails", _T, [
    rz(16), u("lid_addr1", 16), u("lid_addr2", 16), u("key", 32),
    u("sl", 4), rz(4), u("qp1", 24), rz(8), u("qp2", 24),
    gid("gid_addr1"), gid("gid_addr2")], size=54)
# Wireshark registers DataValid and SWLIDADDR as FT_IPv6 (2 bytes); we keep integers.
TRAP_259 = L("trap_259", "Trap 259 DataDetails", _T, [
    u("data_valid", 16), u("lid_addr1", 16), u("lid_addr2", 16), u("p_key", 16, "pkey"),
    u("sl", 4), rz(4), u("qp1", 24), rz(8), u("qp2", 24),
    gid("gid_addr1"), gid("gid_addr2"), u("sw_lid_addr", 16), u("port_no", 8)], size=54)
TRAP_DATA = L("trap_data", "DataDetails (vendor or unknown trap)", None, [
    raw("data_details", 54, None)])

TRAP_LAYOUTS = {64: TRAP_GID, 65: TRAP_GID, 66: TRAP_GID, 67: TRAP_GID,
                68: TRAP_PATHS, 69: TRAP_PATHS, 128: TRAP_128, 129: TRAP_129,
                130: TRAP_129, 131: TRAP_129, 144: TRAP_144, 145: TRAP_145,
                256: TRAP_256, 257: TRAP_257, 258: TRAP_257, 259: TRAP_259}

INFORM_INFO_FIELDS = named("infiniband.informinfo", [
    gid("gid"), u("lid_range_begin", 16), u("lid_range_end", 16), rb(2),
    u("is_generic", 8), u("subscribe", 8), u("type", 16), u("trap_number_device_id", 16),
    u("qpn", 24), rz(3), u("resp_time_value", 5), rb(1), u("producer_type_vendor_id", 24),
])
INFORM_INFO = L("informinfo", "InformInfo", None, INFORM_INFO_FIELDS)


def trap_layout(is_generic: int, trap_number: int):
    return TRAP_LAYOUTS.get(trap_number, TRAP_DATA) if is_generic else TRAP_DATA


def _notice(ctx: Ctx, limit: int, with_issuer: bool) -> None:
    start = ctx.rel
    head = ctx.take(NOTICE)
    if head is None:
        return
    ctx.extra("infiniband.smplid.smpdata", start + 10, start + 64)   # Wireshark's subtree
    ctx.extra("infiniband.notice.datadetails", start + 10, start + 64)
    if ctx.fits(54, limit):
        ctx.take(trap_layout(head["is_generic"], head["trap_number_device_id"]))
    if with_issuer and ctx.fits(16, limit):
        ctx.take(NOTICE_ISSUER)


def notice_smp(ctx: Ctx, limit: int) -> None:
    _notice(ctx, limit, with_issuer=False)


def notice_gsi(ctx: Ctx, limit: int) -> None:
    _notice(ctx, limit, with_issuer=True)


def trap_name(trap_number: int) -> str:
    return TRAP_NAMES.get(trap_number, f"trap {trap_number}")


__all__ = ["CLASS_PORT_INFO", "CLASS_PORT_INFO_SMP", "CPI_FIELDS", "INFORM_INFO",
           "INFORM_INFO_FIELDS", "NOTICE", "TRAP_LAYOUTS", "notice_gsi", "notice_smp",
           "trap_layout", "trap_name"]
