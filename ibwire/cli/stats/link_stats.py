"""`-z ib,credits`, `-z ib,qos`, `-z roce,pfc`, `-z roce,ecn`: the sections of
`ibwire credits` (docs/credits.md) as statistics after the packets."""

from __future__ import annotations

from ibwire.analysis.credit_input import ColumnBuilder
from ibwire.cli.frames import FrameInfo
from ibwire.cli.stats import Stat
from ibwire.packet import Packet

RULE = "=" * 72
KINDS = {"ib,credits": ("credits", "InfiniBand Link Credits"),
         "ib,qos": ("qos", "InfiniBand/RoCE QoS Classes"),
         "roce,pfc": ("pfc", "RoCE Priority Flow Control"),
         "roce,ecn": ("ecn", "RoCE Congestion (ECN, FECN/BECN, CNP)")}


class LinkStat(Stat):
    def __init__(self, kind: str, filt: str = "") -> None:
        super().__init__(filt)
        self.section, self.title = KINDS[kind]
        self.cols = ColumnBuilder()

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        self.cols.add(pkt)

    def lines(self) -> list[str]:
        # (The analyses load when the statistic is printed, not when -z is parsed.)
        from ibwire.analysis.link_report import link_report
        from ibwire.cli.credits import Lines, render

        out = Lines()
        render(link_report(self.cols.finish()), out, sections=(self.section,))
        body = [ln for ln in out.lines if ln]
        return ["", RULE, self.title, f"Filter: {self.filter_text}", "", *body, RULE]
