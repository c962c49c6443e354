"""`ibwire rc`, `ibwire plot`, the `infiniband.analysis.*` fields in dump/stats."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import PCAPS, REPO, need_tshark
from test_cli_common import lines, run_cli

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import rc_columns

LOSS = PCAPS / "rc_loss_roce2.pcap"
RNR = PCAPS / "rc_rnr_ib.pcap"


def _truth(path):
    return json.loads(path.with_suffix(".truth.json").read_text())


def _retx_frames(path):
    return sorted(e["frame"] for e in _truth(path)["retransmissions"] if e["frame"])


def test_json_document_follows_schema():
    jsonschema = pytest.importorskip("jsonschema")
    rc, out, _ = run_cli("rc", LOSS, "-T", "json")
    assert rc == 0
    doc = json.loads(out)
    schema = json.loads((REPO / "docs" / "schemas" / "rc.schema.json").read_text())
    jsonschema.validate(doc, schema)
    (conn,) = [c for c in doc["connections"] if c["transport"] == "RC"]
    assert conn["retransmitted_packets"] == len(_retx_frames(LOSS))
    assert conn["naks"]["psn_seq_err"] == sum(1 for e in _truth(LOSS)["naks"] if e["frame"])
    assert conn["messages"] == _truth(LOSS)["connections"][0]["a"]["requester"][
        "messages_completed"]
    assert {e["reason"] for e in doc["episodes"]} <= {"nak_seq", "timeout", "implied_nak"}


def test_text_table_and_episodes():
    rc, out, _ = run_cli("rc", RNR, "--episodes", "2")
    assert rc == 0
    text = lines(out)
    assert text[0].startswith("conn") and "gbn" in text[0]
    assert any(t.startswith("Go-back-N / retry episodes") for t in text)
    n_rnr = sum(1 for e in _truth(RNR)["rnr_naks"] if e["frame"])
    row = text[1].split()
    assert int(row[row.index("RC") + 1]) > 0 and n_rnr > 0


def test_bad_file_exit_1(tmp_path):
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"not a capture")
    rc, _, err = run_cli("rc", bad)
    assert rc == 1 and err


def test_dump_filters_and_prints_analysis_fields():
    rc, out, _ = run_cli("dump", "-r", LOSS, "-Y", "infiniband.analysis.retransmission",
                         "-T", "fields", "-e", "frame.number",
                         "-e", "infiniband.analysis.retransmission_of")
    assert rc == 0
    rows = [ln.split("\t") for ln in lines(out)]
    assert [int(r[0]) for r in rows] == _retx_frames(LOSS)
    assert all(int(r[1]) < int(r[0]) for r in rows if r[1])


def test_fields_lists_analysis_fields():
    rc, out, _ = run_cli("fields", "--filter", "infiniband.analysis.")
    names = {ln.split("\t")[2] for ln in lines(out)}
    for want in ("infiniband.analysis.retransmission", "infiniband.analysis.go_back_n",
                 "infiniband.analysis.ack_rtt", "infiniband.analysis.nak"):
        assert want in names


def test_stats_rc_and_follow():
    rc, out, _ = run_cli("stats", LOSS, "-z", "rc,stat", "-z", "follow,qp,0x4032d2")
    assert rc == 0
    text = lines(out)
    assert "RC sequencing (ibwire rc)" in text and "Follow QP 0x4032d2" in text
    res = analyze(rc_columns(LOSS))
    hcs = [h for h in range(len(res.streams)) if 0x4032D2 in
           (res.streams.req_qp[h], res.streams.resp_qp[h])]
    n = int(sum((res.streams.hc == h).sum() for h in hcs))
    start = text.index("Follow QP 0x4032d2") + 2
    assert len(text[start:-1]) == n > 0
    assert sum("retransmission" in t for t in text[start:]) == len(_retx_frames(LOSS))


def test_annotated_pcapng_comments(tmp_path):
    out = tmp_path / "ann.pcapng"
    rc, _, _ = run_cli("rc", LOSS, "-w", out)
    assert rc == 0
    res = analyze(rc_columns(out))          # same frames back
    assert len(res.flags) == len(analyze(rc_columns(LOSS)).flags)
    tshark = need_tshark()
    got = subprocess.run([tshark, "-r", str(out), "-Y", "frame.comment contains "
                          "\"retransmission\"", "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert [int(x) for x in got] == _retx_frames(LOSS)


def test_plot_qp_png_and_svg(tmp_path):
    base = tmp_path / "p"
    rc, out, _ = run_cli("plot", LOSS, "--qp", "0x4032d2", "-o", base, "--format", "both")
    assert rc == 0
    png, svg = (base.with_suffix(".png"), base.with_suffix(".svg"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in svg.read_bytes()[:400]
    rc, _, err = run_cli("plot", LOSS, "--qp", "0x123", "-o", base)
    assert rc == 1 and "no RC" in err


def test_plot_output_with_an_image_ending(tmp_path):
    """`-o x.png` writes x.png (not x.png.png); `-o x.svg` alone means SVG."""
    for name, magic in (("a.png", b"\x89PNG"), ("b.svg", b"<?xml")):
        rc, out, _ = run_cli("plot", LOSS, "--qp", "0x4032d2", "-o", tmp_path / name)
        assert rc == 0 and out.split() == [str(tmp_path / name)]
        assert (tmp_path / name).read_bytes().startswith(magic)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.svg"]


def test_plot_other_kinds_fail_cleanly_when_missing(tmp_path):
    import importlib.util
    for what, module in (("--credits", "ibwire.plots.credits"),
                         ("--counters", "ibwire.plots.counters")):
        if importlib.util.find_spec(module) is not None:
            continue
        rc, _, err = run_cli("plot", LOSS, what, "-o", tmp_path / "x")
        assert rc == 2 and "not available" in err


def test_expert_lists_rc_items():
    rc, out, _ = run_cli("stats", LOSS, "-z", "expert")
    assert rc == 0
    row = [t for t in lines(out) if t.endswith("RC retransmission")]
    assert row and int(row[0].split()[0]) == len(_retx_frames(LOSS))


def test_flags_are_documented():
    doc = (REPO / "docs" / "rc-analysis.md").read_text()
    for name in R.FLAG_NAMES.values():
        assert name in doc, name
