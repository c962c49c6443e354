"""`-z rc,stat` (the `ibwire rc` table) and `-z follow,qp,N` (one QP's packets with
the RC engine's findings), in `ibwire stats` and `ibwire dump -q`."""

from __future__ import annotations

from ibwire.analysis.rc_input import ColumnBuilder
from ibwire.cli.frames import FrameInfo
from ibwire.cli.stats import Stat
from ibwire.packet import Packet


class _Collect(Stat):
    """Every frame goes to the engine (a filter would break the sequence analysis)."""

    def __init__(self) -> None:
        super().__init__("")
        self.builder = ColumnBuilder()

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        self.builder.add(pkt)

    def _result(self):  # noqa: ANN202 - RcResult, imported lazily
        from ibwire.analysis.rc import analyze
        return analyze(self.builder.columns())


class RcStat(_Collect):
    title = "RC sequencing (ibwire rc)"

    def lines(self) -> list[str]:
        from ibwire.analysis.rc_report import document
        from ibwire.cli.rc import text

        out: list[str] = []

        class _Lines:
            def line(self, s: str, style: str | None = None) -> None:
                out.append(s)

        text(document(self._result()), _Lines(), 50)  # type: ignore[arg-type]
        return ["", "=" * 80, self.title, "=" * 80, *out, "=" * 80]


class FollowQp(_Collect):
    def __init__(self, qp: int) -> None:
        super().__init__()
        self.qp = qp
        self.title = f"Follow QP {qp:#x}"

    def lines(self) -> list[str]:
        from ibwire.analysis.rc_report import comment, packet_values
        from ibwire.headers.opcodes import OPCODES
        from ibwire.plots.rc import half_connections_of

        res = self._result()
        hcs = half_connections_of(res, self.qp)
        cols = res.cols
        names = cols["ibwire.endpoints"]
        t0 = int(cols["frame.time_ns"][0]) if len(cols["frame.time_ns"]) else 0
        out = ["", "=" * 80, self.title, "=" * 80]
        for row in range(len(res.flags)):
            if int(res.streams.hc[row]) not in hcs:
                continue
            op = int(cols["infiniband.bth.opcode"][row])
            note = comment(packet_values(res, row)).removeprefix("ibwire rc: ")
            out.append(f"{int(cols['frame.number'][row]):>7} "
                       f"{(int(cols['frame.time_ns'][row]) - t0) / 1e9:>12.6f} "
                       f"{names[cols['ibwire.src'][row]]:>15} -> "
                       f"{names[cols['ibwire.dst'][row]]:<15} "
                       f"{OPCODES[op].label:<32} PSN={int(cols['infiniband.bth.psn'][row]):<9}"
                       f"{note}".rstrip())
        out.append("=" * 80)
        return out
