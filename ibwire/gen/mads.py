"""The MADs the generator sends: directed-route SMPs, an SA PathRecord query and
answer, and the CM connection messages (protocol-facts §8).

Built with the `ibwire.mad` builders (the same layouts the decoder uses); this
module only chooses the values. An earlier offset-based version of these builders
produced byte-identical MADs, which `test_gen_unit` keeps checking field offsets of.
"""

from __future__ import annotations

from typing import Any

from ibwire.constants import MGMT_CLASS_CM, MGMT_CLASS_SA, MGMT_CLASS_SMP_DR, QP_GSI, QP_SMI
from ibwire.mad import MAD_HEADER, attribute_id, build_mad, cm_mad, sa_mad
from ibwire.mad.build import GSI_QKEY  # noqa: F401 - the generator's GSI Q_Key
from ibwire.mad.classes import SMP_NODES, class_node
from ibwire.mad.names import METHOD_NAMES

SMP_DR, SA, CM = MGMT_CLASS_SMP_DR, MGMT_CLASS_SA, MGMT_CLASS_CM
GET, SET, SEND, GET_RESP = (next(m for m, n in METHOD_NAMES.items() if n == name)
                            for name in ("Get", "Set", "Send", "GetResp"))
NODE_DESCRIPTION, NODE_INFO, PORT_INFO = (attribute_id(SMP_DR, n) for n in
                                          ("NodeDescription", "NodeInfo", "PortInfo"))
PATH_RECORD = attribute_id(SA, "PathRecord")
CM_REQ, CM_REP, CM_RTU, CM_DREQ, CM_DREP = (
    attribute_id(CM, n) for n in ("ConnectRequest", "ConnectReply", "ReadyToUse",
                                  "DisconnectRequest", "DisconnectReply"))
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
RATE_100G, RATE_25G = 16, 15
SERVICE_ID = 0x0002C90000001234   # a made-up, non-IP-CM service (no RDMA-CM private data)
PATH_QUERY_MASK = 0x340C          # DGID | SGID | TClass | NumbPath | P_Key (a typical query)
PERMISSIVE = 0xFFFF
Fields = dict[str, Any]


def smp_dr(method: int, tid: int, attr_id: int, fields: Fields | None = None, *,
           attr_mod: int = 0, returning: bool = False, initial_path: bytes = b"\x00\x01",
           return_path: bytes = b"") -> bytes:
    """Directed-route SMP as seen on its first hop (HopPointer 1, HopCount = hops)."""
    header = {"status": 0x8000 if returning else 0,
              "class_specific": (1 << 8) | (len(initial_path) - 1)}
    paths: Fields = {"initial_path": initial_path}
    if return_path:
        paths["return_path"] = return_path
    return build_mad(SMP_DR, method, attr_id, attribute_modifier=attr_mod,
                     transaction_id=tid, header=header, dr_slid=PERMISSIVE,
                     dr_dlid=PERMISSIVE, **paths, **(fields or {}))


def node_info(node_guid: int, port_guid: int, local_port: int = 1) -> Fields:
    """NodeInfo of a one-port channel adapter."""
    return dict(base_version=1, class_version=1, node_type=1, num_ports=1,
                system_image_guid=node_guid, node_guid=node_guid, port_guid=port_guid,
                partition_cap=128, device_id=0x1017, revision=0, local_port_num=local_port,
                vendor_id=0x0002C9)


def port_info(lid: int, sm_lid: int, mtu: int, is_sm: bool, vls: int = 4) -> Fields:
    """PortInfo of an active 4x EDR port: LID, SM LID, MTU, VL capability."""
    code = MTU_CODES[mtu]
    return dict(gid_prefix=0xFE80000000000000, lid=lid, master_sm_lid=sm_lid,
                capability_mask=(1 << 1 if is_sm else 0) | 1 << 16 | 1 << 11,
                local_port_num=1, link_width_enabled=3, link_width_supported=3,
                link_width_active=2, link_speed_supported=7, port_state=4,
                port_physical_state=5, link_down_default_state=2, link_speed_enabled=7,
                neighbor_mtu=code, vl_cap=vls, mtu_cap=code, operational_vls=vls,
                subnet_timeout=18, resp_time_value=16, link_speed_ext_active=2,
                link_speed_ext_supported=3, link_speed_ext_enabled=3)


