"""Decoded values equal what the real tools printed (`*.tool-output.txt`), field by
field: the tool output text is parsed here and compared with the decoded packets."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from mad_helpers import MAD_DIR, decoded, need_shared

from ibwire.packet import Packet

# -- parsing the tools' text ---------------------------------------------------------
WIDTHS = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
SPEEDS = {"2.5 Gbps": 1, "5.0 Gbps": 2, "10.0 Gbps": 4}
EXT_SPEEDS = {"14.0625 Gbps": 1, "25.78125 Gbps": 2, "53.125 Gbps": 4, "106.25 Gbps": 8}
PORT_STATES = {"Down": 1, "Initialize": 2, "Armed": 3, "Active": 4}
PHYS_STATES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5}
VLS = {"VL0": 1, "VL0-1": 2, "VL0-3": 3, "VL0-7": 4, "VL0-14": 5}
MTU = {"256": 1, "512": 2, "1024": 3, "2048": 4, "4096": 5}
NODE_TYPES = {"Channel Adapter": 1, "Switch": 2, "Router": 3}


def _bits(text: str, table: dict[str, int]) -> int:
    return sum(table[part.strip()] for part in text.split(" or "))


def _num(text: str) -> int:
    return int(text, 0)


def dotted(path: Path) -> dict[str, str]:
    """`Key:.....value` / `key......value` lines -> {key: value}."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9_ /]+?)[:.]*\.{2,}(.*)$", line) or \
            re.match(r"\s*([A-Za-z0-9_ /]+?):\.+(.*)$", line)
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out


def tool(name: str) -> Path:
    need_shared()
    return MAD_DIR / f"{name}.tool-output.txt"


def responses(capture: str, attribute: str) -> list[Packet]:
    need_shared()
    return [p for _, _, p in decoded(MAD_DIR / f"{capture}.pcap")
            if p["infiniband.mad.method"] & 0x80 and
            p["infiniband.mad.attributename"] == attribute]


# -- PortInfo, shared by smpquery portinfo and saquery PIR ------------------------------
PORTINFO = {  # tool key -> (our public name suffix, parser)
    "GidPrefix": ("guid", _num), "Lid": ("lid", _num), "SMLid": ("mastersmlid", _num),
    "CapMask": ("capabilitymask", _num), "DiagCode": ("diagcode", _num),
    "MkeyLeasePeriod": ("m_keyleaseperiod", _num), "LocalPort": ("localportnum", _num),
    "LinkWidthEnabled": ("linkwidthenabled", lambda t: _bits(t, WIDTHS)),
    "LinkWidthSupported": ("linkwidthsupported", lambda t: _bits(t, WIDTHS)),
    "LinkWidthActive": ("linkwidthactive", lambda t: _bits(t, WIDTHS)),
    "LinkSpeedSupported": ("linkspeedsupported", lambda t: _bits(t, SPEEDS)),
    "LinkState": ("portstate", PORT_STATES.__getitem__),
    "PhysLinkState": ("portphysicalstate", PHYS_STATES.__getitem__),
    "LinkDownDefState": ("linkdowndefaultstate", PHYS_STATES.__getitem__),
    "ProtectBits": ("m_keyprotectbits", _num), "LMC": ("lmc", _num),
    "LinkSpeedActive": ("linkspeedactive", lambda t: _bits(t, SPEEDS)),
    "LinkSpeedEnabled": ("linkspeedenabled", lambda t: _bits(t, SPEEDS)),
    "NeighborMTU": ("neighbormtu", MTU.__getitem__), "SMSL": ("mastersmsl", _num),
    "VLCap": ("vlcap", VLS.__getitem__), "InitType": ("inittype", _num),
    "VLHighLimit": ("vlhighlimit", _num), "VLArbHighCap": ("vlarbitrationhighcap", _num),
    "VLArbLowCap": ("vlarbitrationlowcap", _num), "InitReply": ("inittypereply", _num),
    "MtuCap": ("mtucap", MTU.__getitem__), "VLStallCount": ("vlstallcount", _num),
    "HoqLife": ("hoqlife", _num), "OperVLs": ("operationalvls", VLS.__getitem__),
    "PartEnforceInb": ("partitionenforcementinbound", _num),
    "PartEnforceOutb": ("partitionenforcementoutbound", _num),
    "FilterRawInb": ("filterrawinbound", _num), "FilterRawOutb": ("filterrawoutbound", _num),
    "MkeyViolations": ("m_keyviolations", _num), "PkeyViolations": ("p_keyviolations", _num),
    "QkeyViolations": ("q_keyviolations", _num), "GuidCap": ("guidcap", _num),
    "ClientReregister": ("clientreregister", _num),
    "McastPkeyTrapSuppressionEnabled": ("multicastpkeytrapsuppressionenabled", _num),
    "SubnetTimeout": ("subnettimeout", _num), "RespTimeVal": ("resptimevalue", _num),
    "LocalPhysErr": ("localphyerrors", _num), "OverrunErr": ("overrunerrors", _num),
    "MaxCreditHint": ("maxcredithint", _num), "RoundTrip": ("linkroundtriplatency", _num),
    "CapabilityMask2": ("capabilitymask2", _num),
    "LinkSpeedExtActive": ("linkspeedextactive", lambda t: _bits(t, EXT_SPEEDS)),
    "LinkSpeedExtSupported": ("linkspeedextsupported", lambda t: _bits(t, EXT_SPEEDS)),
    "LinkSpeedExtEnabled": ("linkspeedextenabled", lambda t: _bits(t, EXT_SPEEDS)),
}
CAP_NAMES = {"IsTrapSupported": "capabilitymask.trapsupported",
             "IsSLMappingSupported": "capabilitymask.slmappingsupported",
             "IsExtendedSpeedsSupported": "capabilitymask.extendedspeedssupported",
             "IsCapabilityMask2Supported": "capabilitymask.capabilitymask2supported",
             "IsVendorClassSupported": "capabilitymask.vendorclasssupported",
             "IsCapabilityMaskNoticeSupported": "capabilitymask.capabilitymasknoticesupported",
             "IsLinkWidth2xSupported": "capabilitymask2.linkwidth2xsupported",
             "IsLinkSpeedHDRSupported": "capabilitymask2.linkspeedhdrsupported"}


