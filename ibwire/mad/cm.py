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
from ibwire.mad._layout import L, d, der, gid, ipv4_tail, ov, raw, rb, rz, u
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


_REQ = "infiniband.cm.req"
CM_REQ = L("cm_req", "CM ConnectRequest", _REQ, [
    u("local_comm_id", 32, "infiniband.cm.req"), rb(4),
    u("service_id", 64),
    u("local_ca_guid", 64), rb(4), u("local_q_key", 32, "localqkey"),
    u("local_qpn", 24), u("responder_resources", 8, "responderres"),
    u("local_eecn", 24), u("initiator_depth", 8, "initdepth"), u("remote_eecn", 24),
    u("remote_cm_response_timeout", 5, "remoteresptout"),
    u("transport_service_type", 2, "transpsvctype"),
    u("end_to_end_flow_control", 1, "e2eflowctrl"),
    u("starting_psn", 24, "startpsn"),
    u("local_cm_response_timeout", 5, "localresptout"), u("retry_count", 3, "retrcount"),
    u("p_key", 16, "pkey"), u("path_mtu", 4, "pppmtu", values=MTUS),
    u("rdc_exists", 1, "rdcexist"), u("rnr_retry_count", 3, "rnrretrcount"),
    u("max_cm_retries", 4, "maxcmretr"), u("srq", 1),
    u("extended_transport_type", 3, "ext_transport"),
    d("primary_local_lid", 16, "prim_locallid"), d("primary_remote_lid", 16,
                                                    "prim_remotelid"),
    gid("primary_local_gid", "prim_localgid", present=_not_mapped("primary_local_gid")),
    gid("primary_remote_gid", "prim_remotegid", present=_not_mapped("primary_remote_gid")),
    u("primary_flow_label", 20, "prim_flowlabel", ftype=UINT32),
    u("primary_reserved0", 6, "prim_reserved0", ftype=UINT32),
    u("primary_packet_rate", 6, "prim_pktrate", ftype=UINT32, values=RATES),
    u("primary_traffic_class", 8, "prim_tfcclass"), u("primary_hop_limit", 8, "prim_hoplim"),
    u("primary_sl", 4, "prim_sl"), u("primary_subnet_local", 1, "prim_subnetlocal"),
    u("primary_reserved1", 3, "prim_reserved1"),
    u("primary_local_ack_timeout", 5, "prim_localacktout"),
    u("primary_reserved2", 3, "prim_reserved2"),
    d("alternate_local_lid", 16, "alt_locallid"), d("alternate_remote_lid", 16,
                                                     "alt_remotelid"),
    raw("alternate_local_gid", 16, "alt_localgid"),
    raw("alternate_remote_gid", 16, "alt_remotegid"),
    u("alternate_flow_label", 20, "alt_flowlabel", ftype=UINT32),
    u("alternate_reserved0", 6, "alt_reserved0", ftype=UINT32),
    u("alternate_packet_rate", 6, "alt_pktrate", ftype=UINT32, values=RATES),
    u("alternate_traffic_class", 8, "alt_tfcclass"), u("alternate_hop_limit", 8, "alt_hoplim"),
    u("alternate_sl", 4, "alt_sl"), u("alternate_subnet_local", 1, "alt_subnetlocal"),
    u("alternate_reserved1", 3, "alt_reserved1"),
    u("alternate_local_ack_timeout", 5, "alt_localacktout"),
    u("alternate_reserved2", 3, "alt_reserved1"),
    # IP CM ServiceID parts (Annex A11.2), only when the prefix selects IP CM.
    der("service_id_prefix", lambda v: (v["service_id"] >> 24).to_bytes(5, "big"),
        "serviceid.prefix", ftype=BYTES, present=_ip_sid),
    ov("service_id_protocol", 104, 8, "serviceid.protocol", present=_ip_sid),
    ov("service_id_dport", 112, 16, "serviceid.dport", present=_ip_sid),
    ipv4_tail("primary_local_gid_ipv4", "primary_local_gid", _mapped("primary_local_gid"),
              "prim_localgid_ipv4"),
    ipv4_tail("primary_remote_gid_ipv4", "primary_remote_gid",
              _mapped("primary_remote_gid"), "prim_remotegid_ipv4"),
])
CM_REQ_PRIVATE = L("cm_req_private", "CM REQ PrivateData", _REQ, [raw("private", 92)])


def _ipv(n: int, equal: bool):
    return (lambda v: v["ipv"] == n) if equal else (lambda v: v["ipv"] != n)


_IPCM = "infiniband.cm.req.ip_cm"
CM_REQ_IP_CM = L("cm_req_ipcm", "IP CM Request Msg", _IPCM, [
    u("majv", 4), u("minv", 4), u("ipv", 4), u("reserved0", 4, "reserved"),
    u("sport", 16),
    gid("sip", "sip6", present=_ipv(4, False)), gid("dip", "dip6", present=_ipv(4, False)),
    raw("private", 56),
    ipv4_tail("sip4", "sip", _ipv(4, True)), ipv4_tail("dip4", "dip", _ipv(4, True)),
], container=_IPCM)

