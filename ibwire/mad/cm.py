"""Communication Management (class 0x07, IBA 12.6): the CM messages in the 232
bytes after the common header, and the IP CM private data (Annex A11).

Names are Wireshark's where it decodes the message (REQ, REP, RTU, REJ, DREQ,
DREP), with its quirks mirrored: the REQ/REP LocalCommID fields are
`infiniband.cm.req` / `infiniband.cm.rep`, DREQ's RemoteQPN is
`infiniband.cm.req.remoteqpneecn`, DREP is `cm.drsp`, and the REQ alternate-path
byte 139 low bits reuse `alt_reserved1`. MRA, SIDR_REQ/REP, LAP and APR (which
Wireshark 4.0 does not decode) get `infiniband.cm.<msg>.*` names in that style.

REQ primary GIDs that are IPv4-mapped (RoCEv2 over IPv4) also show as IPv4
addresses (`prim_localgid_ipv4`), as Wireshark does; it decides by the packet's
IP version, we by the GID, which agree on RoCEv2 and native InfiniBand.
Flow label, reserved bits and packet rate share one 32-bit word (REQ bytes 88-91
and 132-135); we read them from that word as the specification lays it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ibwire.constants import MAD_SIZE
from ibwire.fields import BYTES, UINT32
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad._layout import (
    ipv4_tail,
    mad_derived,
    mad_gid,
    mad_layout,
    mad_overlay,
    mad_raw,
    mad_reserved,
    mad_reserved_bits,
    mad_uint,
    mad_uint_dec,
)
from ibwire.mad.general import CLASS_PORT_INFO
from ibwire.mad.names import (
    CM_APR_STATUS,
    CM_MSG_KINDS,
    CM_REJ_REASONS,
    CM_SIDR_STATUS,
    MTUS,
    RATES,
)

IP_CM_SID_MASK, IP_CM_SID_PREFIX = 0xFFFFFFFFFF000000, 0x0000000001000000
V4_MAPPED = bytes(10) + b"\xff\xff"


def is_ip_cm(service_id: int) -> bool:
    return service_id & IP_CM_SID_MASK == IP_CM_SID_PREFIX


def _ip_sid(v: Mapping[str, Any]) -> bool:
    return is_ip_cm(v["service_id"])


def _mapped(name: str):
    return lambda v: bytes(v[name][:12]) == V4_MAPPED


def _not_mapped(name: str):
    return lambda v: bytes(v[name][:12]) != V4_MAPPED


def _prim_gid(name: str, ws: str):
    return mad_gid(name, ws, present=_not_mapped(name))


def _alt_gid(name: str, ws: str):
    return mad_raw(name, 16, ws)


def _req_path(side: str, ws: str, gid, last: str) -> list:
    """One REQ path (primary or alternate, IBA 12.6.5): the same fields named
    `side`_* and, in Wireshark, `ws`_*; `last`: Wireshark's name of reserved2."""
    return [
        mad_uint_dec(f"{side}_local_lid", 16, f"{ws}_locallid"),
        mad_uint_dec(f"{side}_remote_lid", 16, f"{ws}_remotelid"),
        gid(f"{side}_local_gid", f"{ws}_localgid"),
        gid(f"{side}_remote_gid", f"{ws}_remotegid"),
        mad_uint(f"{side}_flow_label", 20, f"{ws}_flowlabel", ftype=UINT32),
        mad_uint(f"{side}_reserved0", 6, f"{ws}_reserved0", ftype=UINT32),
        mad_uint(f"{side}_packet_rate", 6, f"{ws}_pktrate", ftype=UINT32, values=RATES),
        mad_uint(f"{side}_traffic_class", 8, f"{ws}_tfcclass"),
        mad_uint(f"{side}_hop_limit", 8, f"{ws}_hoplim"),
        mad_uint(f"{side}_sl", 4, f"{ws}_sl"),
        mad_uint(f"{side}_subnet_local", 1, f"{ws}_subnetlocal"),
        mad_uint(f"{side}_reserved1", 3, f"{ws}_reserved1"),
        mad_uint(f"{side}_local_ack_timeout", 5, f"{ws}_localacktout"),
        mad_uint(f"{side}_reserved2", 3, last),
    ]


