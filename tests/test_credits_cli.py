"""`ibwire credits`, its JSON schema, the -z statistics, the plot and the per-frame
analysis fields, on the sample captures (values checked against their truth)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import PCAPS, capture_params

from ibwire.analysis.credit_fields import ABSENT, FIELDS, credit_fields
from ibwire.analysis.credit_input import TIME_COLUMN, credit_columns
from ibwire.analysis.credits import Geometry, build_events
from ibwire.analysis.link_report import LinkOptions
from ibwire.cli.main import main
from ibwire.fields import REGISTRY

LINK = str(PCAPS / "link_credits_ib.pcap")
PFC = str(PCAPS / "pfc_congestion_roce2.pcap")
CNP = str(PCAPS / "ud_cnp_roce2.pcap")
SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "credits.schema.json"


def _run(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _truth(path: str) -> dict:
    return json.loads(Path(path.replace(".pcap", ".truth.json")).read_text())


def test_credits_table_matches_truth(capsys):
    code, out = _run(capsys, "credits", LINK, "--link-gbps", "100", "--tx-to-tap-ns", "100",
                     "--tap-to-rx-ns", "100")
    assert code == 0
    truth = _truth(LINK)["link"]["per_direction"]
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("  0 ") or
             ln.startswith("  1 ")]
    assert len(lines) == 4
    for row in lines:
        d, vl, stalls = row[0], row[1], int(row[10])
        assert stalls == len(truth[("a2b", "b2a")[int(d)]][vl]["starved"])
        assert row[8] == "24"          # buffer inferred = the generator's buffer_blocks


def test_credits_json_validates_and_matches_truth(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    for path in (LINK, PFC, CNP, str(PCAPS / "rc_clean_roce2.pcap")):
        code, out = _run(capsys, "credits", path, "-T", "json", "--tx-to-tap-ns", "100",
                         "--tap-to-rx-ns", "100")
        assert code == 0
        doc = json.loads(out)
        jsonschema.validate(doc, schema)
    doc = json.loads(_run(capsys, "credits", CNP, "-T", "json")[1])
    causes = sorted(c for f in doc["congestion"]["flows"] for c in f.get("cnp_causes", []))
    assert causes == sorted([c["frame"], c["cause_frame"]] for c in _truth(CNP)["cnps"])


def test_no_link_packets_says_so_and_reports_aeth(capsys):
    code, out = _run(capsys, "credits", str(PCAPS / "rc_rnr_ib.pcap"))
    assert code == 0
    assert "No link flow-control packets" in out
    assert "AETH" in out and "Zero-credit ACKs" in out
    code, out = _run(capsys, "credits", str(PCAPS / "fabric_mads_ib.pcap"))
    assert "No link flow-control packets" in out


def test_bad_file_exits_1(capsys):
    path = os.path.join(tempfile.mkdtemp(), "bad.pcap")
    Path(path).write_bytes(b"not a capture at all")
    assert main(["credits", path]) == 1


def test_pfc_section_and_storms(capsys):
    code, out = _run(capsys, "credits", PFC, "--tap-to-rx-ns", "100", "--storm-ms", "0.01",
                     "--pauses")
    truth = _truth(PFC)["pfc"]["paused"]
    n = sum(len(d["intervals"]) for d in truth.values())
    assert out.count(" xon ") + out.count(" expired ") == n
    assert "STORM:" in out and "Flows on priority 3" in out


@pytest.mark.parametrize("spec,needle", [("ib,credits", "Stall time"), ("ib,qos", "P_Key"),
                                         ("roce,pfc", "Paused by"), ("roce,ecn", "CNPs")])
def test_z_statistics(capsys, spec, needle):
    path = PFC if spec.startswith("roce") else LINK
    code, out = _run(capsys, "stats", path, "-z", spec)
    assert code == 0 and needle in out


def test_plot_png_and_svg():
    pytest.importorskip("matplotlib")
    from ibwire.plots.credits import plot_credits

    d = tempfile.mkdtemp()
    png = plot_credits(LINK, os.path.join(d, "c"), "png", LinkOptions(100, 100, 100.0))
    assert png == [os.path.join(d, "c.png")]
    assert Path(png[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_credits(PFC, os.path.join(d, "none.svg"), "svg")
    assert b"no link flow-control packets" in Path(svg[0]).read_bytes()
    with pytest.raises(ValueError):
        plot_credits(LINK, os.path.join(d, "x"), "gif")


def test_analysis_fields_registered_and_values():
    assert all(name in REGISTRY for name in FIELDS)
    f = credit_fields(LINK, LinkOptions(100, 100, 100.0))
    truth = _truth(LINK)["link"]["per_direction"]
    want = {fr: a for d in truth.values() for v in d.values() for fr, _, a in v["timeline"]}
    avail = f["infiniband.analysis.credits_available"]
    # a data frame's value is its sender's credits after it; truth lists the same
    data = np.flatnonzero(f["infiniband.analysis.credit_stall"] != ABSENT)
    assert data.size > 100
    assert all(avail[i] == want[i + 1] for i in data if i + 1 in want)
    stalled = f["infiniband.analysis.credit_stall"] > 0
    assert stalled.sum() == sum(len(v["starved"]) for d in truth.values() for v in d.values())
    pf = credit_fields(PFC, LinkOptions(0, 100, None))
    assert (pf["ibwire.pfc.pause_ns"] != ABSENT).sum() == _truth(PFC)["frame_kinds"]["pfc"]
    cnp = credit_fields(CNP)["ibwire.ecn.mark_to_cnp_ns"]
    assert sorted(np.flatnonzero(cnp != ABSENT) + 1) == sorted(
        c["frame"] for c in _truth(CNP)["cnps"])


def test_event_builder_twin_and_unsorted_input():
    cols = credit_columns(LINK)
    geo = Geometry(100, 100, 100.0)
    a, b = build_events(cols, geo), build_events(cols, geo, python=True)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    # shuffled timestamps (a hostile capture): still sorted per group, twins agree
    rng = np.random.default_rng(1)
    cols = dict(cols)
    cols[TIME_COLUMN] = rng.permutation(cols[TIME_COLUMN])
    a, b = build_events(cols, geo), build_events(cols, geo, python=True)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    for g in np.unique(a["grp"]):
        t = a["t"][a["grp"] == g]
        assert (np.diff(t) >= 0).all()


def test_field_provider_values_and_expert():
    """With the analysis field providers (ibwire.analysis.providers), the credit
    fields reach packets; skipped where that mechanism is absent."""
    pytest.importorskip("ibwire.analysis.providers")
    from ibwire.analysis.credits_provider import CREDITS_PROVIDER, _expert

    values = CREDITS_PROVIDER.run(LINK)
    f = credit_fields(LINK)
    row = int(np.flatnonzero(f["infiniband.analysis.credit_stall"] > 0)[0])
    v = values(row)
    assert v["infiniband.analysis.credit_stall"] == f["infiniband.analysis.credit_stall"][row]
    assert values(10**9) == {}
    items = _expert({"infiniband.analysis.fctbs_missing_blocks": 9,
                     "infiniband.analysis.credit_stall": 0,
                     "infiniband.analysis.credits_available": -3, "ibwire.pfc.paused": 1})
    assert [i[0] for i in items] == ["Warn", "Error", "Note"]


@pytest.mark.parametrize("encap,seed,gap", [("ib", 3, None), ("roce2", 4, None),
                                            ("roce2-v6", 5, 50_000), ("roce2", 6, 4_000)])
def test_congestion_counts_equal_truth(encap, seed, gap):
    from ibwire.analysis.congestion import congestion
    from ibwire.gen.config import scenario
    from ibwire.gen.sim import simulate

    cfg = scenario("rc_clean", encap=encap, ecn=0.15, seed=seed, ud_messages=10,
                   connections=2, bidirectional=True, cnp_gap_ns=gap or 50_000)
    res = simulate(cfg)
    path = os.path.join(tempfile.mkdtemp(), "e.pcap")
    res.write(path)
    c = congestion(credit_columns(path), gap)
    marks = {e["frame"] for e in res.truth["events"] if e["kind"] == "ecn_mark"}
    assert marks and (c["fecn"] if encap == "ib" else c["ce_marks"]) == len(marks)
    assert c["becn"] == len(res.truth["becn_marked_responses"])
    assert c["cnps"] == len(res.truth["cnps"])
    causes = sorted(x for f in c["flows"] for x in f.get("cnp_causes", []))
    assert causes == sorted([x["frame"], x["cause_frame"]] for x in res.truth["cnps"])


def test_global_pause_pauses_every_priority():
    from ibwire.analysis.pfc import analyze_pfc
    from ibwire.capture import PcapWriter
    from ibwire.constants import ETHERTYPE_MAC_CONTROL, LINKTYPE_ETHERNET, MACC_OP_PAUSE
    from ibwire.headers.carriers import ETHERNET, MACC, MACC_PAUSE

    eth = ETHERNET(dst="01:80:c2:00:00:01", src="02:00:00:00:00:0b",
                   type=ETHERTYPE_MAC_CONTROL)
    frames = [eth.bytes() + MACC(opcode=MACC_OP_PAUSE).bytes() +
              MACC_PAUSE(pause_time=q).bytes() for q in (1000, 0)]
    path = os.path.join(tempfile.mkdtemp(), "pause.pcap")
    with PcapWriter(path, LINKTYPE_ETHERNET) as w:
        for i, f in enumerate(frames):
            w.write(f + bytes(60 - len(f)), ts_ns=10**18 + i * 5_000)
    rep = analyze_pfc(credit_columns(path), link_gbps=100.0)
    assert [(i["priority"], i["start_ns"] - 10**18, i["duration_ns"], i["ended_by"])
            for i in rep.intervals] == [(p, 0, 5_000, "xon") for p in range(8)]


@pytest.mark.parametrize("path", capture_params("rxe", "public"))
def test_real_captures_no_link_packets_aeth(path, capsys):
    import ibwire

    code, out = _run(capsys, "credits", str(path), "-T", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["link_credits"]["link_packets"] == 0 and doc["pfc"]["pause_frames"] == 0
    acks: dict[int, list] = {}
    for pkt in ibwire.read(str(path)):
        syn = pkt.get("infiniband.aeth.syndrome")
        if syn is not None and (syn >> 5) & 3 == 0:
            acks.setdefault(pkt["infiniband.bth.destqp"], []).append(syn & 0x1F)
    got = {a["dest_qp"]: (a["acks"], a["no_credit_info"]) for a in doc["aeth_credits"]}
    assert got == {q: (len(c), c.count(31)) for q, c in acks.items()}
