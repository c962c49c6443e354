"""Counters over time (deltas, rates, resets, flags), subnet manager state over time,
traps, the counters plot and the per-packet name-resolution fields - on generated
management traffic (`ibwire.gen.mgmt_events`) and the real MAD captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mad_helpers import MAD_DIR, need_shared
from test_fabric_captures import validate

import ibwire
from ibwire.analysis.fabric import build_fabric
from ibwire.analysis.fabric_fields import FIELD_NAMES, frame_values
from ibwire.analysis.fabric_json import fabric_dict
from ibwire.cli.main import main
from ibwire.fields import REGISTRY
from ibwire.gen.mgmt_events import Script, events, polled_ports
from ibwire.gen.sweep import CA, fat_tree, sweep
from ibwire.plots.counters import plot_counters

IB = 247
STEP_NS = 1_000_000


def _capture(tmp_path: Path, topo=None, **script) -> tuple[Path, dict, list]:
    topo = topo or fat_tree()
    ports = polled_ports(topo)
    origin = next(g for g, n in topo.nodes.items() if n.kind == CA)
    s = Script(congested={ports[0]}, bad_cable={ports[1]}, trap_lids=[ports[2][0]],
               sm_lid=topo.nodes[origin].lids[1], **script)
    path = tmp_path / "events.pcap"
    ibwire.write(path, sweep(topo, origin) + events(topo, s), linktype=IB, step_ns=STEP_NS)
    return path, {"topo": topo, "script": s}, ports


def _port(d: dict, key: tuple[int, int]) -> dict:
    return next(c for c in d["counters"] if (c["lid"], c["port"]) == key)


def test_counter_series_deltas_rates_resets(tmp_path: Path) -> None:
    path, _, ports = _capture(tmp_path)
    d = fabric_dict(build_fabric([str(path)]))
    quiet = _port(d, ports[2])
    reads = quiet["reads"]
    assert [r["reset"] for r in reads] == [False, False, False, True, False, False]
    # Every read adds 1000 packets; after the reset the count starts again from 0.
    assert [r["values"]["port_xmit_pkts"] for r in reads] == [1000, 2000, 3000, 0, 1000, 2000]
    assert [r.get("delta", {}).get("port_xmit_pkts") for r in reads] == \
        [None, 1000, 1000, None, 1000, 1000]
    for prev, r in zip(reads, reads[1:]):
        if "delta" in r:        # against the read before (the reset read after a reset)
            assert r["rate"]["port_xmit_pkts"] == pytest.approx(1000 / (r["ts"] - prev["ts"]))
    assert quiet["flags"] == []
    assert quiet["description"] == "spine1"           # port 3 of spine1: the third leaf


def test_flags_congestion_and_cable(tmp_path: Path) -> None:
    path, _, ports = _capture(tmp_path)
    d = fabric_dict(build_fabric([str(path)]))
    congested = {f["counter"]: f for f in _port(d, ports[0])["flags"]}
    assert set(congested) == {"port_xmit_wait"}
    assert congested["port_xmit_wait"]["how"] == "rising"
    assert congested["port_xmit_wait"]["meaning"] == "congestion"
    # Rises: 500 -> 1000 -> 1500, reset to 0, then 500 and 1000 (counted from the reset).
    assert congested["port_xmit_wait"]["rise"] == 500 * 4
    cable = {f["counter"]: f for f in _port(d, ports[1])["flags"]}
    assert set(cable) == {"symbol_error_counter", "link_error_recovery_counter"}
    assert {f["meaning"] for f in cable.values()} == {"cable"}


def test_sm_state_over_time_and_traps(tmp_path: Path) -> None:
    path, truth, ports = _capture(tmp_path)
    d = fabric_dict(build_fabric([str(path)]))
    (sm,) = d["sm"]
    assert sm["guid"] == f"0x{truth['script'].sm_guid:016x}"
    assert [h["state"] for h in sm["history"]] == ["Standby", "Master"]
    assert sm["state"] == "Master" and sm["priority"] == 14
    validate(json.loads(json.dumps(d)))
    (trap,) = d["traps"]
    assert (trap["number"], trap["name"], trap["issuer_lid"]) == \
        (128, "link state changed", ports[2][0])
    assert trap["details"] == {"lid_addr": ports[2][0]} and trap["repressed"]


def test_plot_counters_png_and_svg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ibwire.plots.counters as pc
    path, _, ports = _capture(tmp_path, fat_tree(1, 2, 1, 4))
    monkeypatch.setattr(pc, "PORTS_PER_PAGE", 2)          # paging on a small fabric
    pngs = plot_counters(str(path), str(tmp_path / "c"), "png")
    assert len(ports) == 6 and len(pngs) == 3              # spine 2 ports, leaves 2 each
    assert pngs == [str(tmp_path / f"c{s}.png") for s in ("", "-2", "-3")]
    assert all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    svgs = plot_counters(str(path), str(tmp_path / "c.svg"), "svg")
    assert svgs[0] == str(tmp_path / "c.svg")
    text = Path(svgs[0]).read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    with pytest.raises(ValueError):
        plot_counters(str(path), str(tmp_path / "c"), "gif")


def test_plot_counters_nothing_to_plot(tmp_path: Path) -> None:
    topo = fat_tree()
    origin = next(g for g, n in topo.nodes.items() if n.kind == CA)
    path = tmp_path / "sweep.pcap"
    ibwire.write(path, sweep(topo, origin), linktype=IB)
    assert plot_counters(str(path), str(tmp_path / "none"), "png") == []
    assert not list(tmp_path.glob("none*"))


def test_plot_counters_real_perfquery(tmp_path: Path) -> None:
    need_shared()
    (out,) = plot_counters(str(MAD_DIR / "perfquery-reset.pcap"), str(tmp_path / "p"), "png")
    assert Path(out).stat().st_size > 1000


def test_fields_are_registered() -> None:
    for name in FIELD_NAMES:
        assert name in REGISTRY


def test_lid_resolution_from_another_capture() -> None:
    """perfquery ran on LID 12; ibnetdiscover's sweep says who that is."""
    need_shared()
    vals = frame_values(str(MAD_DIR / "perfquery.pcap"), also=[str(MAD_DIR /
                                                                   "ibnetdiscover.pcap")])
    assert set(vals) == {1, 2, 3, 4}
    assert vals[4]["ibwire.lid.src_node_description"] == "node05 HCA-1"
    assert vals[4]["ibwire.lid.src_node_guid"] == 0x0002C90300A10009
    alone = frame_values(str(MAD_DIR / "perfquery.pcap"))
    assert alone == {}                           # nothing in it names LID 12


