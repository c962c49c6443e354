"""`ibwire report` pages in a real headless browser: no console errors, every plot
drawn, headline numbers equal to `ibwire rc/credits -T json`, tables sort and page,
a click gives a `ibwire dump -Y` command that shows those packets."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ibwire.cli.main import main
from tests.browser import chromium, screenshot
from tests.conftest import PCAPS
from tests.report_helpers import fabric_capture

SAMPLES = ("rc_loss_roce2", "rc_corrupt_ib_grh", "pfc_congestion_roce2", "link_credits_ib")


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """name -> (capture, report) for the samples and a generated fabric."""
    out = tmp_path_factory.mktemp("reports")
    caps = {name: PCAPS / f"{name}.pcap" for name in SAMPLES}
    caps["fabric_events"] = fabric_capture(out)
    res = {}
    for name, cap in caps.items():
        html = out / f"{name}.html"
        assert main(["report", str(cap), "-o", str(html), "--no-progress"]) == 0
        res[name] = (cap, html)
    return res


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    main(argv)
    return json.loads(capsys.readouterr().out)


RENDER_S = 30      # longest wait for Plotly to draw a page on a slow machine
_DRAWN = """const p = [...document.querySelectorAll('.plotly-graph-div')];
            return p.length > 0 && p.every(d => d.querySelector('.main-svg') &&
                                                d.querySelector('.plot-container'));"""


def _load(browser, html: Path) -> dict:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(html.as_uri())
    browser.get_log("browser")   # noqa: B018 - drain; the page's own log is read below
    browser.get(html.as_uri())
    # On a loaded two-core machine the plots may still be drawing when the page's load
    # event has fired (seen: none found, every one drawn in the screenshot after). Wait
    # for them; what follows still checks every plot was drawn.
    try:
        WebDriverWait(browser, RENDER_S).until(lambda b: b.execute_script(_DRAWN))
    except TimeoutException:
        pass    # (the caller's checks say what the page holds)
    return browser.execute_script("""
        const plots = [...document.querySelectorAll('.plotly-graph-div')];
        const vals = {};
        document.querySelectorAll('[data-key]').forEach(e => vals[e.dataset.key] =
                                                         e.dataset.value);
        return {plots: plots.length,
                drawn: plots.filter(p => p.querySelector('.main-svg') &&
                                          p.querySelector('.plot-container')).length,
                values: vals,
                links: [...document.querySelectorAll('script[src],link[href],img[src]')]
                        .map(e => e.src || e.href)};""")


@pytest.mark.parametrize("name", (*SAMPLES, "fabric_events"))
def test_report_in_browser(browser, pages, capsys, name):
    cap, html = pages[name]
    page = _load(browser, html)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    screenshot(browser, f"report_{name}")
    assert errors == []
    assert page["links"] == []                       # self-contained
    assert page["plots"] >= 1 and page["drawn"] == page["plots"]
    rc = _json(capsys, ["rc", str(cap), "-T", "json"])
    cr = _json(capsys, ["credits", str(cap), "-T", "json"])
    v = page["values"]
    conns = rc["connections"]
    assert int(v["f0.rc.connections"]) == len(conns)
    for key in ("retransmitted_packets", "go_back_n", "rnr_naks"):
        assert int(v[f"f0.rc.{key}"]) == sum(c[key] for c in conns), key
    assert int(v["f0.rc.naks"]) == sum(sum(c["naks"].values()) for c in conns)
    assert int(v["f0.packets"]) == cr["frames"]
    assert int(v["f0.credits.pause_frames"]) == cr["pfc"]["pause_frames"]
    assert int(v["f0.credits.cnps"]) == cr["congestion"]["cnps"]
    assert int(v["f0.credits.ce_marks"]) == cr["congestion"]["ce_marks"]
    assert int(v["f0.credits.stalls"]) == sum(r["stall_count"]
                                              for r in cr["link_credits"]["per_vl"])
    if "fabric.nodes" in v:
        fab = _json(capsys, ["fabric", str(cap), "-T", "json"])
        assert int(v["fabric.mads"]) == fab["mads"]
        assert int(v["fabric.nodes"]) == len(fab["nodes"])
        assert int(v["fabric.links"]) == len(fab["links"])
        assert int(v["fabric.flagged_ports"]) == sum(1 for c in fab["counters"] if c["flags"])
    assert ("fabric.nodes" in v) == (name == "fabric_events")


def test_report_headline_errors(browser, pages):
    """The corrupted sample's CRC errors reach the headline (and its first finding)."""
    page = _load(browser, pages["rc_corrupt_ib_grh"][1])
    truth = json.loads((PCAPS / "rc_corrupt_ib_grh.truth.json").read_text())
    assert int(page["values"]["f0.crc_errors"]) > 0
    first = browser.execute_script("return document.querySelector('ol.findings li').innerText")
    assert "bad CRC" in first
    assert truth   # the sample's truth exists beside it


