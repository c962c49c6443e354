"""Hand-built MADs for the attributes, records and messages no capture carries.

Each vector is built with the builders, then checked two ways that do not depend
on our layouts: the bytes at the offsets the specification gives (IBA tables,
protocol-facts §8) hold the values, and tshark - run on an ERF-in-pcap of all
vectors - agrees field by field (except the pinned Wireshark mistakes)."""

from __future__ import annotations

import ipaddress

import pytest
from mad_helpers import (
    base_offset,
    compare,
    erf_pcap,
    known,
    mad_start,
    need_tshark,
    tshark_fields,
    tshark_text,
)

import ibwire
from ibwire.cli.tshark_text import format_field
from ibwire.mad import (
    build_mad,
    cm_mad,
    mad_packet,
    perf_get,
    sa_mad,
    smp_get,
    smp_set,
)

G1, G2 = "fe80::2:c903:a1:19", "fe80::2:c903:a1:a"


def g(text: str) -> bytes:
    return ipaddress.IPv6Address(text).packed


def smp_resp(attr: str, **f) -> bytes:
    return build_mad(0x01, "GetResp", attr, transaction_id=0x1234, **f)


def notice(trap: int, **f) -> bytes:
    return build_mad(0x01, "Trap", "Notice", is_generic=1, type=1, producer_type_vendor_id=2,
                     trap_number_device_id=trap, issuer_lid=7, notice_toggle=1,
                     notice_count=5, **f)