_REQ = "infiniband.cm.req"
CM_REQ = mad_layout("cm_req", "CM ConnectRequest", _REQ, [
    mad_uint("local_comm_id", 32, "infiniband.cm.req"), mad_reserved(4),
    mad_uint("service_id", 64),
    mad_uint("local_ca_guid", 64), mad_reserved(4), mad_uint("local_q_key", 32, "localqkey"),
    mad_uint("local_qpn", 24), mad_uint("responder_resources", 8, "responderres"),
    mad_uint("local_eecn", 24), mad_uint("initiator_depth", 8, "initdepth"),
    mad_uint("remote_eecn", 24),
    mad_uint("remote_cm_response_timeout", 5, "remoteresptout"),
    mad_uint("transport_service_type", 2, "transpsvctype"),
    mad_uint("end_to_end_flow_control", 1, "e2eflowctrl"),
    mad_uint("starting_psn", 24, "startpsn"),
    mad_uint("local_cm_response_timeout", 5, "localresptout"),
    mad_uint("retry_count", 3, "retrcount"),
    mad_uint("p_key", 16, "pkey"), mad_uint("path_mtu", 4, "pppmtu", values=MTUS),
    mad_uint("rdc_exists", 1, "rdcexist"), mad_uint("rnr_retry_count", 3, "rnrretrcount"),
    mad_uint("max_cm_retries", 4, "maxcmretr"), mad_uint("srq", 1),
    mad_uint("extended_transport_type", 3, "ext_transport"),
    *_req_path("primary", "prim", _prim_gid, "prim_reserved2"),
    *_req_path("alternate", "alt", _alt_gid, "alt_reserved1"),  # Wireshark reuses reserved1
    # IP CM ServiceID parts (Annex A11.2), only when the prefix selects IP CM.
    mad_derived("service_id_prefix", lambda v: (v["service_id"] >> 24).to_bytes(5, "big"),
                "serviceid.prefix", ftype=BYTES, present=_ip_sid),
    mad_overlay("service_id_protocol", 104, 8, "serviceid.protocol", present=_ip_sid),
    mad_overlay("service_id_dport", 112, 16, "serviceid.dport", present=_ip_sid),
    ipv4_tail("primary_local_gid_ipv4", "primary_local_gid", _mapped("primary_local_gid"),
              "prim_localgid_ipv4"),
    ipv4_tail("primary_remote_gid_ipv4", "primary_remote_gid",
              _mapped("primary_remote_gid"), "prim_remotegid_ipv4"),
])
CM_REQ_PRIVATE = mad_layout("cm_req_private", "CM REQ PrivateData", _REQ, [mad_raw("private", 92)])


def _ipv(n: int, equal: bool):
    return (lambda v: v["ipv"] == n) if equal else (lambda v: v["ipv"] != n)


_IPCM = "infiniband.cm.req.ip_cm"
CM_REQ_IP_CM = mad_layout("cm_req_ipcm", "IP CM Request Msg", _IPCM, [
    mad_uint("majv", 4), mad_uint("minv", 4), mad_uint("ipv", 4),
    mad_uint("reserved0", 4, "reserved"),
    mad_uint("sport", 16),
    mad_gid("sip", "sip6", present=_ipv(4, False)), mad_gid("dip", "dip6", present=_ipv(4, False)),
    mad_raw("private", 56),
    ipv4_tail("sip4", "sip", _ipv(4, True)), ipv4_tail("dip4", "dip", _ipv(4, True)),
], container=_IPCM)

_REP = "infiniband.cm.rep"
CM_REP = mad_layout("cm_rep", "CM ConnectReply", _REP, [
    mad_uint("local_comm_id", 32, _REP), mad_uint("remote_comm_id", 32),
    mad_uint("local_q_key", 32, "localqkey"),
    mad_uint("local_qpn", 24), mad_reserved(1), mad_uint("local_eecn", 24, "localeecn"),
    mad_reserved(1),
    mad_uint("starting_psn", 24, "startpsn"), mad_reserved(1),
    mad_uint("responder_resources", 8, "respres"), mad_uint("initiator_depth", 8, "initdepth"),
    mad_uint("target_ack_delay", 5, "tgtackdelay"), mad_uint("failover_accepted", 2, "failoveracc"),
    mad_uint("end_to_end_flow_control", 1, "e2eflowctrl"),
    mad_uint("rnr_retry_count", 3, "rnrretrcount"), mad_uint("srq", 1),
    mad_uint("reserved0", 4, "reserved"),
    mad_uint("local_ca_guid", 64), mad_raw("private", 196),
])
CM_RTU = mad_layout("cm_rtu", "CM ReadyToUse", "infiniband.cm.rtu", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32), mad_raw("private", 224)])
CM_REJ = mad_layout("cm_rej", "CM ConnectReject", "infiniband.cm.rej", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32),
    mad_uint("message_rejected", 2, "msgrej", values=CM_MSG_KINDS), mad_uint("reserved0", 6),
    mad_uint("reject_info_length", 7, "rejinfolen"), mad_uint("reserved1", 1),
    mad_uint("reason", 16, values=CM_REJ_REASONS), mad_raw("ari", 72), mad_raw("private", 148)])