def test_click_gives_dump_command(browser, pages, capsys):
    """Clicking a retransmission point shows a dump command; running it shows that frame."""
    cap, html = pages["rc_loss_roce2"]
    _load(browser, html)
    cmd = browser.execute_script("""
        const div = document.querySelector('.plotly-graph-div');
        const tr = div._fullData.find(t => t.name === 'retransmitted');
        const pt = {data: tr, customdata: tr.customdata[0], x: tr.x[0], y: tr.y[0]};
        div.emit('plotly_click', {points: [pt]});
        return [document.getElementById('dumpbox').querySelector('code').textContent,
                tr.customdata[0]];""")
    text, frame = cmd
    argv = shlex.split(text)
    assert argv[:3] == ["ibwire", "dump", "-r"] and argv[4] == "-Y"
    capsys.readouterr()
    assert main(argv[1:] + ["-T", "fields", "-e", "frame.number", "-e",
                            "infiniband.analysis.retransmission"]) == 0
    assert capsys.readouterr().out.split() == [str(frame), "1"]


def test_tables_sort_and_page(browser, pages):
    _load(browser, pages["rc_loss_roce2"][1])
    res = browser.execute_script("""
        const t = document.querySelector('[id$="-opcodes"] table');
        const col = [...t.tHead.rows[0].cells].findIndex(c => c.textContent === 'frames');
        const read = () => [...t.tBodies[0].rows].map(r => +r.cells[col].textContent);
        t.tHead.rows[0].cells[col].click();
        const asc = read();
        t.tHead.rows[0].cells[col].click();
        const desc = read();
        const pager = t.parentNode.parentNode.querySelector('.pager').textContent;
        return [asc, desc, pager];""")
    asc, desc, _ = res
    assert asc == sorted(asc) and desc == sorted(desc, reverse=True) and asc != desc


def test_table_pages(browser, tmp_path):
    """60 rows: three pages of 25, 25 and 10; sorting goes back to the first page."""
    from ibwire.report.assets import CSS, JS
    from ibwire.report.tables import Table

    t = Table("t", "T", ["n", "name"], [[i, f"row {i}"] for i in range(60)],
              [f"frame.number == {i + 1}" for i in range(60)], "x.pcap")
    page = tmp_path / "t.html"
    page.write_text(f"<html><head><style>{CSS}</style><script>{JS}</script></head><body>"
                    f'{t.html()}<div id="dumpbox"><button>x</button><code></code></div>'
                    "</body></html>")
    browser.get(page.as_uri())
    got = browser.execute_script("""
        const el = document.getElementById('t');
        const rows = () => [...el.querySelectorAll('tbody tr')].map(r => +r.cells[0].textContent);
        const next = () => el.querySelectorAll('.pager button')[2].click();
        const out = [rows()]; next(); out.push(rows()); next(); out.push(rows());
        el.querySelector('th').click(); el.querySelector('th').click(); out.push(rows());
        el.querySelector('tbody tr').click();
        out.push(document.querySelector('#dumpbox code').textContent);
        return out;""")
    assert got[0] == list(range(25)) and got[1] == list(range(25, 50))
    assert got[2] == list(range(50, 60)) and got[3] == list(range(59, 34, -1))
    assert got[4] == "ibwire dump -r 'x.pcap' -Y 'frame.number == 60'"