def test_dr_route_resolution_matches_node_description() -> None:
    need_shared()
    path = str(MAD_DIR / "ibnetdiscover.pcap")
    vals = frame_values(path)
    checked = 0
    for n, pkt in enumerate(ibwire.read(path), start=1):
        desc = pkt.get("infiniband.nodedescription.nodestring")
        if desc is None or not pkt["infiniband.mad.method"] & 0x80:
            continue
        assert vals[n]["ibwire.dr.node_description"] == desc.rstrip(b"\0").decode()
        checked += 1
    assert checked == 18


def test_cli_resolve(capsys: pytest.CaptureFixture[str]) -> None:
    need_shared()
    assert main(["fabric", "--resolve", str(MAD_DIR / "smpquery-nodedesc.pcap")]) == 0
    out = capsys.readouterr().out
    assert "ibwire.lid.dst_node_description=spine1" in out


def test_sa_noderecords_and_rmpp_continuations(tmp_path: Path) -> None:
    """NodeRecords of a first RMPP segment name the node and its LID; a continuation
    segment holds no record boundaries: it is reported, not misread as records."""
    from ibwire.mad.build import mad_packet, sa_mad
    rec = dict(lid=5, node_guid=0x0002C90300A1F000, node_type=1, num_ports=1,
               port_guid=0x0002C90300A1F001, local_port_num=1,
               node_string=b"host-x HCA-1".ljust(64, b"\0"))
    first = sa_mad("GetTableResp", "NodeRecord", [rec], transaction_id=9, rmpp_version=1,
                   rmpp_type=1, rmpp_flags=0b101, data1=1, data2=400)
    second = sa_mad("GetTableResp", "NodeRecord", transaction_id=9, rmpp_version=1,
                    rmpp_type=1, rmpp_flags=0b011, data1=2, data2=10)
    path = tmp_path / "sa.pcap"
    ibwire.write(path, [mad_packet(m, slid=1, dlid=2) for m in (first, second)], linktype=IB)
    fab = build_fabric([str(path)])
    (node,) = fab.nodes.values()
    assert (node.guid, node.description, node.ports[1].guid) == \
        (rec["node_guid"], "host-x HCA-1", rec["port_guid"])
    assert fab.lids[5].guid == rec["node_guid"] and fab.lids[5].port == 1
    assert fab.missing == ["1 SA RMPP continuation segment(s) not reassembled: only the "
                           "records of first segments are used"]


def test_extended_speeds_counters_are_reported_not_guessed(tmp_path: Path) -> None:
    from ibwire.mad.build import build_mad, mad_packet
    req = build_mad(0x04, "Get", 0x001F, transaction_id=3)
    resp = build_mad(0x04, "GetResp", 0x001F, transaction_id=3)
    path = tmp_path / "pesc.pcap"
    ibwire.write(path, [mad_packet(req, slid=1, dlid=3), mad_packet(resp, slid=3, dlid=1)],
                 linktype=IB)
    fab = build_fabric([str(path)])
    assert not fab.counters
    assert fab.missing == ["1 PortExtendedSpeedsCounters read(s) not decoded (the layout "
                           "depends on the port's FEC mode, which the MAD does not carry)"]


def test_sa_forwarding_table_records(tmp_path: Path) -> None:
    """LinearForwardingTableRecords fill the switch's LFT; RandomForwardingTable
    records share the record head but not the entries, and are not read as LFTs."""
    from ibwire.mad.build import mad_packet, sa_mad
    topo = fat_tree()
    sw = next(n for n in topo.nodes.values() if n.kind != CA)
    origin = next(g for g, n in topo.nodes.items() if n.kind == CA)
    lft = topo.lft(sw.guid)
    ports = [lft.get(i, 0xFF) for i in range(64)]
    lfr = sa_mad("GetTableResp", "LinearForwardingTableRecord",
                 [dict(lid=sw.lids[0], block_num=0, port=ports)], transaction_id=77)
    rfr = sa_mad("GetTableResp", "RandomForwardingTableRecord",
                 [dict(lid=sw.lids[0], block_num=1, port=[9] * 16)], transaction_id=78)
    path = tmp_path / "lft.pcap"
    ibwire.write(path, sweep(topo, origin) + [mad_packet(m, slid=1, dlid=2)
                                              for m in (lfr, rfr)], linktype=IB)
    node = build_fabric([str(path)]).nodes[sw.guid]
    assert {k: v for k, v in node.lft.items() if v != 0xFF} == lft


def test_cli_usage_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ibwire.cli.main import main
    assert main(["fabric"]) == 2
    assert "usage: ibwire fabric" in capsys.readouterr().err
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    assert main(["fabric", "-T", "json", str(bad)]) == 1
    out = capsys.readouterr()
    assert "not a capture file" in out.err and json.loads(out.out)["errors"]
    assert main(["fabric", "--topology", "--links", str(bad)]) == 2   # one view at a time
