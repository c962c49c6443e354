"""ibnetdiscover's printed topology and the directed-route responses of a discovery
(ibnetdiscover, an OpenSM sweep), from the decoded packets: every node, port, link
and port speed it printed is in the DR SMP responses, and every response has D set."""

from __future__ import annotations

import re

import pytest
from mad_helpers import MAD_DIR, decoded, need_shared
from test_mad_tools import EXT_SPEEDS, WIDTHS, tool

from ibwire.packet import Packet


# -- ibnetdiscover: the topology it printed, from the DR responses ---------------------
def _by_path(capture: str) -> dict[tuple[int, ...], dict[str, Packet]]:
    """DR responses keyed by the directed route (ports after entry 0)."""
    out: dict[tuple[int, ...], dict[str, Packet]] = {}
    for p in [q for _, _, q in decoded(MAD_DIR / f"{capture}.pcap")]:
        if not p["infiniband.mad.method"] & 0x80:
            continue
        hops = p["infiniband.smpdirected.hopcount"]
        path = tuple(p["infiniband.smpdirected.initialpath"][1:hops + 1])
        key = p["infiniband.mad.attributename"]
        if key == "PortInfo":
            key = f"PortInfo{p['infiniband.mad.attributemodifier']}"
        out.setdefault(path, {})[key] = p
    return out


def test_ibnetdiscover_topology() -> None:
    need_shared()
    paths = _by_path("ibnetdiscover")
    nodes: dict[int, list[tuple[int, ...]]] = {}
    for path, r in paths.items():
        if "NodeInfo" in r:
            nodes.setdefault(r["NodeInfo"]["infiniband.nodeinfo.nodeguid"], []).append(path)
    text = tool("ibnetdiscover").read_text()
    blocks = [b for b in text.split("\n\n") if "vendid=" in b]
    assert len(blocks) == 18 and len(nodes) == 18
    links = 0
    for block in blocks:
        kv = dict(re.findall(r"^(\w+)=(0x[0-9a-f]+)", block, re.M))
        guid = int(kv.get("switchguid", kv.get("caguid")), 16)
        node_paths = nodes[guid]
        r = paths[node_paths[0]]
        ni = r["NodeInfo"]
        assert ni["infiniband.nodeinfo.vendorid"] == int(kv["vendid"], 16)
        assert ni["infiniband.nodeinfo.deviceid"] == int(kv["devid"], 16)
        assert ni["infiniband.nodeinfo.systemimageguid"] == int(kv["sysimgguid"], 16)
        kind, nports, ident, name = re.search(
            r'^(Switch|Ca)\s+(\d+) "([SH])-[0-9a-f]+"\s+# "([^"]*)"', block, re.M).groups()
        assert ni["infiniband.nodeinfo.nodetype"] == (2 if kind == "Switch" else 1)
        assert ni["infiniband.nodeinfo.numports"] == int(nports)
        nd = next(paths[p]["NodeDescription"] for p in node_paths
                  if "NodeDescription" in paths[p])
        assert nd["infiniband.nodedescription.nodestring"].rstrip(b"\0").decode() == name
        if kind == "Switch":
            lid, lmc = map(int, re.search(r"base port 0 lid (\d+) lmc (\d+)", block).groups())
            pi0 = next(paths[p]["PortInfo0"] for p in node_paths if "PortInfo0" in paths[p])
            assert (pi0["infiniband.portinfo.lid"], pi0["infiniband.portinfo.lmc"]) == (lid, lmc)
        for line in block.splitlines():
            m = re.match(r'^\[(\d+)\](?:\(([0-9a-f]+)\))?\s+"[SH]-([0-9a-f]+)"\[(\d+)\]'
                         r'(?:\(([0-9a-f]+)\))?\s+#(.*)$', line)
            if not m:
                continue
            port, own_pguid, peer, peer_port, peer_pguid, comment = m.groups()
            port, peer_port = int(port), int(peer_port)
            # A route to this node continued through `port` reaches the peer, which
            # reports the port it was entered by as LocalPortNum - or the route to the
            # peer continued through `peer_port` reaches this node by `port`.
            peer_guid = int(peer, 16)
            ahead = [paths[p + (port,)]["NodeInfo"] for p in node_paths
                     if "NodeInfo" in paths.get(p + (port,), {})]
            back = [paths[p + (peer_port,)]["NodeInfo"] for p in nodes[peer_guid]
                    if "NodeInfo" in paths.get(p + (peer_port,), {})]
            assert ahead or back, line
            if ahead:
                assert ahead[0]["infiniband.nodeinfo.nodeguid"] == peer_guid
                assert ahead[0]["infiniband.nodeinfo.localportnum"] == peer_port
            else:
                assert back[0]["infiniband.nodeinfo.nodeguid"] == guid
                assert back[0]["infiniband.nodeinfo.localportnum"] == port
            if peer_pguid:
                assert any(paths[p]["NodeInfo"]["infiniband.nodeinfo.portguid"] ==
                           int(peer_pguid, 16) for p in nodes[peer_guid])
            if own_pguid:
                assert any(paths[p]["NodeInfo"]["infiniband.nodeinfo.portguid"] ==
                           int(own_pguid, 16) for p in node_paths)
            # "4xEDR": width 4x and extended speed EDR on the port (SMA PortInfo).
            assert comment.rstrip().endswith("4xEDR")
            pis = [paths[p][f"PortInfo{port}"] for p in node_paths
                   if f"PortInfo{port}" in paths[p]]
            if kind == "Ca":
                pis += [paths[p]["PortInfo0"] for p in node_paths if "PortInfo0" in paths[p]
                        and paths[p]["PortInfo0"]["infiniband.portinfo.localportnum"] == port]
                lid = int(re.match(r"\s*lid (\d+)", comment)[1])
                assert pis and pis[0]["infiniband.portinfo.lid"] == lid
            assert pis, line
            assert pis[0]["infiniband.portinfo.linkwidthactive"] == WIDTHS["4X"]
            assert pis[0]["infiniband.portinfo.linkspeedextactive"] == EXT_SPEEDS["25.78125 Gbps"]
            links += 1
    assert links == 44   # 30 switch-side and 14 CA-side link lines


@pytest.mark.parametrize("capture", ["ibnetdiscover", "opensm-sweep"])
def test_dr_responses_come_back_with_d_set(capture: str) -> None:
    need_shared()
    for _, _, p in decoded(MAD_DIR / f"{capture}.pcap"):
        assert p["infiniband.smpdirected.d"] == (1 if p["infiniband.mad.method"] & 0x80 else 0)
