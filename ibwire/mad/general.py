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
from ibwire.mad._layout import (
    mad_gid,
    mad_layout,
    mad_raw,
    mad_reserved,
    mad_reserved_bits,
    mad_uint,
    named,
)
from ibwire.mad.header import NOTICE_ISSUER
from ibwire.mad.names import TRAP_NAMES

CPI_FIELDS = named("infiniband.classportinfo", [
    mad_uint("base_version", 8), mad_uint("class_version", 8), mad_uint("capability_mask", 16),
    mad_uint("capability_mask2", 27), mad_uint("resp_time_value", 5),
    mad_gid("redirect_gid"),
    mad_uint("redirect_tc", 8), mad_uint("redirect_sl", 4), mad_uint("redirect_fl", 20),
    mad_uint("redirect_lid", 16), mad_uint("redirect_p_key", 16, "redirectpkey"),
    mad_uint("redirect_reserved", 8, "reserved", label="Reserved"),
    mad_uint("redirect_qp", 24), mad_uint("redirect_q_key", 32, "redirectqkey"),
    mad_gid("trap_gid"),
    mad_uint("trap_tc", 8), mad_uint("trap_sl", 4), mad_uint("trap_fl", 20),
    mad_uint("trap_lid", 16), mad_uint("trap_p_key", 16, "trappkey"),
    # Wireshark 4.0 shows TrapHL as classportinfo.reserved (a pinned difference).
    mad_uint("trap_hl", 8),
    mad_uint("trap_qp", 24), mad_uint("trap_q_key", 32, "trapqkey"),
])
CLASS_PORT_INFO = mad_layout("classportinfo", "ClassPortInfo", None, CPI_FIELDS)
# In an SMP only the first 64 of its 72 bytes fit the data area (up to TrapP_Key).
CLASS_PORT_INFO_SMP = mad_layout("classportinfo_smp", "ClassPortInfo (first 64 bytes)", None,
                                 CPI_FIELDS[:CPI_FIELDS.index(next(
                            f for f in CPI_FIELDS if f.name == "trap_hl"))])

NOTICE = mad_layout("notice", "Notice", "infiniband.notice", [
    mad_uint("is_generic", 1), mad_uint("type", 7),
    mad_uint("producer_type_vendor_id", 24),
    mad_uint("trap_number_device_id", 16),
    mad_uint("issuer_lid", 16),
    mad_uint("notice_toggle", 1), mad_uint("notice_count", 15),
])

_T = "infiniband.trap"
TRAP_GID = mad_layout("trap_gid", "Trap 64-67 DataDetails", _T, [
    mad_reserved_bits(48), mad_gid("gid_addr")], size=54)
TRAP_PATHS = mad_layout("trap_paths", "Trap 68/69 DataDetails", _T, [
    mad_uint("comp_mask", 64, "comp_mask"), mad_uint("wait_for_repath", 1, "wait_for_repath"),
    mad_reserved_bits(7)],
    size=54)
TRAP_128 = mad_layout("trap_128", "Trap 128 DataDetails", _T, [mad_uint("lid_addr", 16)], size=54)
TRAP_129 = mad_layout("trap_129", "Trap 129-131 DataDetails", _T, [
    mad_reserved_bits(16), mad_uint("lid_addr", 16), mad_uint("port_no", 8)], size=54)
TRAP_144 = mad_layout("trap_144", "Trap 144 DataDetails", _T, [
    mad_reserved_bits(16), mad_uint("lid_addr", 16), mad_reserved_bits(8), mad_reserved_bits(7),
    mad_uint("other_local_changes", 1),
    mad_uint("capability_mask", 32),
    mad_reserved_bits(10), mad_uint("capability_mask2_change", 1),
    mad_uint("hierarchy_info_change", 1),
    mad_uint("sm_priority_change", 1),
    mad_uint("link_speed_enabled_change", 1, "linkspeecenabledchange"),
    mad_uint("link_width_enabled_change", 1), mad_uint("node_description_change", 1),
    mad_uint("capability_mask2", 16)], size=54)
TRAP_145 = mad_layout("trap_145", "Trap 145 DataDetails", _T, [
    mad_reserved_bits(16), mad_uint("lid_addr", 16), mad_reserved_bits(16),
    mad_uint("system_image_guid", 64)], size=54)
TRAP_256 = mad_layout("trap_256", "Trap 256 DataDetails", _T, [
    mad_reserved_bits(16), mad_uint("lid_addr", 16), mad_uint("dr_slid", 16), mad_uint("method", 8),
    mad_reserved_bits(8),
    mad_uint("attribute_id", 16), mad_uint("attribute_modifier", 32), mad_uint("m_key", 64, "mkey"),
    mad_reserved_bits(8),
    mad_uint("dr_notice", 1), mad_uint("dr_path_truncated", 1), mad_uint("dr_hop_count", 6),
    mad_raw("dr_notice_return_path", 30)], size=54)
TRAP_257 = mad_layout("trap_257", "Trap 257/258 DataDetails", _T, [
    mad_reserved_bits(16), mad_uint("lid_addr1", 16), mad_uint("lid_addr2", 16),
    mad_uint("key", 32),
    mad_uint("sl", 4), mad_reserved_bits(4), mad_uint("qp1", 24), mad_reserved_bits(8),
    mad_uint("qp2", 24),
    mad_gid("gid_addr1"), mad_gid("gid_addr2")], size=54)
# Wireshark registers DataValid and SWLIDADDR as FT_IPv6 (2 bytes); we keep integers.
TRAP_259 = mad_layout("trap_259", "Trap 259 DataDetails", _T, [
    mad_uint("data_valid", 16), mad_uint("lid_addr1", 16), mad_uint("lid_addr2", 16),
    mad_uint("p_key", 16, "pkey"),
    mad_uint("sl", 4), mad_reserved_bits(4), mad_uint("qp1", 24), mad_reserved_bits(8),
    mad_uint("qp2", 24),
    mad_gid("gid_addr1"), mad_gid("gid_addr2"), mad_uint("sw_lid_addr", 16),
    mad_uint("port_no", 8)], size=54)
TRAP_DATA = mad_layout("trap_data", "DataDetails (vendor or unknown trap)", None, [
    mad_raw("data_details", 54, None)])

TRAP_LAYOUTS = {64: TRAP_GID, 65: TRAP_GID, 66: TRAP_GID, 67: TRAP_GID,
                68: TRAP_PATHS, 69: TRAP_PATHS, 128: TRAP_128, 129: TRAP_129,
                130: TRAP_129, 131: TRAP_129, 144: TRAP_144, 145: TRAP_145,
                256: TRAP_256, 257: TRAP_257, 258: TRAP_257, 259: TRAP_259}

INFORM_INFO_FIELDS = named("infiniband.informinfo", [
    mad_gid("gid"), mad_uint("lid_range_begin", 16), mad_uint("lid_range_end", 16), mad_reserved(2),
    mad_uint("is_generic", 8), mad_uint("subscribe", 8), mad_uint("type", 16),
    mad_uint("trap_number_device_id", 16),
    mad_uint("qpn", 24), mad_reserved_bits(3), mad_uint("resp_time_value", 5), mad_reserved(1),
    mad_uint("producer_type_vendor_id", 24),
])
INFORM_INFO = mad_layout("informinfo", "InformInfo", None, INFORM_INFO_FIELDS)


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
