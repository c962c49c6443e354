"""Management traffic over time on a generated fabric (see `sweep.py`): a
performance manager polling PortCounters, a counter reset, traps from switches
and SMInfo polls that see a standby SM take over. The truth is what the script
was told to do: which ports congest (PortXmitWait rises), which have a bad cable
(SymbolErrorCounter and LinkErrorRecoveryCounter rise), when the reset happens.

Every MAD is LID-routed and answered (PMA GetResp, TrapRepress, SMInfo GetResp),
one packet every `step_ns` when written with `ibwire.write(..., step_ns=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibwire.analysis.fabric_mads import PERF_CLASS as PERF
from ibwire.analysis.fabric_mads import SMP_LID
from ibwire.gen.sweep import SWITCH, Topology
from ibwire.mad.build import build_mad, mad_packet, sa_mad

PRODUCER_SWITCH = 2
TRAP_LINK_STATE = 128
STANDBY, MASTER = 2, 3
ALL_COUNTERS = 0xFFFF


@dataclass
class Script:
    reads: int = 5
    congested: set[tuple[int, int]] = field(default_factory=set)    # (LID, port)
    bad_cable: set[tuple[int, int]] = field(default_factory=set)
    reset_after: int | None = 2          # reset every polled port after this read
    traffic_per_read: int = 1000         # PortXmitPkts added per read
    trap_lids: list[int] = field(default_factory=list)
    sm_lid: int = 1
    sm_guid: int = 0x0002C903000F0001


class Poller:
    def __init__(self, sm_lid: int) -> None:
        self.sm_lid = sm_lid
        self.tid = 0x0002_0000_0000_0000
        self.packets: list[bytes] = []

    def exchange(self, cls: int, method: str, resp_method: str, attr: str, lid: int,
                 mod: int = 0, resp_fields: dict | None = None, **fields: int) -> None:
        self.tid += 1
        req = build_mad(cls, method, attr, transaction_id=self.tid, attribute_modifier=mod,
                        **fields)
        self.packets.append(mad_packet(req, slid=self.sm_lid, dlid=lid))
        resp = build_mad(cls, resp_method, attr, transaction_id=self.tid,
                         attribute_modifier=mod, **{**fields, **(resp_fields or {})})
        self.packets.append(mad_packet(resp, slid=lid, dlid=self.sm_lid))


def polled_ports(topo: Topology) -> list[tuple[int, int]]:
    """(LID, port) of every active switch port: a switch's PMA answers at port 0's LID."""
    out = []
    for node in topo.nodes.values():
        if node.kind != SWITCH:
            continue
        for p in range(1, node.nports + 1):
            if topo.active(node.guid, p):
                out.append((node.lids[0], p))
    return out


def events(topo: Topology, script: Script) -> list[bytes]:
    ports = polled_ports(topo)
    counts = {key: {"port_xmit_pkts": 0, "port_xmit_data": 0, "port_xmit_wait": 0,
                    "symbol_error_counter": 0, "link_error_recovery_counter": 0}
              for key in ports}
    poll = Poller(script.sm_lid)
    for i in range(script.reads):
        state = STANDBY if i < script.reads // 2 else MASTER
        poll.exchange(SMP_LID, "Get", "GetResp", "SMInfo", script.sm_lid,
                      resp_fields=dict(guid=script.sm_guid, priority=14, sm_state=state,
                                       act_count=100 + i))
        for key in ports:
            c = counts[key]
            c["port_xmit_pkts"] += script.traffic_per_read
            c["port_xmit_data"] += script.traffic_per_read * 64
            if key in script.congested:
                c["port_xmit_wait"] += 500
            if key in script.bad_cable:
                c["symbol_error_counter"] += 7
                c["link_error_recovery_counter"] += 1
            poll.exchange(PERF, "Get", "GetResp", "PortCounters", key[0],
                          port_select=key[1], resp_fields=dict(c))
        if script.reset_after is not None and i == script.reset_after:
            for key in ports:
                counts[key] = dict.fromkeys(counts[key], 0)
                poll.exchange(PERF, "Set", "GetResp", "PortCounters", key[0],
                              port_select=key[1], counter_select=ALL_COUNTERS)
        if i < len(script.trap_lids):
            lid = script.trap_lids[i]
            poll.tid += 1
            trap = build_mad(SMP_LID, "Trap", "Notice", transaction_id=poll.tid, is_generic=1,
                             type=1, producer_type_vendor_id=PRODUCER_SWITCH,
                             trap_number_device_id=TRAP_LINK_STATE, issuer_lid=lid,
                             lid_addr=lid)
            poll.packets.append(mad_packet(trap, slid=lid, dlid=script.sm_lid))
            repress = build_mad(SMP_LID, "TrapRepress", "Notice", transaction_id=poll.tid,
                                is_generic=1, type=1, producer_type_vendor_id=PRODUCER_SWITCH,
                                trap_number_device_id=TRAP_LINK_STATE, issuer_lid=lid,
                                lid_addr=lid)
            poll.packets.append(mad_packet(repress, slid=script.sm_lid, dlid=lid))
    return poll.packets


def sa_view(topo: Topology, sm_lid: int, per_mad: int = 25) -> list[bytes]:
    """What a LID-routed tool and the SA tell without any directed route: NodeInfo and
    NodeDescription of every LID (smpquery-like), then the SA's LinkRecord table
    (one record per direction of every active link, `per_mad` records per MAD)."""
    poll = Poller(sm_lid)
    for node in topo.nodes.values():
        for port, lid in node.lids.items():
            poll.exchange(SMP_LID, "Get", "GetResp", "NodeInfo", lid, resp_fields=dict(
                node_type=node.kind, num_ports=node.nports, system_image_guid=node.guid,
                node_guid=node.guid, port_guid=node.port_guid(port),
                local_port_num=port if node.kind != SWITCH else 0, vendor_id=0x02C9))
            poll.exchange(SMP_LID, "Get", "GetResp", "NodeDescription", lid,
                          resp_fields=dict(node_string=node.desc.encode().ljust(64, b"\0")))
    records = []
    for (guid, port), (peer, peer_port) in sorted(topo.peer.items()):
        if not topo.active(guid, port):
            continue
        a, b = topo.nodes[guid], topo.nodes[peer]
        records.append(dict(from_lid=a.lids[0 if a.kind == SWITCH else port], from_port=port,
                            to_port=peer_port, to_lid=b.lids[0 if b.kind == SWITCH else peer_port]))
    for i in range(0, len(records), per_mad):
        poll.tid += 1
        query = sa_mad("GetTable", "LinkRecord", transaction_id=poll.tid)
        poll.packets.append(mad_packet(query, slid=sm_lid, dlid=sm_lid))
        answer = sa_mad("GetTableResp", "LinkRecord", records[i:i + per_mad],
                        transaction_id=poll.tid)
        poll.packets.append(mad_packet(answer, slid=sm_lid, dlid=sm_lid))
    return poll.packets