# name -> (MAD bytes, {MAD offset: expected bytes (hex)}, {public name: value})
VECTORS: dict[str, tuple[bytes, dict[int, str], dict[str, object]]] = {
    "nodeinfo": (smp_resp("NodeInfo", base_version=1, class_version=1, node_type=2,
                          num_ports=36, system_image_guid=0x0002C90300001234,
                          node_guid=0x0002C90300001234, port_guid=0x0002C90300001235,
                          partition_cap=8, device_id=0xCB20, revision=0xA0,
                          local_port_num=7, vendor_id=0x02C9),
                 {64 + 2: "0224", 64 + 30: "cb20", 64 + 36: "070002c9"},
                 {"infiniband.nodeinfo.numports": 36}),
    "switchinfo": (smp_resp("SwitchInfo", linear_fdb_cap=49152, linear_fdb_top=300,
                            life_time_value=18, port_state_change=1,
                            optimized_sl_to_vl_mapping_programming=2, lids_per_port=1,
                            partition_enforcement_cap=32, inbound_enforcement_cap=1,
                            filter_raw_outbound_cap=1, enhanced_port_zero=1,
                            multicast_fdb_top=0xC0FF),
                   {64 + 11: "96", 64 + 16: "98", 64 + 18: "c0ff"},
                   {"infiniband.switchinfo.lifetimevalue": 18}),
    "portinfo": (smp_resp("PortInfo", attribute_modifier=3, m_key=0x1122334455667788,
                          gid_prefix=0xFE80000000000000, lid=0x21, master_sm_lid=1,
                          capability_mask=0x0251A84A, lmc=3, m_key_protect_bits=2,
                          port_state=4, port_physical_state=5, link_speed_active=4,
                          client_reregister=1, multicast_p_key_trap_suppression_enabled=2,
                          subnet_timeout=18, resp_time_value=17,
                          link_round_trip_latency=0x123456, capability_mask2=0x31,
                          link_speed_ext_active=2, link_speed_ext_supported=7,
                          link_speed_ext_enabled=0x1F, link_speed_ext_enabled2=5),
                 {64 + 20: "0251a84a", 64 + 34: "83", 64 + 51: "d2", 64 + 52: "11",
                  64 + 56: "05123456", 64 + 60: "0031271f"},
                 {"infiniband.portinfo.capabilitymask.issm": 1,
                  "infiniband.portinfo.capabilitymask.cableinfosupported": 1,
                  "infiniband.portinfo.capabilitymask.hierarchyinfosupported": 0,
                  "infiniband.portinfo.capabilitymask2.linkwidth2xsupported": 1}),
    "pkeys": (smp_resp("P_KeyTable", membership_type=[1, 1, 0], p_key_base=[0x7FFF, 1, 0x7FFF]),
              {64: "ffff80017fff"}, {"infiniband.p_keytable.p_key": 0xFFFF}),
    "sl2vl": (smp_resp("SLtoVLMappingTable", attribute_modifier=0x0102,
                       sl_to_vl_high=[0, 2, 4, 6, 8, 10, 12, 14],
                       sl_to_vl_low=[1, 3, 5, 7, 9, 11, 13, 15]),
              {64: "0123456789abcdef"}, {}),
    "vlarb": (smp_resp("VLArbitrationTable", attribute_modifier=0x00010001,
                       vl=list(range(8)) * 4, weight=list(range(1, 33))),
              {64: "0001010202030304"}, {}),
    "lft": (smp_resp("LinearForwardingTable", attribute_modifier=1, port=list(range(64))),
            {64: "00010203", 127: "3f"}, {}),
    "rft": (smp_resp("RandomForwardingTable", lid=[5, 6], valid=[1, 1], lmc=[2, 0],
                     port=[9, 10]), {64: "0005a0090006800a"}, {}),
    "mft": (smp_resp("MulticastForwardingTable", attribute_modifier=0x10000001,
                     port_mask=[1 << (i % 16) for i in range(32)]),
            {64: "00010002", 126: "8000"}, {}),
    "guidinfo": (smp_resp("GUIDInfo", guid=[0x0002C90300A10000 + i for i in range(8)]),
                 {64: "0002c90300a10000", 120: "0002c90300a10007"}, {}),
    "sminfo": (smp_resp("SMInfo", guid=0x0002C90300A10001, sm_key=0xAA, act_count=464,
                        priority=14, sm_state=2),
               {64: "0002c90300a10001", 64 + 16: "000001d0e2"}, {}),
    "vendordiag": (smp_resp("VendorDiag", next_index=3, diag_data=bytes(range(62))),
                   {64: "0003000102"}, {}),
    "ledinfo": (smp_resp("LedInfo", led_mask=1), {64: "80000000"}, {}),
    "dr_get": (smp_get("NodeInfo", dr_path=[0, 1, 3, 5], hop_pointer=2),
               {1: "81", 4: "00000203", 32: "ffffffff", 128: "00010305"}, {}),
    "dr_resp": (build_mad(0x81, "GetResp", "NodeDescription",
                          header={"status": 0x8000, "class_specific": 0x0203},
                          dr_slid=0xFFFF, dr_dlid=0xFFFF,
                          initial_path=bytes([0, 1, 3, 5]), return_path=bytes([0, 2, 4, 6]),
                          node_string=b"leaf7 switch"),
                {4: "80000203", 192: "00020406"}, {"infiniband.smpdirected.d": 1}),
    "smp_set_portinfo": (smp_set("PortInfo", dr_path=[0, 2], port_state=2,
                                 link_width_enabled=0xFF),
                         {3: "02", 64 + 29: "ff", 64 + 32: "02"}, {}),
    "trap64": (notice(64, gid_addr=G1), {64: "81000002004000078005", 64 + 16: "fe80"}, {}),
    "trap68": (notice(68, comp_mask=0x340C, wait_for_repath=1),
               {64 + 10: "000000000000340c80"}, {}),
    "trap128": (notice(128, lid_addr=0x15), {64 + 10: "0015"}, {}),
    "trap129": (notice(129, lid_addr=0x15, port_no=9), {64 + 12: "001509"}, {}),
    "trap144": (notice(144, lid_addr=0x15, other_local_changes=1, capability_mask=0x0251A84A,
                       link_speed_enabled_change=1, node_description_change=1,
                       capability_mask2=0x31),
                {64 + 12: "0015000102" + "51a84a0005" + "0031"}, {}),
    "trap145": (notice(145, lid_addr=0x15, system_image_guid=0x0002C90300A10000),
                {64 + 16: "0002c90300a10000"}, {}),
    "trap256": (notice(256, lid_addr=0x15, dr_slid=0xFFFF, dr_notice=1,
                       **{"infiniband.trap.method": 2, "infiniband.trap.attributeid": 0x15,
                          "infiniband.trap.mkey": 0xDEAD,
                          "infiniband.trap.attributemodifier": 1},
                       dr_path_truncated=0, dr_hop_count=3,
                       dr_notice_return_path=bytes([0, 1, 2, 3])),
                {64 + 12: "0015ffff02000015000000010000000000" + "00dead0083000102"}, {}),
    "trap257": (notice(257, lid_addr1=1, lid_addr2=2, key=0x8001, sl=3, qp1=0x12, qp2=1,
                       gid_addr1=G1, gid_addr2=G2),
                {64 + 12: "0001000200008001" + "30000012" + "00000001" + "fe80"}, {}),
    "trap259": (notice(259, data_valid=0x1234, lid_addr1=1, lid_addr2=2, p_key=0x8001, sl=3,
                       qp1=0x12, qp2=0x34, gid_addr1=G1, gid_addr2=G2, sw_lid_addr=9,
                       port_no=4),
                {64 + 10: "1234000100028001" + "30000012" + "00000034", 64 + 58: "000904"}, {}),
    "smp_cpi": (smp_resp("ClassPortInfo", **{"infiniband.classportinfo.baseversion": 1,
                                             "infiniband.classportinfo.classversion": 1},
                         capability_mask=0x0001, resp_time_value=8, redirect_lid=4,
                         trap_lid=1, trap_p_key=0xFFFF),
                {64: "0101000100000008", 64 + 28: "0004", 64 + 60: "0001ffff"}, {}),
    "trap_vendor": (build_mad(0x01, "Trap", "Notice", is_generic=0, type=4,
                              producer_type_vendor_id=0x02C9, trap_number_device_id=0xCB20,
                              issuer_lid=3),
                    {64: "040002c9cb200003"}, {}),
    # -- SA ------------------------------------------------------------------------
    "pathrecords": (sa_mad("GetTableResp", "PathRecord", [
        {"service_id": 0x1122334455667788, "dgid": G1, "sgid": G2, "dlid": 20, "slid": 12,
         "raw_traffic": 0, "flow_label": 0x12345, "hop_limit": 64, "tclass": 0x20,
         "reversible": 1, "numb_path": 2, "p_key": 0xFFFF, "qos_class": 0x123, "sl": 5,
         "mtu_selector": 2, "mtu": 4, "rate_selector": 2, "rate": 16,
         "packet_life_time_selector": 2, "packet_life_time": 18, "preference": 1},
        {"dgid": G2, "sgid": G1, "dlid": 12, "slid": 20, "p_key": 0x7FFF, "sl": 1},
        {"dgid": G1, "sgid": G1, "dlid": 21, "slid": 20, "p_key": 0x8001}]),
        {44: "0008", 56: "1122334455667788", 56 + 40: "0014000c0123454020" + "82ffff1235",
         56 + 54: "8490920100", 120 + 40: "000c0014"}, {}),
    "mcmember": (sa_mad("Set", "MCMemberRecord", [
        {"mgid": "ff12:401b:ffff::1", "port_gid": G1, "q_key": 0x80010000, "mlid": 0xC001,
         "mtu_selector": 2, "mtu": 4, "tclass": 0x10, "p_key": 0xFFFF, "rate_selector": 2,
         "rate": 3, "packet_life_time_selector": 2, "packet_life_time": 18, "sl": 3,
         "flow_label": 0x12345, "hop_limit": 2, "scope": 2, "join_state": 1,
         "proxy_join": 1}], component_mask=0x1FFFF),
        {56 + 32: "80010000c0018410ffff8392" + "31234502" + "2180"}, {}),
    "servicerecord": (sa_mad("GetResp", "ServiceRecord", [
        {"service_id": 0x10000CE100415453, "service_gid": G1, "service_p_key": 0xFFFF,
         "service_lease": 0xFFFFFFFF, "service_key": bytes(range(16)),
         "service_name": b"DAPL".ljust(64, b"\0"), "service_data8": bytes([1] * 16)}]),
        {56: "10000ce100415453", 56 + 24: "ffff0000ffffffff00010203", 56 + 48: "4441504c"}, {}),
    "linkrecord": (sa_mad("GetTableResp", "LinkRecord", [
        {"from_lid": 3, "from_port": 9, "to_port": 1, "to_lid": 8},
        {"from_lid": 8, "from_port": 1, "to_port": 9, "to_lid": 3}]),
        {44: "0001", 56: "0003090100080000", 64: "00080109"}, {}),
    "guidinforecord": (sa_mad("GetResp", "GuidInfoRecord", [
        {"lid": 12, "block_num": 1, "guid": [0x0002C90300A1000A, 5]}]),
        {56: "000c010000000000", 64: "0002c90300a1000a0000000000000005"}, {}),
    "informinfo": (sa_mad("Set", "InformInfo", [
        {"gid": G1, "lid_range_begin": 0xFFFF, "lid_range_end": 0, "is_generic": 1,
         "subscribe": 1, "type": 0xFFFF, "trap_number_device_id": 64, "qpn": 0x12,
         "resp_time_value": 18, "producer_type_vendor_id": 4}]),
        {56 + 16: "ffff000000000101ffff0040" + "00001212" + "00000004"}, {}),
    "informinforecord": (sa_mad("GetTableResp", "InformInfoRecord", [
        {"subscriber_gid": G2, "enum": 2, "gid": G1, "is_generic": 1, "subscribe": 1,
         "trap_number_device_id": 64, "qpn": 1, "producer_type_vendor_id": 4}]),
        {44: "0008", 56 + 16: "0002", 56 + 24: "fe80"}, {}),
    "tracerecord": (sa_mad("GetTraceTableResp", "TraceRecord", [
        {"gid_prefix": 0xFE80000000000000, "id_generation": 7, "node_type": 2,
         "node_id": 0x0002C90200B10001, "chassis_id": 0x1, "entry_port_id": 0x2,
         "exit_port_id": 0x3, "entry_port": 9, "exit_port": 1}]),
        {56: "fe80000000000000000700020002c90200b10001", 56 + 44: "0901"}, {}),
    "multipath": (sa_mad("GetMulti", "MultiPathRecord", [
        {"raw_traffic": 0, "flow_label": 5, "hop_limit": 1, "reversible": 1, "numb_path": 4,
         "p_key": 0xFFFF, "sl": 2, "independence_selector": 1, "gid_scope": 2,
         "sgid_count": 1, "dgid_count": 2, "sdgid": [G1, G2, "fe80::3"],
         "service_id_msb": 0x11, "service_id_lsb": 0x22334455667788}]),
        {56: "0000050100" + "84ffff0002", 56 + 13: "11420102" + "22334455667788",
         56 + 24: "fe80"}, {}),
    "switchinforecord": (sa_mad("GetResp", "SwitchInfoRecord", [
        {"lid": 3, "linear_fdb_cap": 30720, "life_time_value": 18}]),
        {56: "000300007800", 56 + 15: "90"}, {}),
    "pkeyrecord": (sa_mad("GetResp", "P_KeyTableRecord", [
        {"lid": 12, "block_num": 0, "port_num": 1, "membership_type": [1],
         "p_key_base": [0x7FFF]}]), {56: "000c000001000000ffff"}, {}),
    "sl2vlrecord": (sa_mad("GetResp", "SLtoVLMappingTableRecord", [
        {"lid": 3, "input_port_num": 1, "output_port_num": 9,
         "sl_to_vl_high": [0] * 8, "sl_to_vl_low": [1] * 8}]),
        {56: "0003010900000000" + "01" * 8}, {}),
    "vlarbrecord": (sa_mad("GetResp", "VLArbitrationTableRecord", [
        {"lid": 3, "output_port_num": 9, "block_num": 1, "vl": [1, 2], "weight": [64, 32]}]),
        {56: "000309010000000001400220"}, {}),
    "lftrecord": (sa_mad("GetResp", "LinearForwardingTableRecord", [
        {"lid": 3, "block_num": 0, "port": [0, 9, 9, 0]}]), {56: "0003000000000000" + "00090900"},
        {}),
    "mftrecord": (sa_mad("GetResp", "MulticastForwardingTableRecord", [
        {"lid": 3, "position": 1, "block_num": 0x101, "port_mask": [0x0202]}]),
        {56: "0003" + "1101" + "00000000" + "0202"}, {}),
    "sminforecord": (sa_mad("GetResp", "SMInfoRecord", [
        {"lid": 1, "guid": 0x0002C90300A10001, "act_count": 9, "priority": 1,
         "sm_state": 3}]), {56: "000100000002c90300a10001", 56 + 24: "13"}, {}),
    "sa_cpi": (sa_mad("GetResp", "ClassPortInfo", [
        {"base_version": 1, "class_version": 2, "capability_mask": 0x2602,
         "capability_mask2": 0xB5E8, "resp_time_value": 16, "trap_hl": 0x40,
         "trap_qp": 1, "trap_q_key": 0x80010000, "redirect_sl": 3, "redirect_fl": 0x12345}]),
        {56: "010226020016bd10", 56 + 24: "00312345", 56 + 64: "40000001"}, {}),
    "sa_notice": (build_mad(0x03, "Report", "Notice", is_generic=1, type=4,
                            producer_type_vendor_id=4, trap_number_device_id=64,
                            issuer_lid=1, gid_addr=G2, issuer_gid=G1),
                  {56: "840000040040", 56 + 64: "fe80"}, {}),
    "rmpp_data": (build_mad(0x03, "GetTableResp", "PathRecord", rmpp_version=1, rmpp_type=1,
                            rresp_time=0x13, rmpp_flags=5, data1=1, data2=84,
                            attribute_offset=8, dlid=3),
                  {24: "01019d0000000001" + "00000054"}, {"infiniband.rmpp.rresptime": 0x13}),
    # -- PerfMgt -------------------------------------------------------------------
    "portcounters": (build_mad(0x04, "GetResp", "PortCounters", port_select=1,
                               counter_select=0xFFFF, symbol_error_counter=1,
                               link_error_recovery_counter=2, link_downed_counter=3,
                               port_rcv_errors=4, port_rcv_remote_physical_errors=5,
                               port_rcv_switch_relay_errors=6, port_xmit_discards=7,
                               port_xmit_constraint_errors=8, port_rcv_constraint_errors=9,
                               counter_select2=0xA, local_link_integrity_errors=11,
                               excessive_buffer_overrun_errors=12, qp1_dropped=13,
                               vl15_dropped=14, port_xmit_data=15, port_rcv_data=16,
                               port_xmit_pkts=17, port_rcv_pkts=18, port_xmit_wait=19),
                     {64: "0001ffff0001020300040005000600070809" + "0abc000d000e",
                      64 + 40: "00000013"}, {}),
    "portcounters_ext": (build_mad(0x04, "GetResp", "PortCountersExtended", port_select=1,
                                   counter_select2=0x12345678, port_xmit_data=1 << 40,
                                   symbol_error_counter=7, qp1_dropped=9, port_xmit_wait=8),
                         {64 + 4: "12345678", 64 + 8: "0000010000000000",
                          64 + 72: "0000000000000007", 64 + 176: "0000000000000009"}, {}),
    "perf_cpi": (build_mad(0x04, "GetResp", "ClassPortInfo", base_version=1, class_version=1,
                           capability_mask=0x1300, resp_time_value=18, trap_hl=0xFF),
                 {64: "0101130000000012", 64 + 64: "ff"}, {}),
    "samples_control": (build_mad(0x04, "Set", "PortSamplesControl", op_code=1, port_select=2,
                                  tick=3, counter_width=4, counter_mask0=5,
                                  counter_masks1to9=0x12345, sample_status=2,
                                  sample_interval=1000, tag=0xABCD, counter_select0=1,
                                  counter_select14=0xF00F, samples_only_option_mask=9),
                        {64: "0102030428012345", 64 + 11: "02", 64 + 36: "abcd0001",
                         64 + 66: "f00f", 64 + 72: "0000000000000009"}, {}),
    "samples_result": (build_mad(0x04, "GetResp", "PortSamplesResult", tag=0xABCD,
                                 sample_status=3, counter0=1, counter14=0xFFFFFFFF),
                       {64: "abcd000300000001", 64 + 60: "ffffffff"}, {}),
    "rcv_error_details": (build_mad(0x04, "GetResp", "PortRcvErrorDetails", port_select=1,
                                    port_local_physical_errors=1, port_looping_errors=6),
                          {64: "0001000000010000", 64 + 14: "0006"}, {}),
    "xmit_discard_details": (perf_get("PortXmitDiscardDetails", port_select=3,
                                      port_inactive_discards=2,
                                      port_sw_hoq_lifetime_limit_discards=5),
                             {64: "0003000000020000", 64 + 10: "0005"}, {}),
    # -- CM (native InfiniBand) ----------------------------------------------------------
    "cm_req": (cm_mad("REQ", local_comm_id=0x11223344, service_id=0x1000000000000042,
                      local_ca_guid=0x0002C90300A10000, local_q_key=0, local_qpn=0x870408,
                      responder_resources=4, initiator_depth=4,
                      remote_cm_response_timeout=20, transport_service_type=0,
                      starting_psn=0x123456, local_cm_response_timeout=20, retry_count=7,
                      p_key=0xFFFF, path_mtu=4, rnr_retry_count=7, max_cm_retries=15, srq=1,
                      primary_local_lid=4, primary_remote_lid=1, primary_local_gid=G1,
                      primary_remote_gid=G2, primary_flow_label=0x12345,
                      primary_packet_rate=3, primary_traffic_class=0, primary_hop_limit=1,
                      primary_sl=2, primary_subnet_local=1, primary_local_ack_timeout=18,
                      alternate_local_lid=5, alternate_remote_gid=g(G1),
                      alternate_local_ack_timeout=14, private=b"hello".ljust(92, b"\0")),
               {24: "11223344000000001000000000000042", 24 + 32: "87040804",
                24 + 43: "a0", 24 + 47: "a7", 24 + 50: "47f8", 24 + 88: "12345003",
                24 + 94: "2890", 24 + 139: "70", 24 + 140: "68656c6c6f"}, {}),
    "cm_req_ipcm6": (cm_mad("REQ", local_comm_id=1, service_id=0x0000000001064E20,
                            majv=0, minv=0, ipv=6, sport=0x1234, sip="fd00::1",
                            dip="fd00::2", private=b"x" * 56),
                     {24 + 8: "0000000001064e20", 24 + 140: "00601234fd00"}, {}),
    "cm_rep": (cm_mad("REP", local_comm_id=2, remote_comm_id=1, local_q_key=7,
                      local_qpn=0x17, local_eecn=0, starting_psn=0xC23298,
                      responder_resources=1, initiator_depth=1, target_ack_delay=15,
                      failover_accepted=1, end_to_end_flow_control=1, rnr_retry_count=7,
                      srq=1, local_ca_guid=0x505400FFFE8B2D12),
               {24: "000000020000000100000007000017", 24 + 24: "01017bf0"}, {}),
    "cm_rtu": (cm_mad("RTU", local_comm_id=1, remote_comm_id=2), {24: "0000000100000002"}, {}),
    "cm_rej": (cm_mad("REJ", local_comm_id=1, remote_comm_id=2, message_rejected=1,
                      reject_info_length=8, reason=28, ari=bytes(range(72))),
               {24: "00000001000000024010001c0001"}, {}),
    "cm_dreq": (cm_mad("DREQ", local_comm_id=1, remote_comm_id=2, remote_qpn_eecn=0x11),
                {24: "000000010000000200001100"}, {}),
    "cm_drep": (cm_mad("DREP", local_comm_id=2, remote_comm_id=1), {24: "0000000200000001"}, {}),
    "cm_mra": (cm_mad("MRA", local_comm_id=1, remote_comm_id=2, message_mraed=1,
                      service_timeout=17), {24 + 8: "4088"}, {}),
    "cm_sidr_req": (cm_mad("SIDR_REQ", request_id=9, p_key=0xFFFF, service_id=0x42),
                    {24: "00000009ffff00000000000000000042"}, {}),
    "cm_sidr_rep": (cm_mad("SIDR_REP", request_id=9, status=4, qpn=0x55, service_id=0x42,
                           q_key=0x80010000), {24: "0000000904000000000055000000000000000042"
                                               "80010000"}, {}),
    "cm_lap": (cm_mad("LAP", local_comm_id=1, remote_comm_id=2, remote_qpn_eecn=0x17,
                      remote_cm_response_timeout=20, alternate_local_lid=5,
                      alternate_remote_lid=6, alternate_local_gid=G1,
                      alternate_remote_gid=G2, alternate_flow_label=0xABCDE,
                      alternate_traffic_class=3, alternate_hop_limit=4,
                      alternate_packet_rate=16, alternate_sl=7, alternate_subnet_local=1,
                      alternate_local_ack_timeout=19),
               {24 + 12: "000017a0", 24 + 20: "00050006", 24 + 56: "abcde00304107898"},
               {}),
    "cm_apr": (cm_mad("APR", local_comm_id=1, remote_comm_id=2, additional_info_length=0,
                      ap_status=5), {24 + 8: "0005"}, {}),
    "cm_cpi": (cm_mad("ClassPortInfo", base_version=1, class_version=2, resp_time_value=20),
               {24: "0102000000000014"}, {}),
    # -- CC --------------------------------------------------------------------------
    "cc_info": (build_mad(0x21, "GetResp", "CongestionInfo", cc_key=0x1234,
                          congestion_info=1, control_table_cap=4),
                {24: "0000000000001234", 64: "000104"}, {}),
    "cc_keyinfo": (build_mad(0x21, "GetResp", "CongestionKeyInfo", cc_key_protect_bit=1,
                             cc_key_lease_period=60, cc_key_violations=2, cc_key=5),
                   {64 + 8: "8000003c0002"}, {}),
    "cc_log_switch": (build_mad(0x21, "GetResp", "CongestionLog", log_type=1,
                                congestion_flags=1, log_events_counter=3,
                                current_time_stamp=1000, port_map=bytes([0xFF] * 32),
                                slid=[1, 2], dlid=[3, 4], sl=[5, 6], time_stamp=[7, 8]),
                      {32: "01010003000003e8", 32 + 40: "0001000350000000" + "00000007"},
                      {}),
    "cc_log_ca": (build_mad(0x21, "GetResp", "CongestionLog", log_type=2,
                            threshold_event_counter=9, threshold_congestion_event_map=0xFF,
                            current_time_stamp=5, local_qp_cn_entry=[0x17],
                            sl_cn_entry=[3], service_type_cn_entry=[1],
                            remote_qp_number_cn_entry=[0x11], local_lid_cn=[1],
                            remote_lid_cn_entry=[2], time_stamp_cn_entry=[99]),
                  {32: "0200000900ff000000000005", 32 + 12: "00001731" + "00001100"
                   + "00010002" + "00000063"}, {}),
    "cc_switch_setting": (build_mad(0x21, "Set", "SwitchCongestionSetting", control_map=3,
                                    victim_mask=bytes([1] * 32), threshold=15,
                                    packet_size=8, cs_threshold=7, cs_return_delay=0x400,
                                    marking_rate=10),
                          {64: "00000003", 64 + 68: "f0087000" + "0400000a"}, {}),
    "cc_switch_port_setting": (build_mad(0x21, "Set", "SwitchPortCongestionSetting",
                                         valid=[1, 1], control_type=[0, 1], threshold=[15, 8],
                                         packet_size=[8, 4], cong_parm_marking_rate=[10, 20]),
                               {64: "8f08000ac8040014"}, {}),
    "cc_ca_setting": (build_mad(0x21, "Set", "CACongestionSetting", port_control=1,
                                control_map=0xFFFF, ccti_timer=[10], ccti_increase=[1],
                                trigger_threshold=[2], ccti_min=[3]),
                      {64: "0001ffff000a010203000000"}, {}),
    "cc_table": (build_mad(0x21, "Set", "CongestionControlTable", ccti_limit=63,
                           cct_shift=[1, 3], cct_multiplier=[100, 0x3FFF]),
                 {64: "003f00004064ffff"}, {}),
    "cc_timestamp": (build_mad(0x21, "GetResp", "Timestamp", timestamp=123456),
                     {64: "0001e240"}, {}),
    # -- classes kept as data ---------------------------------------------------------
    "bm": (build_mad(0x05, "Get", 0x0010, b_key=0x0102030405060708), {24: "0102030405060708"},
           {}),
    "dm": (build_mad(0x06, "Get", 0x0010), {1: "06"}, {}),
    "vendor1": (build_mad(0x0A, "Get", 0x0010, attribute_modifier=1), {1: "0a"}, {}),
    "vendor2": (build_mad(0x32, "Get", 0x0001, oui=0x001405), {36: "00001405"}, {}),
}


