"""`-z conv,TYPE` and `-z endpoints,TYPE` (tshark's tables, plus InfiniBand keys).

Types: `qp` (InfiniBand queue-pair conversations), `ib` (InfiniBand addresses:
LID, GID for native with GRH and RoCEv1, IP for RoCEv2), `ip`, `ipv6`, `udp`, `eth`.

QP conversations: a packet names only its destination QP (the DETH of a UD
packet adds the source QP). Each direction is a flow (source, destination,
destination QP); the two flows of one connection are paired when the source QP
is known (DETH), else by the PSNs they share (an ACK or READ response carries
the PSN of the request it answers), else when one flow is the only candidate.
A flow left unpaired shows its source QP as `?`.
"""

from __future__ import annotations

from typing import Any

from ibwire.cli.carriers import addresses
from ibwire.cli.fields_out import UsageError
from ibwire.cli.frames import FrameInfo, fmt_ns
from ibwire.cli.stats import Stat
from ibwire.packet import Packet

RULE = "=" * 80
TYPES = {"qp": "InfiniBand QP", "ib": "InfiniBand", "ip": "IPv4", "ipv6": "IPv6",
         "udp": "UDP", "eth": "Ethernet"}
PSN_SAMPLE = 4096


def _ib_addr(pkt: Packet) -> tuple[str, str] | None:
    if not pkt.is_infiniband:
        return None
    src, dst = addresses(pkt)
    return src.replace("LID: ", "LID ").replace("GID: ", ""), \
        dst.replace("LID: ", "LID ").replace("GID: ", "")


def endpoint_pair(kind: str, pkt: Packet) -> tuple[str, str] | None:
    """(source, destination) endpoint names of a packet for a table type."""
    if kind == "ib":
        return _ib_addr(pkt)
    if kind in ("ip", "ipv6"):
        lay = pkt.layer(kind)
        if lay is None:
            return None
        from ibwire.cli.tshark_text import format_field
        return (format_field(f"{kind}.src", lay.values["src"]),
                format_field(f"{kind}.dst", lay.values["dst"]))
    if kind == "udp":
        udp = pkt.layer("udp")
        ip = pkt.layer("ip") or pkt.layer("ipv6")
        if udp is None or ip is None:
            return None
        from ibwire.cli.tshark_text import format_field
        p = ip.layout.prefix
        return (f"{format_field(p + '.src', ip.values['src'])}:{udp.values['srcport']}",
                f"{format_field(p + '.dst', ip.values['dst'])}:{udp.values['dstport']}")
    if kind == "eth":
        eth = pkt.layer("eth")
        if eth is None:
            return None
        mac = lambda raw: ":".join(f"{b:02x}" for b in raw)  # noqa: E731
        return mac(eth.values["src"]), mac(eth.values["dst"])
    return None


class _Flow:
    __slots__ = ("frames", "nbytes", "start", "end", "psns", "order")

    def __init__(self, order: int, start: int) -> None:
        self.frames = self.nbytes = 0
        self.start = self.end = start
        self.psns: set[int] = set()
        self.order = order


def _qp(addr: str, qp: int | None) -> str:
    return f"{addr} QP=?" if qp is None else f"{addr} QP=0x{qp:06x}"


