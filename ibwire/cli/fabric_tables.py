"""The default `ibwire fabric` output: a few tables (rich on a terminal, aligned
plain text in a pipe) - nodes, links, subnet managers, counter flags, traps and
what the capture could not tell."""

from __future__ import annotations

from typing import Any

from ibwire.analysis.fabric_json import fabric_dict
from ibwire.analysis.fabric_model import Fabric
from ibwire.cli.output import Output


def _table(out: Output, title: str, head: list[str], rows: list[list[Any]]) -> None:
    if not rows:
        return
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    if out._console is not None:
        from rich.table import Table
        t = Table(title=title, title_justify="left")
        for h in head:
            t.add_column(h)
        for row in cells:
            t.add_row(*row)
        out._console.print(t)
        return
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(head)]
    out.line(title)
    out.line("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for row in cells:
        out.line("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    out.line("")


def summary(fab: Fabric, out: Output) -> None:
    d = fabric_dict(fab)
    out.line(f"{d['mads']} MADs: {len(d['nodes'])} nodes, {len(d['links'])} links, "
             f"{len(d['sm'])} subnet manager(s), {len(d['counters'])} port(s) with counters, "
             f"{len(d['traps'])} trap(s)")
    out.line("")
    _table(out, "Nodes", ["GUID", "Type", "Description", "LID", "Ports", "Up"], [
        [n["guid"], n["type"], n["description"], n["lid"], n["num_ports"],
         sum(1 for p in n["ports"] if p["num"] and p["state"] == "Active")]
        for n in d["nodes"]])
    names = {n["guid"]: n["description"] or n["guid"] for n in d["nodes"]}
    _table(out, "Links", ["A", "Port", "B", "Port", "Width", "Speed", "State"], [
        [names.get(lk["a"]["guid"]), lk["a"]["port"], names.get(lk["b"]["guid"]),
         lk["b"]["port"], lk["width"], lk["speed"], lk["state"]] for lk in d["links"]])
    _table(out, "Subnet managers", ["GUID", "LID", "Priority", "State", "History"], [
        [s["guid"], s["lid"], s["priority"], s["state"],
         " -> ".join(f"{h['state']}@{h['frame']}" for h in s["history"])] for s in d["sm"]])
    _table(out, "Port counters", ["LID", "Port", "Node", "Reads", "Flags"], [
        [c["lid"], c["port"], c["description"] or c["node"], len(c["reads"]),
         ", ".join(f"{f['counter']} {f['how']} ({f['meaning']})" for f in c["flags"])]
        for c in d["counters"]])
    _table(out, "Traps", ["Frame", "Trap", "Issuer LID", "Details"], [
        [t["frame"], f"{t['number']} {t['name']}", t["issuer_lid"],
         " ".join(f"{k}={v}" for k, v in t["details"].items())] for t in d["traps"]])
    if d["missing"]:
        out.line("Not in the capture:")
        for m in d["missing"]:
            out.line(f"  {m}")