def _native(mad: bytes) -> bytes:
    return mad_packet(mad, slid=12, dlid=20)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_bytes_follow_the_specification(name: str) -> None:
    mad, offsets, values = VECTORS[name]
    assert len(mad) == 256
    for off, hexbytes in offsets.items():
        want = bytes.fromhex(hexbytes)
        assert mad[off:off + len(want)] == want, (name, off)
    pkt = ibwire.decode(_native(mad), "ib")
    assert not pkt.problems, pkt.problems
    for key, value in values.items():
        assert pkt[key] == value, key
    assert ibwire.encode(pkt) == _native(mad)


def test_table_response_lists_every_record() -> None:
    pkt = ibwire.decode(_native(VECTORS["pathrecords"][0]), "ib")
    assert pkt.values_of("infiniband.pathrecord.dlid") == [20, 12, 21]
    assert pkt.values_of("infiniband.pathrecord.p_key") == [0xFFFF, 0x7FFF, 0x8001]
    assert pkt.values_of("infiniband.pathrecord.qosclass") == [0x123, 0, 0]
    links = ibwire.decode(_native(VECTORS["linkrecord"][0]), "ib")
    assert links.values_of("infiniband.linkrecord.tolid") == [8, 3]


def test_multipath_gids_follow_the_counts() -> None:
    pkt = ibwire.decode(_native(VECTORS["multipath"][0]), "ib")
    assert pkt.values_of("infiniband.multipathrecord.sdgid") == [g(G1), g(G2), g("fe80::3")]


