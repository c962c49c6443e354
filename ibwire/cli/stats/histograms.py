"""`-z ib,opcodes` and `-z ib,mad`: how many of each BTH opcode / MAD kind."""

from __future__ import annotations

from collections import Counter

from ibwire.cli.frames import FrameInfo
from ibwire.cli.madinfo import mad_header, mad_kind
from ibwire.cli.stats import Stat
from ibwire.packet import Packet

RULE = "=" * 72


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.2f}%" if total else "-"


class OpcodeHistogram(Stat):
    title = "InfiniBand Opcodes"

    def __init__(self, filt: str = "") -> None:
        super().__init__(filt)
        self.frames: Counter[int] = Counter()
        self.nbytes: Counter[int] = Counter()
        self.labels: dict[int, str] = {}

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        op = pkt.opcode
        if op is None:
            return
        self.frames[op.code] += 1
        self.nbytes[op.code] += info.length
        self.labels[op.code] = op.label

    def lines(self) -> list[str]:
        total = sum(self.frames.values())
        out = ["", RULE, self.title, f"Filter: {self.filter_text}", "",
               f"{'Opcode':<44} {'Frames':>8} {'Bytes':>11} {'Percent':>8}"]
        for code, n in self.frames.most_common():
            label = f"{code:3d} 0x{code:02x} {self.labels[code]}"
            out.append(f"{label:<44} {n:>8} {self.nbytes[code]:>11} {_pct(n, total):>8}")
        out.append(f"{'Total':<44} {total:>8} {sum(self.nbytes.values()):>11}")
        out.append(RULE)
        return out


class MadHistogram(Stat):
    title = "InfiniBand MADs"

    def __init__(self, filt: str = "") -> None:
        super().__init__(filt)
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.status: Counter[tuple[str, str, str]] = Counter()

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        mad = mad_header(pkt)
        if mad is None:
            return
        kind = mad_kind(mad)
        self.counts[kind] += 1
        if mad.status:
            self.status[kind] += 1

    def lines(self) -> list[str]:
        total = sum(self.counts.values())
        out = ["", RULE, self.title, f"Filter: {self.filter_text}", "",
               f"{'Class / Method / Attribute':<52} {'Count':>8} {'Status!=0':>10}"]
        by_class: dict[str, Counter[tuple[str, str]]] = {}
        for (cls, method, attr), n in self.counts.items():
            by_class.setdefault(cls, Counter())[(method, attr)] += n
        for cls in sorted(by_class):
            sub = by_class[cls]
            out.append(f"{cls:<52} {sum(sub.values()):>8}")
            for (method, attr), n in sorted(sub.items()):
                bad = self.status[(cls, method, attr)]
                out.append(f"  {method + ' ' + attr:<50} {n:>8}" + (f" {bad:>10}" if bad else ""))
        out.append(f"{'Total':<52} {total:>8}")
        out.append(RULE)
        return out
