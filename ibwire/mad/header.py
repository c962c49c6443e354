"""The common MAD header (IBA 13.4.3), the RMPP header (13.6.2.1) and the class
headers that sit between them and the attribute data: SMP (14.2.1.1-2), SA
(15.2.1.1), PerfMgt/DevMgt (40 reserved bytes), BaseboardMgt (B_Key), CC
(CC_Key, Annex A10) and vendor range 2 (OUI).

Bytes 4-7 of the common header are Status and ClassSpecific on the wire; a
directed-route SMP reads them as D / Status(15) / HopPointer / HopCount. Those
are overlays shown only for class 0x81, so one header layout serves every class
and building a MAD sets `status` and `class_specific` (see `build.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ibwire.constants import MAD_SIZE, MGMT_CLASS_SMP_DR
from ibwire.fields import BOOL, STRING, UINT64
from ibwire.mad._ctx import Ctx
from ibwire.mad._layout import (
    mad_derived,
    mad_gid,
    mad_layout,
    mad_overlay,
    mad_raw,
    mad_reserved,
    mad_uint,
)
from ibwire.mad.names import (
    CLASS_NAMES,
    INVALID_FIELD,
    METHOD_NAMES,
    RMPP_STATUS,
    RMPP_TYPES,
    attribute_name,
    status_text,
)

DR = MGMT_CLASS_SMP_DR


def _dr(v: Mapping[str, Any]) -> bool:
    return v["mgmt_class"] == DR


MAD_HEADER = mad_layout("mad", "MAD Header - Common Management Datagram", "infiniband.mad", [
    mad_uint("base_version", 8),
    mad_uint("mgmt_class", 8, values=CLASS_NAMES),
    mad_uint("class_version", 8),
    mad_uint("method", 8, values=METHOD_NAMES),
    mad_uint("status", 16),
    mad_uint("class_specific", 16),
    mad_uint("transaction_id", 64),
    mad_uint("attribute_id", 16),
    mad_reserved(2),
    mad_uint("attribute_modifier", 32),
    # Views of the method byte and the status word (ibwire names).
    mad_overlay("r", 24, 1, "response", ftype=BOOL, label="Response (R bit)"),
    mad_overlay("status_busy", 47, 1, "status.busy", ftype=BOOL),
    mad_overlay("status_redirect", 46, 1, "status.redirect", ftype=BOOL),
    mad_overlay("status_invalid_field", 43, 3, "status.invalidfield", values=INVALID_FIELD),
    mad_overlay("status_class", 32, 8, "status.classspecific"),
    mad_derived("attribute_name", lambda v: attribute_name(v["mgmt_class"], v["attribute_id"]),
                "attributename", ftype=STRING),
    mad_derived("status_text", lambda v: status_text(v["mgmt_class"], v["status"]), "statustext",
                ftype=STRING),
    # Directed-route SMP reading of bytes 4-7 (Wireshark's names; D is FT_UINT64 there).
    mad_overlay("d", 32, 1, "infiniband.smpdirected.d", ftype=UINT64, present=_dr,
                label="D (Direction Bit)"),
    mad_overlay("smp_status", 32, 16, "infiniband.smpdirected.smpstatus", present=_dr),
    mad_overlay("dr_status", 33, 15, "infiniband.smpdirected.status", present=_dr,
                label="Status (15 bits, without D)"),
    mad_overlay("hop_pointer", 48, 8, "infiniband.smpdirected.hoppointer", present=_dr),
    mad_overlay("hop_count", 56, 8, "infiniband.smpdirected.hopcount", present=_dr),
])


def _rmpp_type(*types: int):
    return lambda v: v["rmpp_type"] in types


def _not_data_ack(v: Mapping[str, Any]) -> bool:
    return v["rmpp_type"] not in (1, 2)


# Byte 26 is RRespTime (5 bits) + RMPPFlags (3 bits) as the IBA and libibmad have it;
# Wireshark 4.0 splits it 4/4 (a pinned difference).
RMPP = mad_layout("rmpp", "RMPP (Reliable Multi-Packet Transaction Protocol)", "infiniband.rmpp", [
    mad_uint("rmpp_version", 8),
    mad_uint("rmpp_type", 8, values=RMPP_TYPES),
    mad_uint("rresp_time", 5),
    mad_uint("rmpp_flags", 3),
    mad_uint("rmpp_status", 8, values=RMPP_STATUS),
    mad_uint("data1", 32, present=_not_data_ack),
    mad_uint("data2", 32, present=_not_data_ack),
    mad_overlay("segment_number", 32, 32, present=_rmpp_type(1, 2)),
    mad_overlay("payload_length", 64, 32, present=_rmpp_type(1)),
    mad_overlay("new_window_last", 64, 32, present=_rmpp_type(2)),
    mad_overlay("active", 23, 1, "flags.active", ftype=BOOL),
    mad_overlay("first", 22, 1, "flags.first", ftype=BOOL),
    mad_overlay("last", 21, 1, "flags.last", ftype=BOOL),
], container="infiniband.rmpp")

SA_HEADER = mad_layout("sa", "SA Header (Subnet Administration)", "infiniband.sa", [
    mad_uint("sm_key", 64),
    mad_uint("attribute_offset", 16),
    mad_reserved(2),
    mad_uint("component_mask", 64),
])

SMP_LID = mad_layout("smp_lid", "SMP (LID Routed)", "infiniband.smplid", [
    mad_uint("m_key", 64, "mkey"),
    mad_reserved(32),
])
SMP_LID_TAIL = mad_layout("smp_lid_tail", "SMP (LID Routed) reserved", None, [mad_reserved(128)])

# Wireshark shows the DR SMP M_Key under the LID-routed name.
SMP_DR = mad_layout("smp_dr", "SMP (Directed Route)", "infiniband.smpdirected", [
    mad_uint("m_key", 64, "infiniband.smplid.mkey"),
    mad_uint("dr_slid", 16),
    mad_uint("dr_dlid", 16),
    mad_reserved(28),
])
SMP_DR_PATHS = mad_layout("smp_dr_paths", "SMP (Directed Route) paths", "infiniband.smpdirected", [
    mad_raw("initial_path", 64),
    mad_raw("return_path", 64),
])

GSI_RESERVED = mad_layout("gsi_reserved", "Reserved (bytes 24-63)", None, [mad_reserved(40)])
BM_HEADER = mad_layout("bm", "Baseboard Management header", "infiniband.bm", [
    mad_uint("b_key", 64), mad_reserved(32)])
CC_HEADER = mad_layout("cc", "Congestion Control header", "infiniband.cc", [mad_uint("cc_key", 64)])
CC_RESERVED = mad_layout("cc_reserved", "Congestion Control reserved (bytes 32-63)", None, [
    mad_reserved(32)])
VENDOR2 = mad_layout("vendor2", "Vendor class (range 2) header", "infiniband.vendor2", [
    mad_reserved(1), mad_uint("oui", 24)])
NOTICE_ISSUER = mad_layout("notice_issuer", "Notice IssuerGID", "infiniband.notice", [
    mad_gid("issuer_gid")])


def take_rmpp(ctx: Ctx) -> dict | None:
    """The RMPP header, with Wireshark's views of the 220 bytes after it."""
    rmpp = ctx.take(RMPP)
    if rmpp is not None:
        kind = rmpp["rmpp_type"]
        if kind == 1:
            ctx.extra("infiniband.rmpp.transferreddata", 36, MAD_SIZE)
        elif kind in (3, 4):
            ctx.extra("infiniband.rmpp.extendederrordata", 36, MAD_SIZE)
    return rmpp