@pytest.fixture(scope="module")
def vector_pcap(tmp_path_factory):
    need_tshark()
    path = tmp_path_factory.mktemp("mad") / "vectors.pcap"
    return erf_pcap(path, [_native(VECTORS[n][0]) for n in sorted(VECTORS)])


@pytest.mark.parametrize("index,name", list(enumerate(sorted(VECTORS))))
def test_tshark_agrees_on_hand_built_vectors(vector_pcap, index: int, name: str) -> None:
    fields = tshark_fields(vector_pcap).get(index + 1)
    assert fields, f"tshark saw no MAD in vector {name}"
    pkt = ibwire.decode(_native(VECTORS[name][0]), "ib")
    diffs = [(n, pos - mad_start(pkt), want, mine) for n, pos, want, mine
             in compare(pkt, fields, base_offset(pkt), mad_start(pkt))
             if not known(n, pkt["infiniband.mad.attributename"])]
    assert not diffs, diffs


def _tshark(vector_pcap, name: str, field: str) -> list[str]:
    index = sorted(VECTORS).index(name) + 1
    return [tshark_text(f) for f in tshark_fields(vector_pcap)[index] if f.name == field]


def test_pinned_rmpp_byte_26_split(vector_pcap) -> None:
    """Byte 26 = 0x9d: RRespTime 0x13 (5 bits) and RMPPFlags 5 = Active|Last (3 bits),
    per IBA/libibmad; Wireshark splits it 4/4 (0x9 and 0xd)."""
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.rresptime") == ["0x09"]
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.rmppflags") == ["0x0d"]
    pkt = ibwire.decode(_native(VECTORS["rmpp_data"][0]), "ib")
    assert pkt["infiniband.rmpp.rresptime"] == 0x13 and pkt["infiniband.rmpp.rmppflags"] == 5
    assert pkt["infiniband.rmpp.flags.active"] and pkt["infiniband.rmpp.flags.last"]
    assert not pkt["infiniband.rmpp.flags.first"]
    assert _tshark(vector_pcap, "rmpp_data", "infiniband.rmpp.segmentnumber") == \
        [format_field("infiniband.rmpp.segmentnumber", pkt["infiniband.rmpp.segmentnumber"])]