CM_DREQ = mad_layout("cm_dreq", "CM DisconnectRequest", "infiniband.cm.dreq", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32),
    mad_uint("remote_qpn_eecn", 24, "infiniband.cm.req.remoteqpneecn"), mad_reserved(1),
    mad_raw("private", 220)])
CM_DREP = mad_layout("cm_drep", "CM DisconnectReply", "infiniband.cm.drsp", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32), mad_raw("private", 224)])
CM_MRA = mad_layout("cm_mra", "CM MsgRcptAck", "infiniband.cm.mra", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32),
    mad_uint("message_mraed", 2, values=CM_MSG_KINDS), mad_reserved_bits(6),
    mad_uint("service_timeout", 5), mad_reserved_bits(3),
    mad_raw("private", 222)])
CM_SIDR_REQ = mad_layout("cm_sidr_req", "CM ServiceIDResReq", "infiniband.cm.sidr_req", [
    mad_uint("request_id", 32), mad_uint("p_key", 16, "pkey"), mad_reserved_bits(16),
    mad_uint("service_id", 64),
    mad_raw("private", 216)])
CM_SIDR_REP = mad_layout("cm_sidr_rep", "CM ServiceIDResReqResp", "infiniband.cm.sidr_rep", [
    mad_uint("request_id", 32), mad_uint("status", 8, values=CM_SIDR_STATUS),
    mad_uint("additional_info_length", 8, "addinfolen"), mad_reserved_bits(16), mad_uint("qpn", 24),
    mad_reserved_bits(8),
    mad_uint("service_id", 64), mad_uint("q_key", 32, "qkey"),
    mad_raw("class_port_info", 72, "addinfo"),
    mad_raw("private", 136)])
CM_LAP = mad_layout("cm_lap", "CM LoadAlternatePath", "infiniband.cm.lap", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32), mad_reserved_bits(32),
    mad_uint("remote_qpn_eecn", 24), mad_uint("remote_cm_response_timeout", 5),
    mad_reserved_bits(3), mad_reserved_bits(32),
    mad_uint_dec("alternate_local_lid", 16, "alt_locallid"),
    mad_uint_dec("alternate_remote_lid", 16, "alt_remotelid"),
    mad_gid("alternate_local_gid", "alt_localgid"),
    mad_gid("alternate_remote_gid", "alt_remotegid"),
    mad_uint("alternate_flow_label", 20, "alt_flowlabel"), mad_reserved_bits(4),
    mad_uint("alternate_traffic_class", 8, "alt_tfcclass"),
    mad_uint("alternate_hop_limit", 8, "alt_hoplim"),
    mad_reserved_bits(2), mad_uint("alternate_packet_rate", 6, "alt_pktrate", values=RATES),
    mad_uint("alternate_sl", 4, "alt_sl"), mad_uint("alternate_subnet_local", 1, "alt_subnetlocal"),
    mad_reserved_bits(3),
    mad_uint("alternate_local_ack_timeout", 5, "alt_localacktout"), mad_reserved_bits(3),
    mad_raw("private", 168)])
CM_APR = mad_layout("cm_apr", "CM AlternatePathResponse", "infiniband.cm.apr", [
    mad_uint("local_comm_id", 32), mad_uint("remote_comm_id", 32),
    mad_uint("additional_info_length", 8, "addinfolen"),
    mad_uint("ap_status", 8, values=CM_APR_STATUS),
    mad_reserved_bits(16), mad_raw("additional_info", 72, "addinfo"), mad_raw("private", 148)])


def _req_private(ctx: Ctx, limit: int) -> None:
    req = ctx.pkt.layers[-1].values
    ctx.parts((CM_REQ_IP_CM if is_ip_cm(req["service_id"]) else CM_REQ_PRIVATE,), limit)


CM_MESSAGES: dict[int, tuple[Part, ...]] = {
    0x0001: (CLASS_PORT_INFO,),
    0x0010: (CM_REQ, _req_private),
    0x0011: (CM_MRA,),
    0x0012: (CM_REJ,),
    0x0013: (CM_REP,),
    0x0014: (CM_RTU,),
    0x0015: (CM_DREQ,),
    0x0016: (CM_DREP,),
    0x0017: (CM_SIDR_REQ,),
    0x0018: (CM_SIDR_REP,),
    0x0019: (CM_LAP,),
    0x001A: (CM_APR,),
}
CM_DATA = MAD_SIZE - 24


def decode(ctx: Ctx) -> None:
    """The message fills the 232 bytes after the common header."""
    ctx.extra("infiniband.smplid.smpdata", 24, MAD_SIZE)
    parts = CM_MESSAGES.get(ctx.hdr["attribute_id"])
    ctx.area(CM_DATA, parts or (), kind="pad" if parts else "data")