_REP = "infiniband.cm.rep"
CM_REP = L("cm_rep", "CM ConnectReply", _REP, [
    u("local_comm_id", 32, _REP), u("remote_comm_id", 32), u("local_q_key", 32, "localqkey"),
    u("local_qpn", 24), rb(1), u("local_eecn", 24, "localeecn"), rb(1),
    u("starting_psn", 24, "startpsn"), rb(1),
    u("responder_resources", 8, "respres"), u("initiator_depth", 8, "initdepth"),
    u("target_ack_delay", 5, "tgtackdelay"), u("failover_accepted", 2, "failoveracc"),
    u("end_to_end_flow_control", 1, "e2eflowctrl"),
    u("rnr_retry_count", 3, "rnrretrcount"), u("srq", 1), u("reserved0", 4, "reserved"),
    u("local_ca_guid", 64), raw("private", 196),
])
CM_RTU = L("cm_rtu", "CM ReadyToUse", "infiniband.cm.rtu", [
    u("local_comm_id", 32), u("remote_comm_id", 32), raw("private", 224)])
CM_REJ = L("cm_rej", "CM ConnectReject", "infiniband.cm.rej", [
    u("local_comm_id", 32), u("remote_comm_id", 32),
    u("message_rejected", 2, "msgrej", values=CM_MSG_KINDS), u("reserved0", 6),
    u("reject_info_length", 7, "rejinfolen"), u("reserved1", 1),
    u("reason", 16, values=CM_REJ_REASONS), raw("ari", 72), raw("private", 148)])
CM_DREQ = L("cm_dreq", "CM DisconnectRequest", "infiniband.cm.dreq", [
    u("local_comm_id", 32), u("remote_comm_id", 32),
    u("remote_qpn_eecn", 24, "infiniband.cm.req.remoteqpneecn"), rb(1), raw("private", 220)])
CM_DREP = L("cm_drep", "CM DisconnectReply", "infiniband.cm.drsp", [
    u("local_comm_id", 32), u("remote_comm_id", 32), raw("private", 224)])
CM_MRA = L("cm_mra", "CM MsgRcptAck", "infiniband.cm.mra", [
    u("local_comm_id", 32), u("remote_comm_id", 32),
    u("message_mraed", 2, values=CM_MSG_KINDS), rz(6), u("service_timeout", 5), rz(3),
    raw("private", 222)])
CM_SIDR_REQ = L("cm_sidr_req", "CM ServiceIDResReq", "infiniband.cm.sidr_req", [
    u("request_id", 32), u("p_key", 16, "pkey"), rz(16), u("service_id", 64),
    raw("private", 216)])
CM_SIDR_REP = L("cm_sidr_rep", "CM ServiceIDResReqResp", "infiniband.cm.sidr_rep", [
    u("request_id", 32), u("status", 8, values=CM_SIDR_STATUS),
    u("additional_info_length", 8, "addinfolen"), rz(16), u("qpn", 24), rz(8),
    u("service_id", 64), u("q_key", 32, "qkey"), raw("class_port_info", 72, "addinfo"),
    raw("private", 136)])
CM_LAP = L("cm_lap", "CM LoadAlternatePath", "infiniband.cm.lap", [
    u("local_comm_id", 32), u("remote_comm_id", 32), rz(32),
    u("remote_qpn_eecn", 24), u("remote_cm_response_timeout", 5), rz(3), rz(32),
    d("alternate_local_lid", 16, "alt_locallid"), d("alternate_remote_lid", 16,
                                                     "alt_remotelid"),
    gid("alternate_local_gid", "alt_localgid"), gid("alternate_remote_gid", "alt_remotegid"),
    u("alternate_flow_label", 20, "alt_flowlabel"), rz(4),
    u("alternate_traffic_class", 8, "alt_tfcclass"), u("alternate_hop_limit", 8, "alt_hoplim"),
    rz(2), u("alternate_packet_rate", 6, "alt_pktrate", values=RATES),
    u("alternate_sl", 4, "alt_sl"), u("alternate_subnet_local", 1, "alt_subnetlocal"), rz(3),
    u("alternate_local_ack_timeout", 5, "alt_localacktout"), rz(3),
    raw("private", 168)])
CM_APR = L("cm_apr", "CM AlternatePathResponse", "infiniband.cm.apr", [
    u("local_comm_id", 32), u("remote_comm_id", 32),
    u("additional_info_length", 8, "addinfolen"), u("ap_status", 8, values=CM_APR_STATUS),
    rz(16), raw("additional_info", 72, "addinfo"), raw("private", 148)])


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