def add_containers(ctx: Ctx, *names_ranges: tuple[str, int, int]) -> None:
    """Wireshark's subtree items (byte ranges relative to the MAD start) as extras."""
    for name, lo, hi in names_ranges:
        ctx.extra(name, lo, hi)


def decode_opaque(ctx: Ctx) -> None:
    """Classes whose data we keep as bytes: SNMP, vendor range 1, application,
    reserved classes (data at byte 24)."""
    add_containers(ctx, ("infiniband.smplid.smpdata", 24, MAD_SIZE))
    ctx.fill(MAD_SIZE, "data")


def decode_vendor2(ctx: Ctx) -> None:
    """Vendor range 2: RMPP header, OUI, then 216 bytes of vendor data."""
    add_containers(ctx, ("infiniband.smplid.smpdata", 24, MAD_SIZE))
    if take_rmpp(ctx) is not None and ctx.take(VENDOR2) is not None:
        ctx.fill(MAD_SIZE, "data")


def decode_bm(ctx: Ctx) -> None:
    add_containers(ctx, ("infiniband.smplid.smpdata", 24, MAD_SIZE))
    if ctx.take(BM_HEADER) is not None:
        ctx.fill(MAD_SIZE, "data")


def decode_dm(ctx: Ctx) -> None:
    add_containers(ctx, ("infiniband.smplid.smpdata", 24, MAD_SIZE))
    if ctx.take(GSI_RESERVED) is not None:
        ctx.fill(MAD_SIZE, "data")