def test_pinned_classportinfo_trap_hl(vector_pcap) -> None:
    """ClassPortInfo byte 64 is TrapHL (libibmad IB_CPI_TRAP_HL_F); Wireshark shows
    it as `classportinfo.reserved`."""
    assert _tshark(vector_pcap, "sa_cpi", "infiniband.classportinfo.reserved") == \
        ["0x00", "0x40"]
    pkt = ibwire.decode(_native(VECTORS["sa_cpi"][0]), "ib")
    assert pkt["infiniband.classportinfo.traphl"] == 0x40
    assert pkt.values_of("infiniband.classportinfo.reserved") == [0]   # byte 32 only


def test_pinned_pathrecord_service_id_and_qos_class(vector_pcap) -> None:
    assert _tshark(vector_pcap, "pathrecords", "infiniband.reserved")[-1] == \
        "1122334455667788"
    assert _tshark(vector_pcap, "pathrecords", "infiniband.pathrecord.sl") == ["0x0005"]
    pkt = ibwire.decode(_native(VECTORS["pathrecords"][0]), "ib")
    assert pkt["infiniband.pathrecord.serviceid"] == 0x1122334455667788
    assert pkt["infiniband.pathrecord.qosclass"] == 0x123
    # tshark decodes the first record of a table only.
    assert _tshark(vector_pcap, "pathrecords", "infiniband.pathrecord.dlid") == ["0x0014"]


