"""`-z io,stat,INTERVAL[,FILTER...]`: frames and bytes per time interval (tshark layout).

Intervals start at the first frame; the last one ends at the capture's duration
(`<> Dur`), as in tshark. Functions such as `SUM(field)` are not supported.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from ibwire.cli.fields_out import UsageError
from ibwire.cli.filtering import PacketFilter
from ibwire.cli.frames import FrameInfo
from ibwire.cli.stats import Stat
from ibwire.packet import Packet


class IoStat(Stat):
    title = "IO Statistics"

    def __init__(self, interval: str, filters: list[str]) -> None:
        super().__init__("")
        try:
            value = Decimal(interval)
        except InvalidOperation:
            raise UsageError(f'io,stat: invalid interval "{interval}"') from None
        if value <= 0:
            raise UsageError(f'io,stat: the interval must be positive, not "{interval}"')
        if any("(" in f and f.split("(")[0].isupper() for f in filters):
            raise UsageError("io,stat: functions such as SUM(field) are not supported")
        self.decimals = max(0, -value.as_tuple().exponent)  # type: ignore[operator]
        self.interval_ns = int(value * 1_000_000_000)
        self.filters = [(f, PacketFilter(f) if f else None) for f in filters] or [("", None)]
        self.counts: dict[int, list[list[int]]] = {}
        self.duration_ns = 0

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        slot = max(info.rel_ns, 0) // self.interval_ns
        self.duration_ns = max(self.duration_ns, info.rel_ns)
        row = self.counts.get(slot)
        if row is None:
            row = self.counts[slot] = [[0, 0] for _ in self.filters]
        for cell, (_, filt) in zip(row, self.filters):
            if filt is None or filt.matches(info, pkt):
                cell[0] += 1
                cell[1] += info.length

    def _t(self, ns: int) -> str:
        return f"{ns / 1e9:.{self.decimals}f}"

    def lines(self) -> list[str]:
        nslots = self.duration_ns // self.interval_ns + 1
        labels = []
        for i in range(nslots):
            start = i * self.interval_ns
            end = start + self.interval_ns
            labels.append((self._t(start), "Dur" if end > self.duration_ns and i else
                           self._t(end)))
        tw = max([len(a) for a, b in labels] + [len(b) for a, b in labels] + [3])
        cells = []
        fw, bw = 6, 5
        for i in range(nslots):
            row = self.counts.get(i) or [[0, 0] for _ in self.filters]
            cells.append(row)
            for f, b in row:
                fw, bw = max(fw, len(str(f))), max(bw, len(str(b)))
        ilabel = f"{'':>{tw}} <> {'':>{tw}}"
        col = f" {'Frames':>{fw}} | {'Bytes':>{bw}} |"
        header = f"| {'Interval':<{len(ilabel)}} |" + col * len(self.filters)
        width = len(header)
        nums = "".join(f"{str(i + 1):<{len(col) - 1}}|" for i in range(len(self.filters)))
        out = ["", "=" * width]

        def boxed(text: str) -> str:
            return f"| {text:<{width - 4}} |"

        out.append(boxed(self.title))
        out.append(boxed(""))
        out.append(boxed(f"Duration: {self.duration_ns / 1e9:.{max(self.decimals, 6)}f} secs"))
        out.append(boxed(f"Interval: {self.interval_ns / 1e9:.{self.decimals}f} secs"))
        out.append(boxed(""))
        for n, (text, _) in enumerate(self.filters, 1):
            prefix = "Col" if n == 1 else "   "
            out.append(boxed(f"{prefix} {n}: {text or 'Frames and bytes'}"))
        out.append("|" + "-" * (width - 2) + "|")
        out.append(f"| {'':<{len(ilabel)}} |" + nums)
        out.append(header)
        out.append("|" + "-" * (width - 2) + "|")
        for (a, b), row in zip(labels, cells):
            text = f"| {a:>{tw}} <> {b:>{tw}} |"
            text += "".join(f" {f:>{fw}} | {nb:>{bw}} |" for f, nb in row)
            out.append(text)
        out.append("=" * width)
        return out
