"""Performance Management (class 0x04, IBA 16.1): 40 reserved bytes after the
common header, then 192 bytes of attribute data.

PortCounters follows libibmad/OpenSM and the current specification: byte 18 is
CounterSelect2, bytes 20-21 QP1Dropped and bytes 40-43 PortXmitWait, where
Wireshark 4.0 shows reserved bytes and stops at byte 39 (pinned differences).
PortCountersExtended includes CounterSelect2 (bytes 4-7) and the 64-bit error
counters of bytes 72-183 (libibmad `IB_PC_EXT_ERR_*`), which Wireshark does not
decode. Counter values print in decimal, like Wireshark's and perfquery's.
"""

from __future__ import annotations

from ibwire.fields import NONE, REGISTRY
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad._layout import mad_layout, mad_reserved, mad_reserved_bits, mad_uint, mad_uint_dec
from ibwire.mad.general import CLASS_PORT_INFO
from ibwire.mad.header import GSI_RESERVED

_PC = "infiniband.portcounters"
PORT_COUNTERS = mad_layout("portcounters", "PortCounters", _PC, [
    mad_reserved(1), mad_uint("port_select", 8), mad_uint("counter_select", 16),
    mad_uint_dec("symbol_error_counter", 16), mad_uint_dec("link_error_recovery_counter", 8),
    mad_uint_dec("link_downed_counter", 8), mad_uint_dec("port_rcv_errors", 16),
    mad_uint_dec("port_rcv_remote_physical_errors", 16),
    mad_uint_dec("port_rcv_switch_relay_errors", 16),
    mad_uint_dec("port_xmit_discards", 16), mad_uint_dec("port_xmit_constraint_errors", 8),
    mad_uint_dec("port_rcv_constraint_errors", 8),
    mad_uint("counter_select2", 8),
    mad_uint_dec("local_link_integrity_errors", 4),
    mad_uint_dec("excessive_buffer_overrun_errors", 4),
    mad_uint_dec("qp1_dropped", 16), mad_uint_dec("vl15_dropped", 16),
    mad_uint_dec("port_xmit_data", 32), mad_uint_dec("port_rcv_data", 32),
    mad_uint_dec("port_xmit_pkts", 32),
    mad_uint_dec("port_rcv_pkts", 32), mad_uint_dec("port_xmit_wait", 32),
])

_EXT_COUNTERS = ["port_xmit_data", "port_rcv_data", "port_xmit_pkts", "port_rcv_pkts",
                 "port_unicast_xmit_pkts", "port_unicast_rcv_pkts",
                 "port_multicast_xmit_pkts", "port_multicast_rcv_pkts",
                 "symbol_error_counter", "link_error_recovery_counter",
                 "link_downed_counter", "port_rcv_errors", "port_rcv_remote_physical_errors",
                 "port_rcv_switch_relay_errors", "port_xmit_discards",
                 "port_xmit_constraint_errors", "port_rcv_constraint_errors",
                 "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                 "vl15_dropped", "port_xmit_wait", "qp1_dropped"]
PORT_COUNTERS_EXT = mad_layout("portcounters_ext", "PortCountersExtended",
                               "infiniband.portcounters_ext", [
    mad_reserved(1), mad_uint("port_select", 8), mad_uint("counter_select", 16),
    mad_uint("counter_select2", 32),
    *(mad_uint_dec(name, 64) for name in _EXT_COUNTERS),
])

_PSC = "infiniband.portsamplescontrol"
PORT_SAMPLES_CONTROL = mad_layout("portsamplescontrol", "PortSamplesControl", _PSC, [
    mad_uint("op_code", 8), mad_uint("port_select", 8), mad_uint("tick", 8), mad_reserved_bits(5),
    mad_uint("counter_width", 3),
    mad_reserved_bits(2), mad_uint("counter_mask0", 3), mad_uint("counter_masks1to9", 27),
    mad_reserved_bits(1), mad_uint("counter_masks10to14", 15),
    mad_uint("sample_mechanisms", 8), mad_reserved_bits(6), mad_uint("sample_status", 2),
    mad_uint("option_mask", 64), mad_uint("vendor_mask", 64),
    mad_uint_dec("sample_start", 32), mad_uint_dec("sample_interval", 32), mad_uint("tag", 16),
    *(mad_uint(f"counter_select{i}", 16) for i in range(15)),
    mad_reserved_bits(32), mad_uint("samples_only_option_mask", 64),
])
PORT_SAMPLES_RESULT = mad_layout("portsamplesresult", "PortSamplesResult",
                                 "infiniband.portsamplesresult", [
    mad_uint("tag", 16), mad_reserved_bits(14), mad_uint("sample_status", 2),
    *(mad_uint_dec(f"counter{i}", 32) for i in range(15)),
])
PORT_RCV_ERROR_DETAILS = mad_layout("portrcverrordetails", "PortRcvErrorDetails",
                                    "infiniband.portrcverrordetails", [
    mad_reserved_bits(8), mad_uint("port_select", 8), mad_uint("counter_select", 16),
    mad_uint_dec("port_local_physical_errors", 16),
    mad_uint_dec("port_malformed_packet_errors", 16),
    mad_uint_dec("port_buffer_overrun_errors", 16), mad_uint_dec("port_dlid_mapping_errors", 16),
    mad_uint_dec("port_vl_mapping_errors", 16), mad_uint_dec("port_looping_errors", 16),
])
PORT_XMIT_DISCARD_DETAILS = mad_layout("portxmitdiscarddetails", "PortXmitDiscardDetails",
                                       "infiniband.portxmitdiscarddetails", [
    mad_reserved_bits(8), mad_uint("port_select", 8), mad_uint("counter_select", 16),
    mad_uint_dec("port_inactive_discards", 16), mad_uint_dec("port_neighbor_mtu_discards", 16),
    mad_uint_dec("port_sw_lifetime_limit_discards", 16),
    mad_uint_dec("port_sw_hoq_lifetime_limit_discards", 16),
])

PERF_ATTRIBUTES: dict[int, tuple[Part, ...]] = {
    0x0001: (CLASS_PORT_INFO,),
    0x0010: (PORT_SAMPLES_CONTROL,),
    0x0011: (PORT_SAMPLES_RESULT,),
    0x0012: (PORT_COUNTERS,),
    0x0015: (PORT_RCV_ERROR_DETAILS,),
    0x0016: (PORT_XMIT_DISCARD_DETAILS,),
    0x001D: (PORT_COUNTERS_EXT,),
}
PERF_DATA = 192
# Wireshark's FT_NONE subtree items for the PerfMgt attributes it decodes.
_SUBTREES = {0x0001: ("infiniband.classportinfo", CLASS_PORT_INFO),
             0x0012: (_PC, PORT_COUNTERS),
             0x001D: ("infiniband.portcounters_ext", PORT_COUNTERS_EXT)}
for _name, _lay in _SUBTREES.values():
    REGISTRY.add(_name, NONE, f"{_lay.label} (Performance Management MAD)")


def decode(ctx: Ctx) -> None:
    """40 reserved bytes, then the attribute in a 192-byte data area."""
    attr = ctx.hdr["attribute_id"]
    if attr in _SUBTREES:
        name, lay = _SUBTREES[attr]
        ctx.extra(name, 64, 64 + lay.size)
    else:
        ctx.extra("infiniband.smplid.smpdata", 24, 256)
    if ctx.take(GSI_RESERVED) is None:
        return
    parts = PERF_ATTRIBUTES.get(attr)
    ctx.area(PERF_DATA, parts or (), kind="pad" if parts else "data")