def test_pinned_portcounters_fields_wireshark_lacks(vector_pcap) -> None:
    reserved = _tshark(vector_pcap, "portcounters", "infiniband.reserved")
    assert "0a" in reserved and "000d" in reserved      # CounterSelect2, QP1Dropped
    assert _tshark(vector_pcap, "portcounters", "infiniband.portcounters.portxmitwait") == []
    pkt = ibwire.decode(_native(VECTORS["portcounters"][0]), "ib")
    pc = "infiniband.portcounters"
    assert (pkt[f"{pc}.counterselect2"], pkt[f"{pc}.qp1dropped"],
            pkt[f"{pc}.portxmitwait"]) == (0x0A, 13, 19)
    ext = ibwire.decode(_native(VECTORS["portcounters_ext"][0]), "ib")
    assert "12345678" in _tshark(vector_pcap, "portcounters_ext", "infiniband.reserved")
    assert ext["infiniband.portcounters_ext.counterselect2"] == 0x12345678
    assert ext["infiniband.portcounters_ext.symbolerrorcounter"] == 7
    assert ext["infiniband.portcounters_ext.qp1dropped"] == 9


def test_pinned_multicast_forwarding_table_length(vector_pcap) -> None:
    """A MulticastForwardingTable block holds 32 PortMasks; Wireshark shows 16."""
    shown = _tshark(vector_pcap, "mft", "infiniband.multicastforwardingtable.portmask")
    pkt = ibwire.decode(_native(VECTORS["mft"][0]), "ib")
    ours = pkt.values_of("infiniband.multicastforwardingtable.portmask")
    assert len(shown) == 16 and len(ours) == 32
    assert shown == [format_field("infiniband.multicastforwardingtable.portmask", v)
                     for v in ours[:16]]


