"""The fabric view of the real MAD captures equals what the real tools printed:
ibnetdiscover's topology (node for node, link for link), the same fabric from
OpenSM's sweep, perfquery's counters, sminfo's subnet manager."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from fabric_helpers import parse_topology, topology_links
from mad_helpers import MAD_DIR, need_shared
from test_mad_tools import dotted, tool

from ibwire.analysis import fabric_text
from ibwire.analysis.fabric import build_fabric
from ibwire.analysis.fabric_json import fabric_dict
from ibwire.cli.main import main

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "schemas" /
                     "fabric.schema.json").read_text())


def validate(doc: dict) -> None:
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def _fabric(*names: str):
    need_shared()
    return build_fabric([str(MAD_DIR / f"{n}.pcap") for n in names])


def _expected():
    return parse_topology(tool("ibnetdiscover").read_text())


def _check_topology(fab) -> int:
    want = _expected()
    assert set(fab.nodes) == set(want)
    for guid, w in want.items():
        node = fab.nodes[guid]
        assert node.num_ports == w.nports
        assert node.description == w.desc
        assert node.vendor_id == w.ident["vendid"] and node.device_id == w.ident["devid"]
        assert node.system_image_guid == w.ident["sysimgguid"]
        assert (node.type == 2) == (w.kind == "Switch")
        if w.kind == "Switch":
            assert node.lid == w.lid
            assert node.ports[0].guid == w.ident["switchguid"]
        for num, p in w.ports.items():
            if p["guid"] is not None:                 # a CA port: its GUID and LID
                assert node.ports[num].guid == p["guid"]
                assert node.ports[num].lid == p["lid"]
            peer = fab.nodes[p["peer"][0]]
            if p["peer_guid"] is not None:
                assert peer.ports[p["peer"][1]].guid == p["peer_guid"]
    got = {frozenset({(lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)}) for lk in fab.links}
    assert got == topology_links(want)
    return len(got)


def test_ibnetdiscover_topology_equals_tool() -> None:
    fab = _fabric("ibnetdiscover")
    assert _check_topology(fab) == 22
    assert not fab.missing


def test_opensm_sweep_is_the_same_fabric() -> None:
    fab = _fabric("opensm-sweep")
    assert _check_topology(fab) == 22
    # OpenSM read every port's P_Key table: the default partition everywhere.
    assert all(p.pkeys.get(0) == 0xFFFF for n in fab.nodes.values() for p in n.ports.values()
               if p.pkeys)
    # ... and programmed the switches' LFTs: every LID routes to its port's owner.
    for node in fab.nodes.values():
        if node.is_switch:
            assert node.lft, node.description


def test_our_topology_text_parses_to_the_tools() -> None:
    fab = _fabric("ibnetdiscover")
    ours = parse_topology(fabric_text.topology(fab))
    want = _expected()
    assert topology_links(ours) == topology_links(want)
    for guid, w in want.items():
        o = ours[guid]
        assert (o.kind, o.nports, o.desc, o.lid, o.ident) == (w.kind, w.nports, w.desc, w.lid,
                                                             w.ident)
        assert o.ports == w.ports
    # Block for block, the text is what ibnetdiscover printed (only the order of the
    # blocks, which follows its discovery order, differs).
    blocks = [{b.strip() for b in text.split("\n\n") if "vendid=" in b}
              for text in (fabric_text.topology(fab), tool("ibnetdiscover").read_text())]
    assert blocks[0] == blocks[1] and len(blocks[0]) == 18


def test_routes_from_lfts_reach_every_lid() -> None:
    from ibwire.analysis.fabric_attrs import route
    fab = _fabric("opensm-sweep")
    cas = [lid for lid, e in fab.lids.items() if not fab.nodes[e.guid].is_switch]
    for src in cas:
        for dst in cas:
            hops = route(fab, src, dst)
            assert hops is not None, (src, dst)
            assert len(hops) <= 4          # CA, leaf, spine, leaf in a two-level tree


@pytest.mark.parametrize("name,kind", [("perfquery", "PortCounters"),
                                       ("perfquery-ext", "PortCountersExtended"),
                                       ("perfquery-reset", "PortCounters")])
def test_counters_equal_perfquery(name: str, kind: str) -> None:
    fab = _fabric(name)
    text = tool(name).read_text()
    lid, port = map(int, re.search(r"Lid (\d+) port (\d+)", text).groups())
    first = next(r for r in fab.counters[(lid, port)] if r.kind == kind)
    want = {k: int(v, 0) for k, v in dotted(tool(name)).items()}
    ours = {fabric_text._perf_name(k): v for k, v in {**first.values, **first.selects}.items()}
    assert len(want) >= 10 and ours == want
    # Our perfquery-style text is what perfquery printed, line for line (CapMask from
    # the PMA's ClassPortInfo; perfquery -r then resets: our next block shows that).
    printed = fabric_text.counters(fab)
    if name == "perfquery-reset":
        assert printed.startswith(text) and "reset by this Set" in printed[len(text):]
    else:
        assert printed == text


def test_perfquery_reset_marked() -> None:
    fab = _fabric("perfquery-reset")
    reads = fab.counters[(12, 1)]
    assert [r.reset for r in reads] == [False, True]
    assert reads[1].reset_mask == 0x1FFFF            # CounterSelect 0xFFFF, CounterSelect2 1
    assert reads[1].values["port_xmit_data"] == 0


def test_sminfo() -> None:
    d = fabric_dict(_fabric("sminfo"))
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-f]+), activity count (\d+) priority (\d+)",
                  tool("sminfo").read_text())
    (sm,) = d["sm"]
    assert (sm["lid"], int(sm["guid"], 16), sm["priority"], sm["state"]) == \
        (int(m[1]), int(m[2], 16), int(m[4]), "Master")
    assert sm["history"][0]["act_count"] == int(m[3])


def test_cli_json_schema_shape(capsys: pytest.CaptureFixture[str]) -> None:
    need_shared()
    assert main(["fabric", "-T", "json", str(MAD_DIR / "ibnetdiscover.pcap")]) == 0
    d = json.loads(capsys.readouterr().out)
    validate(d)
    assert len(d["nodes"]) == 18 and len(d["links"]) == 22
    assert all(re.fullmatch(r"0x[0-9a-f]{16}", n["guid"]) for n in d["nodes"])
    link = d["links"][0]
    assert set(link) >= {"a", "b", "width", "speed", "state"}
    assert (link["width"], link["speed"], link["state"]) == ("4X", "25.78125 Gbps", "Active")
    port = d["nodes"][0]["ports"][1]
    assert set(port) >= {"num", "lid", "state", "phys_state", "width", "speed", "guid"}


def test_cli_views(capsys: pytest.CaptureFixture[str]) -> None:
    need_shared()
    cap = str(MAD_DIR / "ibnetdiscover.pcap")
    assert main(["fabric", "--links", cap]) == 0
    out = capsys.readouterr().out
    assert re.search(r'==\( 4X      25\.78125 Gbps Active/  LinkUp\)==>\s+1\s+1\[  \] '
                     r'"node01 HCA-1" \( \)', out)
    assert main(["fabric", cap]) == 0
    assert "18 nodes, 22 links" in capsys.readouterr().out


@pytest.mark.parametrize("names", [("opensm-sweep",), ("perfquery-reset", "perfquery-ext"),
                                   ("sminfo", "ibroute", "saquery-nr", "saquery-pir")])
def test_json_matches_schema(names: tuple[str, ...]) -> None:
    validate(json.loads(json.dumps(fabric_dict(_fabric(*names)))))
    with pytest.raises(jsonschema.ValidationError):      # the schema does constrain
        validate({**fabric_dict(_fabric(*names)), "nodes": [{"guid": "2c9"}]})


def test_truncated_capture_gives_what_was_read(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    need_shared()
    data = (MAD_DIR / "ibnetdiscover.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) // 2 + 7])
    fab = build_fabric([str(cut)])
    assert fab.errors and "truncated" in fab.errors[0]
    full = _fabric("ibnetdiscover")
    got = {frozenset({(lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)}) for lk in fab.links}
    want = {frozenset({(lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)}) for lk in full.links}
    assert got and got < want
    assert main(["fabric", "-T", "json", str(cut)]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["errors"] and "truncated" in out.err


def test_master_sm_from_portinfo() -> None:
    """ibnetdiscover never asks SMInfo, but every PortInfo names the master SM's LID;
    sminfo says who that is (LID 1, port GUID 0x2c90300a10001)."""
    d = fabric_dict(_fabric("ibnetdiscover"))
    (sm,) = d["sm"]
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-f]+)", tool("sminfo").read_text())
    assert (sm["lid"], int(sm["guid"], 16), sm["state"]) == (int(m[1]), int(m[2], 16), None)
    assert sm["from"] == "PortInfo.MasterSMLID"


def test_rich_tables_on_a_terminal() -> None:
    import io

    from ibwire.cli.fabric_tables import summary
    from ibwire.cli.output import Output
    buf = io.StringIO()
    summary(_fabric("opensm-sweep", "sminfo"), Output(buf, color=True))
    text = buf.getvalue()
    assert "\x1b[" in text                       # rich styled it
    for word in ("Nodes", "Links", "Subnet managers", "leaf1", "25.78125 Gbps", "Master"):
        assert word in text


def test_opensm_brings_ports_up_in_order() -> None:
    """OpenSM's sweep moves every linked port Initialize -> Armed -> Active (IBA 7.2
    port states) and the view keeps that history."""
    d = fabric_dict(_fabric("opensm-sweep"))
    nodes = {n["guid"]: n for n in d["nodes"]}
    order = ["Down", "Initialize", "Armed", "Active"]
    seen = 0
    for link in d["links"]:
        for end in (link["a"], link["b"]):
            port = next(p for p in nodes[end["guid"]]["ports"] if p["num"] == end["port"])
            assert port["state"] == "Active"
            states = [h["state"] for h in port.get("history", [])]
            if states:
                assert states == sorted(states, key=order.index)
                assert states[-3:] == ["Initialize", "Armed", "Active"]
                seen += 1
    assert seen == 44                     # both ends of all 22 links