def check_portinfo(text_path: Path, pkt: Packet) -> int:
    values = dotted(text_path)
    checked = 0
    for key, (suffix, parse) in PORTINFO.items():
        assert pkt[f"infiniband.portinfo.{suffix}"] == parse(values[key]), key
        checked += 1
    listed = {w for w in re.findall(r"^\s+(Is\w+)$", text_path.read_text(), re.M)}
    for cap, name in CAP_NAMES.items():
        assert pkt[f"infiniband.portinfo.{name}"] == (cap in listed), cap
    return checked


def test_smpquery_portinfo() -> None:
    pkt = responses("smpquery-portinfo", "PortInfo")[0]
    assert pkt["infiniband.mad.attributemodifier"] == 1          # "port 1"
    assert check_portinfo(tool("smpquery-portinfo"), pkt) == len(PORTINFO)


def test_saquery_portinforecord() -> None:
    pkt = responses("saquery-pir", "PortInfoRecord")[0]
    values = dotted(tool("saquery-pir"))
    assert pkt["infiniband.sa.endportlid"] == int(values["EndPortLid"])
    assert pkt["infiniband.sa.portnum"] == int(values["PortNum"])
    assert pkt["infiniband.portinforecord.options"] == int(values["Options"], 0)
    assert check_portinfo(tool("saquery-pir"), pkt) == len(PORTINFO)
    assert len(pkt.values_of("infiniband.portinfo.lid")) == 1   # one record, slots after it empty


def test_smpquery_nodeinfo() -> None:
    pkt = responses("smpquery-nodeinfo", "NodeInfo")[0]
    v = dotted(tool("smpquery-nodeinfo"))
    expect = {"baseversion": _num(v["BaseVers"]), "classversion": _num(v["ClassVers"]),
              "nodetype": NODE_TYPES[v["NodeType"]], "numports": _num(v["NumPorts"]),
              "systemimageguid": _num(v["SystemGuid"]), "nodeguid": _num(v["Guid"]),
              "portguid": _num(v["PortGuid"]), "partitioncap": _num(v["PartCap"]),
              "deviceid": _num(v["DevId"]), "revision": _num(v["Revision"]),
              "localportnum": _num(v["LocalPort"]), "vendorid": _num(v["VendorId"])}
    assert {k: pkt[f"infiniband.nodeinfo.{k}"] for k in expect} == expect
    assert pkt["infiniband.lrh.slid"] == 20                     # "Lid 20"


