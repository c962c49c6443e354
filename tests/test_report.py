"""`ibwire report` without a browser: the page is self-contained, its headline equals
`ibwire rc/credits -T json` for every bundled sample, plots and tables are bounded,
the findings say what the analyses found."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ibwire.cli.main import main
from ibwire.report import sample, tables
from ibwire.report.collect import read_capture
from ibwire.report.findings import findings, plural, rc_totals
from ibwire.report.rc_figs import connection_figure
from tests.conftest import PCAPS

SAMPLES = sorted(PCAPS.glob("*.pcap"))


def _values(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-key="([^"]+)" data-value="([^"]*)"', html))


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    main(argv)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("cap", SAMPLES, ids=[p.name for p in SAMPLES])
def test_headline_equals_json(tmp_path, capsys, cap):
    out = tmp_path / "r.html"
    assert main(["report", str(cap), "-o", str(out), "--no-progress"]) == 0
    html = out.read_text()
    v = _values(html)
    rc = _json(capsys, ["rc", str(cap), "-T", "json"])
    cr = _json(capsys, ["credits", str(cap), "-T", "json"])
    conns = rc["connections"]
    assert int(v["f0.rc.connections"]) == len(conns)
    for key in ("retransmitted_packets", "go_back_n", "rnr_naks"):
        assert int(v[f"f0.rc.{key}"]) == sum(c[key] for c in conns)
    assert int(v["f0.packets"]) == cr["frames"]
    assert int(v["f0.credits.cnps"]) == cr["congestion"]["cnps"]
    assert int(v["f0.credits.pause_frames"]) == cr["pfc"]["pause_frames"]
    # self-contained: no external script, style or image; plotly.js inlined once
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+href=", html)
    assert html.count("Plotly.newPlot(") == html.count('class="plot"')
    assert len(re.findall(r"plotly\.js v\d", html)) == 1


def test_findings_words(capsys):
    cap = read_capture(str(PCAPS / "rc_loss_roce2.pcap"), progress=False)
    c = cap.rc_doc["connections"][0]
    text = findings([cap], None)[0].text
    pct = 100 * c["retransmitted_bytes"] / c["bytes"]
    assert text.startswith(f"QP {c['requester']['qp']} → {c['responder']['qp']}: ")
    # (the generator's requester retried 2x for a NAK, 1x timeout, 1x implied NAK)
    assert f"{c['go_back_n']} go-back-N episodes after 2 PSN sequence NAKs, 1 timeout, " \
        "1 implied NAK" in text
    assert f"{c['retransmitted_packets']} retransmitted packets, {pct:.1f} % of bytes" in text
    assert rc_totals(cap.rc_doc)["episodes"] == len(cap.rc_doc["episodes"]) == 4
    assert plural(1, "PSNs lost before") == "1 PSN lost before"
    assert plural(2, "PSNs lost before") == "2 PSNs lost before"


def test_clean_capture_has_no_findings():
    cap = read_capture(str(PCAPS / "rc_clean_roce2.pcap"), progress=False)
    assert findings([cap], None) == []


def test_plots_are_bounded(monkeypatch):
    """Every trace has at most MAX_POINTS points and the throughput TIME_BINS bars,
    however many packets; the first and last retransmission are kept."""
    monkeypatch.setattr(sample, "MAX_POINTS", 10)
    cap = read_capture(str(PCAPS / "rc_loss_roce2.pcap"), progress=False)
    conn = cap.rc_doc["connections"][0]
    fig = connection_figure(cap.rc, conn, cap.rc_doc["episodes"], cap.summary.first_ns)
    for tr in fig.data:
        n = len(tr.x)
        assert n <= max(10, sample.TIME_BINS), tr.name
    retx = next(tr for tr in fig.data if tr.name == "retransmitted")
    flags = cap.rc.flags
    from ibwire.analysis import rc_rules as R
    frames = cap.rc.cols["frame.number"][(flags & R.F_RETX) != 0]
    assert conn["retransmitted_packets"] > 10
    assert retx.customdata[0] == frames[0] and retx.customdata[-1] == frames[-1]


def test_time_bins_keep_every_weight():
    t = np.array([0, 5, 10, 99, 100], dtype=np.int64)
    w = np.array([1, 2, 3, 4, 5], dtype=np.float64)
    frames = np.arange(1, 6)
    centres, sums, rng, width = sample.time_bins(t, w, frames, 0, 100, nbins=10)
    assert sums.sum() == w.sum() and sums.tolist() == [3, 3, 0, 0, 0, 0, 0, 0, 0, 9]
    assert rng[0].tolist() == [1, 2] and rng[1].tolist() == [3, 3]
    assert rng[9].tolist() == [4, 5] and rng[5].tolist() == [-1, -1]
    assert width == pytest.approx(10e-9) and centres[0] == pytest.approx(5e-6)
    assert sample.pick(np.arange(5), 10).tolist() == [0, 1, 2, 3, 4]
    assert sample.pick(np.arange(100), 3).tolist() == [0, 50, 99]


def test_tables_cap_rows(monkeypatch):
    monkeypatch.setattr(tables, "MAX_ROWS", 2)
    t = tables.Table("t", "T", ["a"], [[1], [2], [3]], [None] * 3, "f", "ibwire rc FILE -T json")
    html = t.html()
    data = json.loads(re.search(r"<script[^>]*>(.*)</script>", html).group(1))
    assert data["rows"] == [[1], [2]] and "first 2 of 3 rows" in html
    assert "ibwire rc FILE -T json" in html


def test_unreadable_file_reported(tmp_path, capsys):
    out = tmp_path / "r.html"
    bad = tmp_path / "broken.pcap"
    bad.write_bytes((PCAPS / "rc_loss_roce2.pcap").read_bytes()[:3000])
    assert main(["report", str(bad), "-o", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "truncated" in err and out.exists()
    v = _values(out.read_text())
    assert int(v["f0.packets"]) == 15      # the good records before the damage


@pytest.mark.parametrize("chunk", [37, None], ids=["chunk37", "default"])
@pytest.mark.parametrize("cap", SAMPLES, ids=[p.name for p in SAMPLES])
def test_one_read_gives_the_commands_columns(cap, chunk, monkeypatch):
    """The report's single read builds exactly the columns `ibwire rc` and `ibwire
    credits` build (so their analyses, run on them, agree), in small and default chunks."""
    from ibwire.analysis.credit_input import credit_columns
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.report import chunks

    if chunk is not None:
        monkeypatch.setattr(chunks, "CHUNK", chunk)

    got = read_capture(str(cap), progress=False)
    for want, have in ((credit_columns(str(cap)), got.credit_cols),
                       (rc_columns(str(cap)), got.rc.cols)):
        assert want.keys() == have.keys()
        for name in want:
            assert want[name].dtype == have[name].dtype, name
            assert np.array_equal(want[name], have[name]), name
