"""SA records (IBA 15.2.5) and traps/notices (IBA 14.2.5.1, 13.4.8.2) onto the fabric
view. SA records name nodes and ports by LID; they are applied after the SMPs so
that LIDs resolve, and a record whose LID no node owns yet creates the node from
its own NodeInfo (NodeRecord) or waits (other records)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ibwire.analysis import fabric_attrs as fa
from ibwire.analysis.fabric_mads import SA_CLASS, SMP_DR, SMP_LID, TRAP, Exchange, Mad
from ibwire.analysis.fabric_model import End, Fabric, SmSeen, Trap
from ibwire.mad.build import method_code
from ibwire.mad.general import trap_name
from ibwire.mad.names import attribute_id

NOTICE = attribute_id(SA_CLASS, "Notice")
RMPP_DATA = 1
# TABLE_RID heads both Linear- and RandomForwardingTableRecords; only the first has
# one egress port per LID.
LFT_RECORD = attribute_id(SA_CLASS, "LinearForwardingTableRecord")
REPORT = method_code("Report")
TRAP_LAYERS = ("trap_gid", "trap_paths", "trap_128", "trap_129", "trap_144", "trap_145",
               "trap_256", "trap_257", "trap_259", "trap_data")


def _records(mad: Mad) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(record layer, values, table entries after it) in order."""
    out: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    for lay in mad.layers:
        name = lay.layout.name
        if name.endswith("record"):
            out.append((name, lay.values, []))
        elif name.endswith("_entry") and out:
            out[-1][2].append(lay.values)
    return out


def apply_sa(fab: Fabric, exchanges: list[Exchange]) -> None:
    waiting: dict[str, int] = defaultdict(int)
    continued = 0
    for ex in exchanges:
        mad = ex.response
        if mad is None or mad.mgmt_class != SA_CLASS or mad.status != 0:
            continue
        rmpp = mad.values("rmpp")
        if rmpp is not None and rmpp["rmpp_type"] == RMPP_DATA and rmpp["data1"] > 1:
            continued += 1       # the byte stream's continuation: no record boundaries
            continue
        for name, v, entries in _records(mad):
            if name == "noderecord" and v["node_guid"]:
                node = fa.apply_node_info(fab, v)
                node.description = fa.description(v["node_string"])
                num = 0 if node.is_switch else v["local_port_num"]
                if v["lid"]:
                    fab.lids.setdefault(v["lid"], End(node.guid, num))
                continue
            if name == "sminforecord" and v["guid"]:
                fab.sm.append(SmSeen(mad.ts, mad.frame, v["guid"], v["lid"], v["priority"],
                                     v["sm_state"], v["act_count"], "SMInfoRecord"))
                continue
            lid = v.get("end_port_lid", v.get("lid", v.get("from_lid")))
            owner = fab.owner(lid)
            if name == "linkrecord":
                continue            # links need both ends: handled by link_records()
            if owner is None:
                if lid:
                    waiting[name] += 1
                continue
            if name == "portinforecord":
                num = v["port_num"] if owner.is_switch else (v["port_num"] or
                                                             v["local_port_num"])
                fa.apply_port_info(fab, owner, num, v, mad.frame, mad.ts)
            elif name == "lftrecord" and mad.attribute == LFT_RECORD and owner.is_switch:
                fa.apply_lft(owner, v["block_num"], entries)
            elif name == "pkeyrecord":
                end = fab.lids[lid]
                mod = (v["port_num"] << 16) | v["block_num"]
                fa.apply_pkeys(owner, mod, entries, end.port)
    for name, n in sorted(waiting.items()):
        fab.missing.append(f"{n} SA {name}(s) for LIDs no captured node owns")
    if continued:
        fab.missing.append(f"{continued} SA RMPP continuation segment(s) not reassembled: "
                           "only the records of first segments are used")


def link_records(fab: Fabric, exchanges: list[Exchange]
                 ) -> list[tuple[End, End, float, int]]:
    """LinkRecords (FromLID/FromPort -> ToLID/ToPort) whose LIDs both resolve."""
    out = []
    unresolved = 0
    for ex in exchanges:
        mad = ex.response
        if mad is None or mad.mgmt_class != SA_CLASS or mad.status != 0:
            continue
        for name, v, _ in _records(mad):
            if name != "linkrecord" or not v["from_lid"]:
                continue
            a, b = fab.owner(v["from_lid"]), fab.owner(v["to_lid"])
            if a is not None and b is not None:
                out.append((End(a.guid, v["from_port"]), End(b.guid, v["to_port"]), mad.ts,
                            mad.frame))
            else:
                unresolved += 1
    if unresolved:
        fab.missing.append(f"{unresolved} SA LinkRecord(s) name LIDs no captured node owns; "
                           "no link is drawn from them")
    return out


def apply_traps(fab: Fabric, exchanges: list[Exchange]) -> None:
    """Trap() from an SMA (SubnMgmt class) and Report() from the SA (SubnAdm)."""
    for ex in exchanges:
        mad = ex.request
        if mad is None or mad.attribute != NOTICE:
            continue
        if not ((mad.mgmt_class in (SMP_LID, SMP_DR) and mad.method == TRAP) or
                (mad.mgmt_class == SA_CLASS and mad.method == REPORT)):
            continue
        v = mad.values("notice")
        if v is None:
            continue
        number = v["trap_number_device_id"] if v["is_generic"] else None
        details: dict[str, Any] = {}
        for name in TRAP_LAYERS:
            d = mad.values(name)
            if d is not None:
                details = {k: (val.hex() if isinstance(val, (bytes, bytearray)) else
                               str(val) if not isinstance(val, (int, str)) else val)
                           for k, val in d.items() if not k.startswith("reserved")}
                break
        fab.traps.append(Trap(
            mad.ts, mad.frame, number,
            trap_name(number) if number is not None else
            f"vendor trap 0x{v['trap_number_device_id']:04x}",
            v["issuer_lid"] or mad.slid, v["producer_type_vendor_id"], details,
            repressed=ex.response is not None))