def test_smpquery_nodedesc() -> None:
    pkt = responses("smpquery-nodedesc", "NodeDescription")[0]
    text = tool("smpquery-nodedesc").read_text().split("..", )[-1].strip(". \n")
    assert pkt["infiniband.nodedescription.nodestring"].rstrip(b"\0").decode() == text == \
        "spine1"


def test_smpquery_switchinfo() -> None:
    pkt = responses("smpquery-switchinfo", "SwitchInfo")[0]
    v = dotted(tool("smpquery-switchinfo"))
    names = {"LinearFdbCap": "linearfdbcap", "RandomFdbCap": "randomfdbcap",
             "McastFdbCap": "multicastfdbcap", "LinearFdbTop": "linearfdbtop",
             "DefPort": "defaultport", "DefMcastPrimPort": "defaultmulticastprimaryport",
             "DefMcastNotPrimPort": "defaultmulticastnotprimaryport",
             "LifeTime": "lifetimevalue", "StateChange": "portstatechange",
             "OptSLtoVLMapping": "optimizedsltovlmappingprogramming",
             "LidsPerPort": "lidsperport", "PartEnforceCap": "partitionenforcementcap",
             "InboundPartEnf": "inboundenforcementcap",
             "OutboundPartEnf": "outboundenforcementcap",
             "FilterRawInbound": "filterrawinboundcap",
             "FilterRawOutbound": "filterrawoutboundcap",
             "EnhancedPort0": "enhancedportzero", "MulticastFDBTop": "multicastfdbtop"}
    for key, name in names.items():
        assert pkt[f"infiniband.switchinfo.{name}"] == _num(v[key]), key


def _table(path: Path) -> list[int]:
    out = []
    for line in path.read_text().splitlines():
        m = re.match(r"\s*\d+:\s+(.*)$", line)
        if m:
            out += [int(x, 16) for x in m.group(1).split()]
    return out


def test_smpquery_pkeys() -> None:
    pkeys = _table(tool("smpquery-pkeys"))
    got = [k for p in responses("smpquery-pkeys", "P_KeyTable")
           for k in p.values_of("infiniband.p_keytable.p_key")]
    assert len(pkeys) == 64 and got == pkeys
    assert pkeys[0] == 0xFFFF
    cap = int(re.search(r"(\d+) pkeys capacity", tool("smpquery-pkeys").read_text())[1])
    assert responses("smpquery-pkeys", "NodeInfo")[0]["infiniband.nodeinfo.partitioncap"] == cap


def test_smpquery_guidinfo() -> None:
    guids = _table(tool("smpquery-guidinfo"))
    pkts = sorted(responses("smpquery-guidinfo", "GUIDInfo"),
                  key=lambda p: p["infiniband.mad.attributemodifier"])
    got = [g for p in pkts for g in p.values_of("infiniband.switchinfo.guid")]
    assert len(guids) == 32 and got == guids
    cap = int(re.search(r"(\d+) guids capacity", tool("smpquery-guidinfo").read_text())[1])
    assert responses("smpquery-guidinfo", "PortInfo")[0]["infiniband.portinfo.guidcap"] == cap


