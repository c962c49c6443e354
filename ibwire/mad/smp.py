"""Subnet Management Packets (IBA 14.2): LID-routed (class 0x01) and directed-route
(class 0x81) bodies and the SMP attributes (14.2.5).

Attributes are laid out from the specification (libibmad `fields.c` offsets); the
public names are Wireshark's where it has the field (`infiniband.portinfo.*` ...,
GUIDInfo entries as Wireshark's `infiniband.switchinfo.guid`), ibwire names in the
same style otherwise (PortInfo CapabilityMask2, LinkSpeedExt*, ...). Tables
(P_Key, LFT, GUIDInfo, ...) are one layer per entry, so `pkt.values_of(name)`
lists every entry in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ibwire.constants import MAD_SIZE
from ibwire.fields import UINT16, UINT32
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad._layout import (
    mad_derived,
    mad_layout,
    mad_overlay,
    mad_raw,
    mad_reserved_bits,
    mad_text,
    mad_uint,
    named,
)
from ibwire.mad.general import CLASS_PORT_INFO_SMP, INFORM_INFO, notice_smp
from ibwire.mad.header import SMP_DR, SMP_DR_PATHS, SMP_LID, SMP_LID_TAIL, add_containers
from ibwire.mad.names import MTUS, NODE_TYPES, PHYS_STATES, PORT_STATES, SM_STATES, VL_CAPS

NODE_DESCRIPTION = mad_layout("nodedescription", "NodeDescription", "infiniband.nodedescription", [
    mad_text("node_string", 64)])

NODE_INFO_FIELDS = named("infiniband.nodeinfo", [
    mad_uint("base_version", 8), mad_uint("class_version", 8),
    mad_uint("node_type", 8, values=NODE_TYPES),
    mad_uint("num_ports", 8), mad_uint("system_image_guid", 64), mad_uint("node_guid", 64),
    mad_uint("port_guid", 64),
    mad_uint("partition_cap", 16), mad_uint("device_id", 16), mad_uint("revision", 32),
    mad_uint("local_port_num", 8),
    mad_uint("vendor_id", 24),
])
NODE_INFO = mad_layout("nodeinfo", "NodeInfo", None, NODE_INFO_FIELDS)

SWITCH_INFO_FIELDS = named("infiniband.switchinfo", [
    mad_uint("linear_fdb_cap", 16), mad_uint("random_fdb_cap", 16),
    mad_uint("multicast_fdb_cap", 16),
    mad_uint("linear_fdb_top", 16), mad_uint("default_port", 8),
    mad_uint("default_multicast_primary_port", 8),
    mad_uint("default_multicast_not_primary_port", 8), mad_uint("life_time_value", 5),
    mad_uint("port_state_change", 1), mad_uint("optimized_sl_to_vl_mapping_programming", 2),
    mad_uint("lids_per_port", 16), mad_uint("partition_enforcement_cap", 16),
    mad_uint("inbound_enforcement_cap", 1), mad_uint("outbound_enforcement_cap", 1),
    mad_uint("filter_raw_inbound_cap", 1), mad_uint("filter_raw_outbound_cap", 1),
    mad_uint("enhanced_port_zero", 1), mad_reserved_bits(3), mad_reserved_bits(8),
    mad_uint("multicast_fdb_top", 16),
])
SWITCH_INFO = mad_layout("switchinfo", "SwitchInfo", None, SWITCH_INFO_FIELDS)

# CapabilityMask bit -> public name suffix (Wireshark's, ibwire's for bits it lacks).
CAPABILITY_BITS = {
    1: "issm", 2: "noticesupported", 3: "trapsupported", 4: "optionalipdsupported",
    5: "automaticmigrationsupported", 6: "slmappingsupported", 7: "mkeynvram",
    8: "pkeynvram", 9: "ledinfosupported", 10: "smdisabled",
    11: "systemimageguidsupported", 12: "pkeyswitchexternalporttrapsupported",
    13: "cableinfosupported", 14: "extendedspeedssupported",
    15: "capabilitymask2supported", 16: "communicationmanagementsupported",
    17: "snmptunnelingsupported", 18: "reinitsupported", 19: "devicemanagementsupported",
    20: "vendorclasssupported", 21: "drnoticesupported",
    22: "capabilitymasknoticesupported", 23: "bootmanagementsupported",
    24: "linkroundtriplatencysupported", 25: "clientregistrationsupported",
    26: "otherlocalchangesnoticesupported", 27: "linkspeedwidthpairstablesupported",
    28: "vendorspecificmadstablesupported", 29: "mcastpkeytrapsuppressionsupported",
    30: "multicastfdbtopsupported", 31: "hierarchyinfosupported",
}
CAPABILITY2_BITS = {0: "setnodedescriptionsupported", 1: "portinfoextendedsupported",
                    2: "virtualizationsupported", 3: "switchportstatetablesupported",
                    4: "linkwidth2xsupported", 5: "linkspeedhdrsupported",
                    10: "linkspeedndrsupported"}

_PI = "infiniband.portinfo"
PORT_INFO_FIELDS = named(_PI, [
    mad_uint("m_key", 64, "m_key"), mad_uint("gid_prefix", 64, "guid", label="GidPrefix"),
    mad_uint("lid", 16), mad_uint("master_sm_lid", 16), mad_uint("capability_mask", 32),
    mad_uint("diag_code", 16), mad_uint("m_key_lease_period", 16, "m_keyleaseperiod"),
    mad_uint("local_port_num", 8), mad_uint("link_width_enabled", 8),
    mad_uint("link_width_supported", 8),
    mad_uint("link_width_active", 8),
    mad_uint("link_speed_supported", 4), mad_uint("port_state", 4, values=PORT_STATES),
    mad_uint("port_physical_state", 4, values=PHYS_STATES), mad_uint("link_down_default_state", 4),
    mad_uint("m_key_protect_bits", 2, "m_keyprotectbits"), mad_reserved_bits(3), mad_uint("lmc", 3),
    mad_uint("link_speed_active", 4), mad_uint("link_speed_enabled", 4),
    mad_uint("neighbor_mtu", 4, values=MTUS), mad_uint("master_sm_sl", 4),
    mad_uint("vl_cap", 4, values=VL_CAPS), mad_uint("init_type", 4),
    mad_uint("vl_high_limit", 8), mad_uint("vl_arbitration_high_cap", 8),
    mad_uint("vl_arbitration_low_cap", 8),
    mad_uint("init_type_reply", 4), mad_uint("mtu_cap", 4, values=MTUS),
    mad_uint("vl_stall_count", 3), mad_uint("hoq_life", 5),
    mad_uint("operational_vls", 4, values=VL_CAPS), mad_uint("partition_enforcement_inbound", 1),
    mad_uint("partition_enforcement_outbound", 1), mad_uint("filter_raw_inbound", 1),
    mad_uint("filter_raw_outbound", 1),
    mad_uint("m_key_violations", 16, "m_keyviolations"),
    mad_uint("p_key_violations", 16, "p_keyviolations"),
    mad_uint("q_key_violations", 16, "q_keyviolations"),
    mad_uint("guid_cap", 8), mad_uint("client_reregister", 1),
    mad_uint("multicast_p_key_trap_suppression_enabled", 2), mad_uint("subnet_timeout", 5),
    mad_reserved_bits(3), mad_uint("resp_time_value", 5),
    mad_uint("local_phy_errors", 4), mad_uint("overrun_errors", 4), mad_uint("max_credit_hint", 16),
    mad_reserved_bits(1), mad_uint("link_speed_ext_active2", 2),
    mad_uint("link_speed_ext_supported2", 2),
    mad_uint("link_speed_ext_enabled2", 3),
    mad_uint("link_round_trip_latency", 24),
    mad_uint("capability_mask2", 16),
    mad_uint("link_speed_ext_active", 4), mad_uint("link_speed_ext_supported", 4),
    mad_reserved_bits(3), mad_uint("link_speed_ext_enabled", 5),
])


def _cap_bits(base_bit: int, width: int, bits: Mapping[int, str], prefix: str,
              ftype: str) -> list:
    return [mad_overlay(f"cap_{name}", base_bit + width - 1 - bit, 1, f"{prefix}.{name}",
                        ftype=ftype)
            for bit, name in bits.items()]


def portinfo_overlays(base_bit: int = 0) -> list:
    """Capability bits as views of CapabilityMask / CapabilityMask2 (bit offsets
    relative to the start of the PortInfo inside the layout)."""
    return (_cap_bits(base_bit + 160, 32, CAPABILITY_BITS, f"{_PI}.capabilitymask", UINT32)
            + _cap_bits(base_bit + 480, 16, CAPABILITY2_BITS, f"{_PI}.capabilitymask2",
                        UINT16))


PORT_INFO = mad_layout("portinfo", "PortInfo", None, PORT_INFO_FIELDS + portinfo_overlays())


def _pkey(v: Mapping[str, Any]) -> int:
    return (v["membership_type"] << 15) | v["p_key_base"]


PKEY_ENTRY = mad_layout("pkey_entry", "P_Key", "infiniband.p_keytable", [
    mad_uint("membership_type", 1), mad_uint("p_key_base", 15, "p_keybase"),
    mad_derived("p_key", _pkey, "p_key", ftype=UINT16, base="hex", label="P_Key")])
SL2VL_ENTRY = mad_layout("sl2vl_entry", "SLtoVL pair", "infiniband.sltovlmappingtable", [
    mad_uint("sl_to_vl_high", 4, "sltovlhighbits"), mad_uint("sl_to_vl_low", 4, "sltovllowbits")])
VLARB_ENTRY = mad_layout("vlarb_entry", "VLArbitration entry", "infiniband.vlarbitrationtable", [
    mad_reserved_bits(4), mad_uint("vl", 4), mad_uint("weight", 8)])
LFT_ENTRY = mad_layout("lft_entry", "LinearForwardingTable entry",
                       "infiniband.linearforwardingtable", [mad_uint("port", 8)])
RFT_ENTRY = mad_layout("rft_entry", "RandomForwardingTable entry",
                       "infiniband.randomforwardingtable", [
    mad_uint("lid", 16), mad_uint("valid", 1), mad_uint("lmc", 3), mad_reserved_bits(4),
    mad_uint("port", 8)])
MFT_ENTRY = mad_layout("mft_entry", "MulticastForwardingTable entry",
                       "infiniband.multicastforwardingtable", [mad_uint("port_mask", 16)])
# Wireshark names the GUIDInfo entries after SwitchInfo.
GUID_ENTRY = mad_layout("guid_entry", "GUIDInfo entry", None, [
    mad_uint("guid", 64, "infiniband.switchinfo.guid")])

SM_INFO_FIELDS = named("infiniband.sminfo", [
    mad_uint("guid", 64), mad_uint("sm_key", 64, "sm_key"), mad_uint("act_count", 32),
    mad_uint("priority", 4),
    mad_uint("sm_state", 4, values=SM_STATES)])
SM_INFO = mad_layout("sminfo", "SMInfo", None, SM_INFO_FIELDS)
VENDOR_DIAG = mad_layout("vendordiag", "VendorDiag", "infiniband.vendordiag", [
    mad_uint("next_index", 16), mad_raw("diag_data", 62)])
LED_INFO = mad_layout("ledinfo", "LedInfo", "infiniband.ledinfo", [
    mad_uint("led_mask", 1), mad_reserved_bits(31)])


def _pkeys(ctx: Ctx, limit: int) -> None:
    ctx.extra("infiniband.p_keytable.p_keytableblock", ctx.rel, ctx.rel + 64)
    ctx.parts([(PKEY_ENTRY, 32)], limit)


# Attribute ID -> parts of its data (the rest of the 64-byte area is reserved).
SMP_ATTRIBUTES: dict[int, tuple[Part, ...]] = {
    0x0001: (CLASS_PORT_INFO_SMP,),
    0x0002: (notice_smp,),
    0x0003: (INFORM_INFO,),
    0x0010: (NODE_DESCRIPTION,),
    0x0011: (NODE_INFO,),
    0x0012: (SWITCH_INFO,),
    0x0014: ((GUID_ENTRY, 8),),
    0x0015: (PORT_INFO,),
    0x0016: (_pkeys,),
    0x0017: ((SL2VL_ENTRY, 8),),
    0x0018: ((VLARB_ENTRY, 32),),
    0x0019: ((LFT_ENTRY, 64),),
    0x001A: ((RFT_ENTRY, 16),),
    0x001B: ((MFT_ENTRY, 32),),
    0x0020: (SM_INFO,),
    0x0030: (VENDOR_DIAG,),
    0x0031: (LED_INFO,),
}
SMP_DATA = 64


def smp_attribute(ctx: Ctx, attribute_id: int) -> None:
    """The 64-byte SMP data area: a known attribute, or opaque data (vendor 0xFFxx)."""
    parts = SMP_ATTRIBUTES.get(attribute_id)
    if parts is None:
        ctx.area(SMP_DATA, (), kind="data")
    else:
        ctx.area(SMP_DATA, parts)


def decode_lid(ctx: Ctx) -> None:
    """M_Key, 32 reserved bytes, 64-byte data, 128 reserved bytes."""
    ctx.extra("infiniband.smplid", 0, MAD_SIZE)
    ctx.extra("infiniband.smplid.smpdata", 64, 128)
    if ctx.take(SMP_LID) is None:
        return
    smp_attribute(ctx, ctx.hdr["attribute_id"])
    ctx.take(SMP_LID_TAIL)


def decode_dr(ctx: Ctx) -> None:
    """M_Key, DrSLID, DrDLID, 28 reserved bytes, data, InitialPath, ReturnPath."""
    add_containers(ctx, ("infiniband.smpdirected", 0, MAD_SIZE),
                   ("infiniband.smplid.smpdata", 64, 128))
    if ctx.take(SMP_DR) is None:
        return
    smp_attribute(ctx, ctx.hdr["attribute_id"])
    ctx.take(SMP_DR_PATHS)
