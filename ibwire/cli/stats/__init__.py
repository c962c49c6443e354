"""`-z` statistics: collectors that see every frame read and print after the packets.

Like tshark, the collectors see every frame read (up to `-c`), whatever `-Y` shows;
each may carry its own filter (`io,phs,FILTER`, `conv,qp,FILTER`, ...).
`parse_z(spec)` turns one `-z` argument into a collector; `STATS` lists them.
"""

from __future__ import annotations

from collections.abc import Callable

from ibwire.cli.fields_out import UsageError
from ibwire.cli.filtering import PacketFilter
from ibwire.cli.frames import FrameInfo
from ibwire.packet import Packet


class Stat:
    """A collector: `add` every frame, then `lines()` once."""

    title = ""

    def __init__(self, filt: str = "") -> None:
        self.filter_text = filt
        self.filter = PacketFilter(filt) if filt else None

    def feed(self, info: FrameInfo, pkt: Packet) -> None:
        if self.filter is None or self.filter.matches(info, pkt):
            self.add(info, pkt)

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        raise NotImplementedError

    def lines(self) -> list[str]:
        raise NotImplementedError


def split_spec(spec: str) -> list[str]:
    """Split on commas outside quotes and braces; drop quotes around a part."""
    parts, cur, depth, quote = [], "", 0, ""
    for ch in spec:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur += ch
        elif ch in "{(":
            depth += 1
            cur += ch
        elif ch in "})":
            depth -= 1
            cur += ch
        elif ch == "," and depth <= 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if len(p) >= 2 and p[0] == p[-1] and p[0] in "\"'":
            p = p[1:-1]
        out.append(p)
    return out


def _rest(parts: list[str], n: int) -> str:
    """Everything after the first n parts is the filter (it may contain commas)."""
    return ",".join(parts[n:])


def parse_z(spec: str) -> Stat:
    """One -z argument -> collector; UsageError names the supported ones."""
    from ibwire.cli.stats.conv import Conversations, Endpoints
    from ibwire.cli.stats.expert import Expert
    from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
    from ibwire.cli.stats.io_stat import IoStat
    from ibwire.cli.stats.link_stats import KINDS, LinkStat
    from ibwire.cli.stats.phs import Hierarchy
    from ibwire.cli.stats.summary import Summary

    parts = split_spec(spec)
    head = ",".join(parts[:2])
    makers: dict[str, Callable[[], Stat]] = {
        "io,phs": lambda: Hierarchy(_rest(parts, 2)),
        "ib,opcodes": lambda: OpcodeHistogram(_rest(parts, 2)),
        "ib,mad": lambda: MadHistogram(_rest(parts, 2)),
        "ib,summary": lambda: Summary(_rest(parts, 2)),
    }
    if head in makers:
        return makers[head]()
    if head in KINDS:
        return LinkStat(head, _rest(parts, 2))
    if head == "io,stat":
        if len(parts) < 3:
            raise UsageError(f'invalid -z argument "{spec}": io,stat needs an interval')
        return IoStat(parts[2], [p for p in parts[3:] if p != ""] if len(parts) > 3 else [])
    if parts[0] == "conv" and len(parts) >= 2:
        return Conversations(parts[1], _rest(parts, 2))
    if parts[0] == "endpoints" and len(parts) >= 2:
        return Endpoints(parts[1], _rest(parts, 2))
    if head == "rc,stat" or (parts[0] == "follow" and len(parts) == 3 and parts[1] == "qp"):
        from ibwire.cli.stats.rc_stat import FollowQp, RcStat
        try:
            return RcStat() if head == "rc,stat" else FollowQp(int(parts[2], 0))
        except ValueError:
            raise UsageError(f'invalid -z argument "{spec}": follow,qp,N needs a QP number'
                             ) from None
    if parts[0] == "expert":
        level = parts[1] if len(parts) > 1 and parts[1] in Expert.LEVELS else ""
        return Expert(level, _rest(parts, 2 if level else 1))
    raise UsageError(f'invalid -z argument "{spec}"; supported: {", ".join(SUPPORTED)}')


SUPPORTED = ["io,phs[,filter]", "io,stat,interval[,filter...]", "conv,qp|ib|ip|ipv6|udp|eth",
             "endpoints,ib|ip|ipv6|udp|eth", "ib,opcodes", "ib,mad", "ib,summary",
             "ib,credits", "ib,qos", "roce,pfc", "roce,ecn",
             "expert[,error|warn|note|chat][,filter]", "rc,stat", "follow,qp,N"]