def node_description(text: str) -> Fields:
    return dict(node_string=text.encode()[:64].ljust(64, b"\0"))


def path_query(tid: int, sgid: bytes, dgid: bytes) -> bytes:
    """SubnAdmGet(PathRecord) from `sgid` to `dgid`."""
    return build_mad(SA, GET, PATH_RECORD, transaction_id=tid, component_mask=PATH_QUERY_MASK,
                     sgid=sgid, dgid=dgid, numb_path=1, p_key=0xFFFF)


def path_answer(tid: int, sgid: bytes, dgid: bytes, slid: int, dlid: int, *, mtu: int,
                rate: int, sl: int = 0) -> bytes:
    """SubnAdmGetResp(PathRecord): one reversible path."""
    rec = dict(sgid=sgid, dgid=dgid, slid=slid, dlid=dlid, reversible=1, numb_path=1,
               p_key=0xFFFF, sl=sl, mtu_selector=2, mtu=MTU_CODES[mtu], rate_selector=2,
               rate=rate, packet_life_time_selector=2, packet_life_time=18)
    return sa_mad(GET_RESP, PATH_RECORD, records=[rec], transaction_id=tid)


def cm_req(tid: int, comm_id: int, ca_guid: int, qpn: int, start_psn: int, *, pmtu: int,
           local_lid: int, remote_lid: int, local_gid: bytes, remote_gid: bytes,
           timeout: int, retry_cnt: int, rnr_retry: int, rate: int, sl: int = 0,
           flow: int = 0, hop_limit: int = 0, resources: int = 4) -> bytes:
    return cm_mad("REQ", transaction_id=tid, local_comm_id=comm_id, service_id=SERVICE_ID,
                  local_ca_guid=ca_guid, local_qpn=qpn, responder_resources=resources,
                  initiator_depth=resources, remote_cm_response_timeout=20,
                  transport_service_type=0, end_to_end_flow_control=1,
                  starting_psn=start_psn, local_cm_response_timeout=20,
                  retry_count=retry_cnt & 7, p_key=0xFFFF, path_mtu=MTU_CODES[pmtu],
                  rnr_retry_count=rnr_retry & 7, max_cm_retries=15,
                  primary_local_lid=local_lid, primary_remote_lid=remote_lid,
                  primary_local_gid=local_gid, primary_remote_gid=remote_gid,
                  primary_flow_label=flow & 0xFFFFF, primary_packet_rate=rate,
                  primary_hop_limit=hop_limit, primary_sl=sl, primary_subnet_local=1,
                  primary_local_ack_timeout=timeout & 0x1F)


def cm_rep(tid: int, comm_id: int, remote_comm_id: int, ca_guid: int, qpn: int,
           start_psn: int, *, rnr_retry: int, resources: int = 4) -> bytes:
    return cm_mad("REP", transaction_id=tid, local_comm_id=comm_id,
                  remote_comm_id=remote_comm_id, local_ca_guid=ca_guid, local_qpn=qpn,
                  starting_psn=start_psn, responder_resources=resources,
                  initiator_depth=resources, target_ack_delay=15, failover_accepted=3,
                  end_to_end_flow_control=1, rnr_retry_count=rnr_retry & 7)


def cm_simple(attr_id: int, tid: int, comm_id: int, remote_comm_id: int,
              remote_qpn: int | None = None) -> bytes:
    """RTU, DREQ (with the remote QPN) or DREP."""
    name = {CM_RTU: "RTU", CM_DREQ: "DREQ", CM_DREP: "DREP"}[attr_id]
    extra = {} if remote_qpn is None else {"remote_qpn_eecn": remote_qpn}
    return cm_mad(name, transaction_id=tid, local_comm_id=comm_id,
                  remote_comm_id=remote_comm_id, **extra)


def describe(mad: bytes) -> tuple[int, int, int, int]:
    """(class, method, attribute id, transaction id) of a MAD, read through the MAD
    header layout."""
    hdr = MAD_HEADER.unpack(mad)
    return hdr["mgmt_class"], hdr["method"], hdr["attribute_id"], hdr["transaction_id"]


def mad_qp(mad: bytes) -> int:
    """The QP a MAD travels on: QP0 for SMPs, QP1 (the GSI) for every other class."""
    return QP_SMI if class_node(describe(mad)[0]) in SMP_NODES else QP_GSI
