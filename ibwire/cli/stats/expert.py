"""`-z expert`: problems by severity, in tshark's table layout.

Items, per packet: Error — malformed (decoder problem), bad ICRC/VCRC/LPCRC,
reserved opcode; Warn — NAK (sequence error, remote errors); Note — RNR NAK,
MAD with non-zero status; Chat — CM messages. Analyses add theirs through the
packet's `ibwire.expert` extras: (severity, group, protocol, summary) tuples.
"""

from __future__ import annotations

from collections import Counter

from ibwire.cli.frames import FrameInfo
from ibwire.cli.madinfo import CM_ATTRS, CM_CLASS, mad_header, mad_info
from ibwire.cli.stats import Stat
from ibwire.crc import CrcStatus
from ibwire.headers.extended import NAK_CODES
from ibwire.headers.extended import SYN_NAK as NAK
from ibwire.headers.extended import SYN_RNR_NAK as RNR_NAK
from ibwire.packet import Packet

SEVERITIES = ("Error", "Warn", "Note", "Chat")
TITLES = {"Error": "Errors", "Warn": "Warns", "Note": "Notes", "Chat": "Chats"}
Item = tuple[str, str, str, str]   # severity, group, protocol, summary


def expert_items(pkt: Packet) -> list[Item]:
    """Every expert item of one packet."""
    if not pkt.is_infiniband and not pkt.problems:
        return list(pkt.extras.get("ibwire.expert", ()))
    proto = "InfiniBand"
    items: list[Item] = []
    for p in pkt.problems:
        items.append(("Error", "Malformed", proto, f"Malformed {p.layer}: {p.reason}"))
    for name, st in (("ICRC", pkt.icrc_status), ("VCRC", pkt.vcrc_status),
                     ("LPCRC", pkt.lpcrc_status)):
        if st == CrcStatus.BAD:
            items.append(("Error", "Checksum", proto, f"Bad {name}"))
    aeth = pkt.layer("aeth")
    if aeth is not None:
        kind, code = aeth.values["syndrome_type"], aeth.values["error_code"]
        if kind == NAK:
            items.append(("Warn", "Sequence" if code == 0 else "Response", proto,
                          f"NAK: {NAK_CODES.get(code, f'code {code}')}"))
        elif kind == RNR_NAK:
            items.append(("Note", "Sequence", proto, "RNR NAK"))
    mad = mad_header(pkt)
    if mad is not None:
        if mad.status:
            text, _ = mad_info(mad)
            items.append(("Note", "Response", proto,
                          f"MAD status 0x{mad.status:04x} {text}".rstrip()))
        if mad.mgmt_class == CM_CLASS:
            items.append(("Chat", "Sequence", proto,
                          f"CM: {CM_ATTRS.get(mad.attr, f'0x{mad.attr:04x}')}"))
    items.extend(pkt.extras.get("ibwire.expert", ()))
    return items


class Expert(Stat):
    LEVELS = {"error": 0, "warn": 1, "note": 2, "chat": 3, "comment": 3}
    title = "Expert Information"

    def __init__(self, level: str = "", filt: str = "") -> None:
        super().__init__(filt)
        self.max_level = self.LEVELS.get(level, 3)
        self.counts: Counter[Item] = Counter()
        self.first: dict[Item, int] = {}

    def add(self, info: FrameInfo, pkt: Packet) -> None:
        for item in expert_items(pkt):
            if SEVERITIES.index(item[0]) <= self.max_level:
                self.counts[item] += 1
                self.first.setdefault(item, info.number)

    def add_items(self, number: int, items: list[Item]) -> None:
        """Items of frame `number` that came from outside the packet (an analysis run
        beside the bulk path)."""
        for item in items:
            if SEVERITIES.index(item[0]) <= self.max_level:
                self.counts[item] += 1
                self.first[item] = min(self.first.get(item, number), number)

    def lines(self) -> list[str]:
        out: list[str] = []
        for sev in SEVERITIES:
            rows = [(item, n) for item, n in self.counts.items() if item[0] == sev]
            if not rows:
                continue
            out += ["", f"{TITLES[sev]} ({sum(n for _, n in rows)})", "=============",
                    "   Frequency      Group           Protocol  Summary"]
            # Ties in frequency: the item seen first comes first.
            rows.sort(key=lambda r: (-r[1], self.first.get(r[0], 0)))
            for (_, group, proto, summary), n in rows:
                out.append(f"{n:12d} {group:>10} {proto:>18}  {summary}")
        return out