class Conversations(Stat):
    def __init__(self, kind: str, filt: str = "") -> None:
        if kind not in TYPES:
            raise UsageError(f'conv: unknown type "{kind}" (one of {", ".join(TYPES)})')
        super().__init__(filt)
        self.kind = kind
        self.title = f"{TYPES[kind]} Conversations"
        self.flows: dict[tuple[Any, ...], _Flow] = {}

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        if self.kind == "qp":
            bth = pkt.layer("bth")
            ends = _ib_addr(pkt) if bth is not None else None
            if ends is None or bth is None:
                return
            deth = pkt.layer("deth")
            key: tuple[Any, ...] = (ends[0], ends[1], bth.values["destqp"],
                                    deth.values["srcqp"] if deth is not None else None)
        else:
            pair = endpoint_pair(self.kind, pkt)
            if pair is None:
                return
            key = pair
        fl = self.flows.get(key)
        if fl is None:
            fl = self.flows[key] = _Flow(len(self.flows), info.rel_ns)
        fl.frames += 1
        fl.nbytes += info.length
        fl.end = info.rel_ns
        if self.kind == "qp" and len(fl.psns) < PSN_SAMPLE:
            fl.psns.add(pkt.layer("bth").values["psn"])  # type: ignore[union-attr]

    def _pairs(self) -> list[tuple[str, str, _Flow | None, _Flow | None]]:
        """(A, B, flow A->B, flow B->A) per conversation, in order of first frame."""
        done: set[tuple[Any, ...]] = set()
        out = []
        for key, fl in sorted(self.flows.items(), key=lambda kv: kv[1].order):
            if key in done:
                continue
            done.add(key)
            if self.kind != "qp":
                a, b = key
                rev_key = (b, a)
                rev = self.flows.get(rev_key) if rev_key not in done else None
                if rev is not None:
                    done.add(rev_key)
                out.append((a, b, fl, rev))
                continue
            src, dst, dqp, sqp = key
            rev_key = self._reverse(key, done)
            rev = self.flows.get(rev_key) if rev_key else None
            if rev_key is not None:
                done.add(rev_key)
                sqp = rev_key[2] if sqp is None else sqp
            out.append((_qp(src, sqp), _qp(dst, dqp), fl, rev))
        return out

    def _reverse(self, key: tuple[Any, ...], done: set) -> tuple[Any, ...] | None:
        src, dst, dqp, sqp = key
        cands = [k for k in self.flows if k not in done and k[0] == dst and k[1] == src
                 and (sqp is None or k[2] == sqp) and (k[3] is None or k[3] == dqp)]
        if not cands:
            return None
        exact = [k for k in cands if sqp is not None and k[3] == dqp]
        if exact:
            return exact[0]
        mine = self.flows[key].psns
        best = max(cands, key=lambda k: len(mine & self.flows[k].psns))
        if mine & self.flows[best].psns:
            return best
        if len(cands) == 1:
            others = [k for k in self.flows if k[0] == src and k[1] == dst and k not in done
                      and k != key]
            return cands[0] if not others else None
        return None

    def lines(self) -> list[str]:
        rows = []
        for a, b, ab, ba in self._pairs():
            fab, bab = (ab.frames, ab.nbytes) if ab else (0, 0)
            fba, bba = (ba.frames, ba.nbytes) if ba else (0, 0)
            flows = [f for f in (ab, ba) if f is not None]
            start = min(f.start for f in flows)
            dur = max(f.end for f in flows) - start
            rows.append((a, b, fba, bba, fab, bab, start, dur))
        rows.sort(key=lambda r: -(r[2] + r[4]))
        wa = max([len(r[0]) for r in rows] + [20])
        wb = max([len(r[1]) for r in rows] + [20])
        lead = " " * (wa + wb + 5)
        out = [RULE, self.title, f"Filter:{self.filter_text or '<No Filter>'}",
               f"{lead}|       <-       | |       ->       | |      Total     |"
               f"    Relative    |   Duration   |  Bits/s A→B  |  Bits/s B→A  |",
               f"{lead}| Frames   Bytes | | Frames   Bytes | | Frames   Bytes |"
               f"      Start     |              |              |              |"]
        for a, b, fba, bba, fab, bab, start, dur in rows:
            secs = dur / 1e9
            out.append(f"{a:<{wa}} <-> {b:<{wb}}  {fba:>6} {bba:>7}    {fab:>6} {bab:>7}    "
                       f"{fba + fab:>6} {bba + bab:>7}   {fmt_ns(start):>14}   {secs:>12.4f}"
                       f"   {_rate(bab, secs):>12}   {_rate(bba, secs):>12}")
        out.append(RULE)
        return out


def _rate(nbytes: int, secs: float) -> str:
    return f"{nbytes * 8 / secs:.0f}" if secs > 0 else "N/A"


class Endpoints(Stat):
    def __init__(self, kind: str, filt: str = "") -> None:
        if kind not in TYPES or kind == "qp":
            raise UsageError(f'endpoints: unknown type "{kind}" (one of ib, ip, ipv6, udp, eth)')
        super().__init__(filt)
        self.kind = kind
        self.title = f"{TYPES[kind]} Endpoints"
        self.table: dict[str, list[int]] = {}   # tx frames, tx bytes, rx frames, rx bytes

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        pair = endpoint_pair(self.kind, pkt)
        if pair is None:
            return
        src, dst = pair
        for addr, i in ((src, 0), (dst, 2)):
            row = self.table.setdefault(addr, [0, 0, 0, 0])
            row[i] += 1
            row[i + 1] += info.length

    def lines(self) -> list[str]:
        rows = sorted(self.table.items(), key=lambda kv: -(kv[1][0] + kv[1][2]))
        w = max([len(a) for a, _ in rows] + [22])
        out = [RULE, self.title, f"Filter:{self.filter_text or '<No Filter>'}",
               f"{'':<{w}} |  Packets  | |  Bytes  | | Tx Packets | | Tx Bytes | "
               f"| Rx Packets | | Rx Bytes |"]
        for addr, (tf, tb, rf, rb) in rows:
            out.append(f"{addr:<{w}}  {tf + rf:>10}  {tb + rb:>10}  {tf:>12}  {tb:>10}  "
                       f"{rf:>12}  {rb:>10}")
        out.append(RULE)
        return out