def test_saquery_noderecord() -> None:
    pkt = responses("saquery-nr", "NodeRecord")[0]
    v = dotted(tool("saquery-nr"))
    assert pkt["infiniband.sa.lid"] == int(v["lid"])
    assert pkt["infiniband.nodeinfo.baseversion"] == _num(v["base_version"])
    assert pkt["infiniband.nodeinfo.classversion"] == _num(v["class_version"])
    assert pkt["infiniband.nodeinfo.nodetype"] == NODE_TYPES[v["node_type"]]
    assert pkt["infiniband.nodeinfo.numports"] == int(v["num_ports"])
    assert pkt["infiniband.nodeinfo.systemimageguid"] == _num(v["sys_guid"])
    assert pkt["infiniband.nodeinfo.nodeguid"] == _num(v["node_guid"])
    assert pkt["infiniband.nodeinfo.portguid"] == _num(v["port_guid"])
    assert pkt["infiniband.nodeinfo.partitioncap"] == _num(v["partition_cap"])
    assert pkt["infiniband.nodeinfo.deviceid"] == _num(v["device_id"])
    assert pkt["infiniband.nodeinfo.revision"] == _num(v["revision"])
    assert pkt["infiniband.nodeinfo.localportnum"] == int(v["port_num"])
    assert pkt["infiniband.nodeinfo.vendorid"] == _num(v["vendor_id"])
    assert pkt["infiniband.nodedescription.nodestring"].rstrip(b"\0").decode() == \
        v["NodeDescription"]
    # The response holds the first NodeRecord of the table (AttributeOffset 14 x 8).
    assert pkt["infiniband.sa.attributeoffset"] == 14


def test_saquery_pathrecord() -> None:
    pkt = responses("saquery-pr", "PathRecord")[0]
    v = dotted(tool("saquery-pr"))
    pr = pkt.layer("pathrecord")
    assert pr is not None
    assert pr.service_id == _num(v["service_id"])
    assert pkt["infiniband.pathrecord.dgid"] == ipaddress.IPv6Address(v["dgid"]).packed
    assert pkt["infiniband.pathrecord.sgid"] == ipaddress.IPv6Address(v["sgid"]).packed
    assert pr.dlid == int(v["dlid"]) and pr.slid == int(v["slid"])
    assert (pr.raw_traffic << 31 | pr.flow_label << 8 | pr.hop_limit) == _num(v["hop_flow_raw"])
    assert pr.tclass == _num(v["tclass"])
    assert (pr.reversible << 7 | pr.numb_path) == _num(v["num_path_revers"])
    assert pr.p_key == _num(v["pkey"])
    assert pr.qos_class == _num(v["qos_class"]) and pr.sl == _num(v["sl"])
    assert (pr.mtu_selector << 6 | pr.mtu) == _num(v["mtu"])
    assert (pr.rate_selector << 6 | pr.rate) == _num(v["rate"])
    assert (pr.packet_life_time_selector << 6 | pr.packet_life_time) == _num(v["pkt_life"])
    assert pr.preference == _num(v["preference"])
    assert pkt.values_of("infiniband.pathrecord.dlid") == [20]   # one record, not 3 slots


def test_saquery_classportinfo() -> None:
    pkt = responses("saquery-cpi", "ClassPortInfo")[0]
    v = dotted(tool("saquery-cpi"))
    c = pkt.layer("classportinfo")
    assert c.base_version == int(v["Base version"]) and c.class_version == int(v["Class version"])
    assert c.capability_mask == _num(v["Capability mask"])
    assert c.capability_mask2 == _num(v["Capability mask 2"])
    assert c.resp_time_value == _num(v["Response time value"])
    assert ipaddress.IPv6Address(c.redirect_gid) == ipaddress.IPv6Address(v["Redirect GID"])
    assert (c.redirect_tc << 24 | c.redirect_sl << 20 | c.redirect_fl) == \
        _num(v["Redirect TC/SL/FL"])
    assert c.redirect_lid == int(v["Redirect LID"])
    assert c.redirect_p_key == _num(v["Redirect PKey"])
    assert c.redirect_qp == _num(v["Redirect QP"])
    assert c.redirect_q_key == _num(v["Redirect QKey"])
    assert ipaddress.IPv6Address(c.trap_gid) == ipaddress.IPv6Address(v["Trap GID"])
    assert (c.trap_tc << 24 | c.trap_sl << 20 | c.trap_fl) == _num(v["Trap TC/SL/FL"])
    assert c.trap_lid == int(v["Trap LID"]) and c.trap_p_key == _num(v["Trap PKey"])
    assert (c.trap_hl << 24 | c.trap_qp) == _num(v["Trap HL/QP"])
    assert c.trap_q_key == _num(v["Trap QKey"])