def test_wireshark_naming_quirks_are_mirrored(vector_pcap) -> None:
    """Not mistakes in values, but names to know: ServiceRecord fields are
    `infiniband.linkrecord.service*`, GUIDInfo entries `infiniband.switchinfo.guid`,
    the DR SMP M_Key `infiniband.smplid.mkey`; we use the same names."""
    assert _tshark(vector_pcap, "servicerecord", "infiniband.linkrecord.serviceid") == \
        ["0x10000ce100415453"]
    sr = ibwire.decode(_native(VECTORS["servicerecord"][0]), "ib")
    assert sr["infiniband.linkrecord.serviceid"] == 0x10000CE100415453
    gi = ibwire.decode(_native(VECTORS["guidinfo"][0]), "ib")
    assert len(_tshark(vector_pcap, "guidinfo", "infiniband.switchinfo.guid")) == 8
    assert gi.values_of("infiniband.switchinfo.guid")[7] == 0x0002C90300A10007


def test_pinned_multipath_service_id(vector_pcap) -> None:
    """MultiPathRecord bytes 13 and 17-23 hold the ServiceID (OpenSM
    `service_id_8msb` / `service_id_56lsb`); Wireshark shows reserved bytes."""
    reserved = _tshark(vector_pcap, "multipath", "infiniband.reserved")
    assert "11" in reserved and "22334455667788" in reserved
    pkt = ibwire.decode(_native(VECTORS["multipath"][0]), "ib")
    assert pkt["infiniband.multipathrecord.serviceidmsb"] == 0x11
    assert pkt["infiniband.multipathrecord.serviceidlsb"] == 0x22334455667788


