"""The whole page: headline, one block of sections per capture, the fabric view."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ibwire.report import fabric_figs
from ibwire.report import tables as T
from ibwire.report.assets import CSS, JS
from ibwire.report.collect import Capture, read_capture
from ibwire.report.findings import Finding, findings
from ibwire.report.markup import Plots, card, esc, note, section
from ibwire.report.sections import capture_sections

MAX_FINDINGS = 12
Reader = Callable[[list[str], bool], tuple[list[Capture], "dict[str, Any] | None"]]


def _headline(caps: list[Capture], found: list[Finding]) -> str:
    nav = "".join(f'<a href="#f{i}-summary">{esc(c.path)}</a>' for i, c in enumerate(caps))
    if found:
        items = "".join(f'<li><a href="#{esc(f.anchor)}">{esc(f.text)}</a></li>'
                        for f in found[:MAX_FINDINGS])
        body = f'<ol class="findings">{items}</ol>'
        if len(found) > MAX_FINDINGS:
            body += note(f"{len(found) - MAX_FINDINGS} more findings below.")
    else:
        body = '<p class="ok">Nothing went wrong that the analyses can see: no ' \
               "retransmissions, NAKs, CRC errors, stalls, pauses or congestion marks.</p>"
    from ibwire.report.sections import summary_cards
    cards = "".join(f"<h3>{esc(c.path)}</h3>{summary_cards(i, c)}" for i, c in
                    enumerate(caps))
    return section("headline", "What went wrong", f"<nav>{nav}</nav>{body}{cards}")


def _fabric(fab: dict[str, Any] | None, file: str, plots: Plots) -> str:
    if fab is None:
        return ""
    flagged = sum(1 for c in fab["counters"] if c["flags"])
    body = '<div class="cards">' + "".join((
        card("MADs", fab["mads"], "fabric.mads"),
        card("nodes", len(fab["nodes"]), "fabric.nodes"),
        card("links", len(fab["links"]), "fabric.links"),
        card("ports with rising counters", flagged, "fabric.flagged_ports", bad=flagged > 0),
        card("traps", len(fab["traps"]), "fabric.traps"))) + "</div>"
    fig = fabric_figs.topology_figure(fab)
    if fig is not None:
        body += plots.div(fig, "fabric-topo", file, "Nodes and links (red: a port with "
                          "rising error or congestion counters)")
    body += "".join(note(m) for m in fab["missing"])
    fig = fabric_figs.counters_figure(fab)
    body += '<h3 id="fabric-counters">Port counters over time</h3>'
    body += plots.div(fig, "fabric-counters-p", file, "Left: port_xmit_pkts and "
                      "port_rcv_pkts per second between reads; right: the watched counters; "
                      "dashed: counter reset (CounterSelect)") \
        if fig is not None else note("No PortCounters reads in the capture.")
    if fab["links"]:
        body += T.links(fab, "fabric-links", file).html()
    return section("fabric", f"Fabric (ibwire fabric, {fab['mads']} MADs)", body)


def render(caps: list[Capture], fab: dict[str, Any] | None,
           step: Callable[[str], None] = lambda s: None) -> str:
    """The page's HTML for analysed captures (and their fabric view, if any)."""
    from ibwire import __version__

    plots = Plots()
    found = findings(caps, fab)
    parts = [_headline(caps, found)]
    step("drawing the fabric")
    parts.append(_fabric(fab, caps[0].path if caps else "", plots))
    for i, cap in enumerate(caps):
        step(f"drawing {cap.path}")
        t0 = cap.summary.first_ns or 0
        parts.append(capture_sections(i, cap, plots, t0))
    title = "ibwire report: " + ", ".join(c.path for c in caps)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style><script>{JS}</script></head>"
            f"<body><header><h1>{esc(title)}</h1><div class=\"sub\">ibwire {__version__}, "
            f"{when}</div></header><main>{''.join(parts)}</main>"
            '<div id="dumpbox"><button>close</button>Show these packets: <code></code></div>'
            "</body></html>")


def build_report(paths: list[str], out: str, progress: bool = False,
                 read: Reader | None = None) -> dict[str, Any]:
    """Analyse `paths` and write the report to `out`; returns what was found (for the
    command line: findings, errors). `read(paths, progress)`: the captures and fabric
    view (default `read_all`; `--jobs`: `report.scaled.read_captures`)."""
    caps, fab = (read or read_all)(paths, progress)
    bar = _Stages(progress, len(caps) + 1)
    try:
        text = render(caps, fab, bar.step)
    finally:
        bar.close()
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(text)
    return {"findings": findings(caps, fab), "errors": [c.error for c in caps if c.error]
            + (fab["errors"] if fab else []), "bytes": len(text.encode())}


def read_all(paths: list[str], progress: bool = False
             ) -> tuple[list[Capture], dict[str, Any] | None]:
    """Each capture read once here (`collect.read_capture`), and the fabric view of
    their MADs (None: no MADs)."""
    caps = [read_capture(p, progress=progress, source=i) for i, p in enumerate(paths)]
    fab = None
    if any(c.has_mads for c in caps):
        from ibwire.analysis.fabric import build_fabric, fabric_of
        from ibwire.analysis.fabric_json import fabric_dict
        read = [c.fabric_mads for c in caps]
        if all(r is not None for r in read):     # every MAD came with the bulk read
            fab = fabric_dict(fabric_of([m for r in read for m in r[0]],   # type: ignore[index]
                                        [x for r in read for x in r[1]], []))  # type: ignore[index]
        else:
            fab = fabric_dict(build_fabric(paths))
    return caps, fab


class _Stages:
    """A rich progress bar over the drawing stages (reading has its own)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn
            self.bar = Progress(TextColumn("{task.description:<40}"), BarColumn(),
                                console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task("drawing", total=total)
            self.bar.start()

    def step(self, what: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=what)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
