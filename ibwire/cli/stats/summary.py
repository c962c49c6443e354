"""`-z ib,summary` (first table of `ibwire stats`): what is in the capture."""

from __future__ import annotations

import time
from collections import Counter

from ibwire.cli.carriers import column_protocol
from ibwire.cli.frames import FrameInfo, fmt_ns
from ibwire.cli.stats import Stat
from ibwire.crc import CrcStatus
from ibwire.packet import Packet

RULE = "=" * 67
CRC_NAMES = {CrcStatus.GOOD: "good", CrcStatus.BAD: "bad", CrcStatus.UNVERIFIED: "unverified"}


class Summary(Stat):
    title = "Capture Summary"

    def __init__(self, filt: str = "", source: str = "") -> None:
        super().__init__(filt)
        self.source = source
        self.frames = self.nbytes = self.ib = self.malformed = 0
        self.first_ns: int | None = None
        self.last_rel = 0
        self.kinds: Counter[str] = Counter()
        self.crc: dict[str, Counter[str]] = {"ICRC": Counter(), "VCRC": Counter(),
                                             "LPCRC": Counter()}

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        self.frames += 1
        self.nbytes += info.length
        if self.first_ns is None:
            self.first_ns = info.ts_ns
        self.last_rel = max(self.last_rel, info.rel_ns)
        if pkt.problems:
            self.malformed += 1
        if not pkt.is_infiniband:
            return
        self.ib += 1
        self.kinds[column_protocol(pkt, info.stack)] += 1
        for name, st in (("ICRC", pkt.icrc_status), ("VCRC", pkt.vcrc_status),
                         ("LPCRC", pkt.lpcrc_status)):
            if st in CRC_NAMES:
                self.crc[name][CRC_NAMES[st]] += 1

    def lines(self) -> list[str]:
        out = ["", RULE, self.title + (f": {self.source}" if self.source else ""), ""]
        kinds = ", ".join(f"{k} {n}" for k, n in self.kinds.most_common())
        out.append(f"  Packets:             {self.frames}")
        out.append(f"  InfiniBand packets:  {self.ib}" + (f" ({kinds})" if kinds else ""))
        out.append(f"  Bytes:               {self.nbytes}")
        if self.first_ns is not None:
            sec, frac = divmod(self.first_ns, 1_000_000_000)
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
            out.append(f"  First packet:        {when}.{frac:09d} UTC")
            out.append(f"  Span:                {fmt_ns(self.last_rel)} s")
        for name, counts in self.crc.items():
            if counts:
                text = ", ".join(f"{k} {counts[k]}" for k in ("good", "bad", "unverified")
                                 if counts[k])
                out.append(f"  {name + ':':<20} {text}")
        out.append(f"  Malformed packets:   {self.malformed}")
        out.append(RULE)
        return out