def test_pinned_trap_259_is_malformed_in_wireshark(vector_pcap) -> None:
    """Wireshark fetches the 2-byte DataValid and SWLIDADDR of trap 259 as IPv6
    addresses and throws: the whole notice becomes a Malformed Packet."""
    import subprocess

    from mad_helpers import TSHARK
    index = sorted(VECTORS).index("trap259") + 1
    out = subprocess.run([TSHARK, "-r", str(vector_pcap), "-Y", "_ws.malformed", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True).stdout.split()
    assert str(index) in out
    assert _tshark(vector_pcap, "trap259", "infiniband.trap.lidaddr1") == []
    pkt = ibwire.decode(_native(VECTORS["trap259"][0]), "ib")
    assert not pkt.problems
    assert (pkt["infiniband.trap.datavalid"], pkt["infiniband.trap.lidaddr1"],
            pkt["infiniband.trap.swlidaddr"], pkt["infiniband.trap.portno"]) == (0x1234, 1, 9, 4)


def test_pinned_rmpp_labels() -> None:
    """Labels only: Wireshark labels RMPPVersion "RMPP Type"; ours say what it is."""
    need_tshark()
    from mad_helpers import tshark_labels

    from ibwire.fields import REGISTRY
    assert tshark_labels()["infiniband.rmpp.rmppversion"] == "RMPP Type"
    assert REGISTRY["infiniband.rmpp.rmppversion"].label == "RmppVersion"