def _perf(capture: str, attribute: str, prefix: str, index: int = 0) -> None:
    text = tool(capture)
    v = dotted(text)
    pkt = responses(capture, attribute)[index]
    checked = 0
    for key, value in v.items():
        name = f"{prefix}.{key.lower()}"
        assert pkt[name] == _num(value), key
        checked += 1
    assert checked >= 10
    cap = re.search(r"CapMask: (0x[0-9a-f]+)", text.read_text())[1]
    cpi = responses(capture, "ClassPortInfo")[0]
    assert cpi["infiniband.classportinfo.capabilitymask"] == int(cap, 16)
    lid, port = map(int, re.search(r"Lid (\d+) port (\d+)", text.read_text()).groups())
    assert pkt["infiniband.lrh.slid"] == lid and pkt[f"{prefix}.portselect"] == port


def test_perfquery() -> None:
    _perf("perfquery", "PortCounters", "infiniband.portcounters")


def test_perfquery_extended() -> None:
    _perf("perfquery-ext", "PortCountersExtended", "infiniband.portcounters_ext")


def test_perfquery_reset() -> None:
    # perfquery -r prints the counters it read, then resets them with a Set.
    _perf("perfquery-reset", "PortCounters", "infiniband.portcounters", index=0)
    need_shared()
    sets = [p for _, _, p in decoded(MAD_DIR / "perfquery-reset.pcap")
            if p["infiniband.mad.method"] == 0x02]
    assert sets[0]["infiniband.portcounters.counterselect"] == 0xFFFF
    assert sets[0]["infiniband.portcounters.counterselect2"] == 0x01   # QP1Dropped too


def test_sminfo() -> None:
    pkt = responses("sminfo", "SMInfo")[0]
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-f]+), activity count (\d+) priority (\d+) "
                  r"state (\d+)", tool("sminfo").read_text())
    lid, guid, act, prio, state = m.groups()
    assert pkt["infiniband.lrh.slid"] == int(lid)
    assert pkt["infiniband.sminfo.guid"] == int(guid, 16)
    assert pkt["infiniband.sminfo.actcount"] == int(act)
    assert pkt["infiniband.sminfo.priority"] == int(prio)
    assert pkt["infiniband.sminfo.smstate"] == int(state) == 3       # SMINFO_MASTER


def test_ibroute() -> None:
    text = tool("ibroute").read_text()
    head = re.search(r"Lid (\d+) guid (0x[0-9a-f]+) \((\w+)\)", text)
    lft = responses("ibroute", "LinearForwardingTable")[0]
    assert lft["infiniband.lrh.slid"] == int(head[1])
    ports = lft.values_of("infiniband.linearforwardingtable.port")
    assert len(ports) == 64
    # Who answers at each LID (ibroute asked NodeInfo/NodeDescription of every LID).
    info = {p["infiniband.lrh.slid"]: p for p in responses("ibroute", "NodeInfo")}
    desc = {p["infiniband.lrh.slid"]: p["infiniband.nodedescription.nodestring"]
            .rstrip(b"\0").decode() for p in responses("ibroute", "NodeDescription")}
    assert info[int(head[1])]["infiniband.nodeinfo.nodeguid"] == int(head[2], 16)
    assert desc[int(head[1])] == head[3]
    rows = re.findall(r"^0x([0-9a-f]{4}) (\d{3}) : \((Channel Adapter|Switch) portguid "
                      r"(0x[0-9a-f]+): '([^']*)'\)", text, re.M)
    assert len(rows) == int(re.search(r"(\d+) valid lids dumped", text)[1]) == 20
    for lid_hex, port, kind, guid, name in rows:
        lid = int(lid_hex, 16)
        assert ports[lid] == int(port), lid
        node = info[lid]
        assert node["infiniband.nodeinfo.nodetype"] == NODE_TYPES[kind]
        assert node["infiniband.nodeinfo.portguid"] == int(guid, 16)
        assert desc[lid] == name
    assert all(p == 0xFF for p in ports[21:])   # LIDs past LinearFDBTop unused
