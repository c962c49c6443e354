"""The summary line: No., Time, Source → Destination, Protocol, Length, Info.

Layout follows tshark's: number right-aligned in 5, time right-aligned in 10,
source right-aligned in 12, destination left-aligned in 12. Info for transport
packets is `RC RDMA Write First QP=0x000011 PSN=12`, plus what the AETH says
(` MSN=5`, ` [PSN Sequence Error]`, ` [RNR NAK 0.64 ms]`), then ` [bad ICRC]`,
` [bad VCRC]` and ` [Malformed: reason]`. MADs read as tshark reads them
(madinfo.py); link packets as `Flow Control: VL 0 FCTBS 123 FCCL 456`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ibwire.cli.carriers import carrier_info, column_addresses, column_protocol, inner_info
from ibwire.cli.frames import TIME_FIELDS, FrameInfo, fmt_ns
from ibwire.cli.madinfo import mad_header, mad_info
from ibwire.crc import CrcStatus
from ibwire.graph import GRAPH
from ibwire.headers.extended import NAK_CODES, RNR_TIMER_US
from ibwire.headers.extended import SYN_ACK as ACK
from ibwire.headers.extended import SYN_NAK as NAK
from ibwire.headers.extended import SYN_RNR_NAK as RNR_NAK
from ibwire.packet import Packet


@dataclass(slots=True)
class Columns:
    number: str
    time: str
    source: str
    destination: str
    protocol: str
    length: str
    info: str
    style: str | None

    def line(self) -> str:
        return (f"{self.number:>5} {self.time:>10} {self.source:>12} → "
                f"{self.destination:<12} {self.protocol} {self.length} {self.info}")

    def get(self, name: str) -> str | None:
        """tshark's `_ws.col.*` fields."""
        return {
            "_ws.col.No.": self.number, "_ws.col.Time": self.time,
            "_ws.col.Source": self.source, "_ws.col.Destination": self.destination,
            "_ws.col.Protocol": self.protocol, "_ws.col.Length": self.length,
            "_ws.col.Info": self.info,
        }.get(name)


# Operations coloured as acknowledgements (RC, RD and XRC alike).
ACK_OPERATIONS = frozenset({"Acknowledge", "Atomic Acknowledge"})


def rnr_ms(code: int) -> str:
    """The RNR NAK timer (AETH `timer` field) in milliseconds, as tshark prints it."""
    us = RNR_TIMER_US[code]
    return f"{us / 1000:g}"


def transport_info(pkt: Packet, stack: list[str] | None = None) -> tuple[str, str | None]:
    """Info text and style of a packet with a BTH. IPoIB names its mode and adds what
    it carries: `IPoIB-CM RC Send Only QP=0x000051 PSN=7 | Echo (ping) request ...`."""
    op = pkt.opcode
    bth = pkt.layer("bth")
    assert op is not None and bth is not None
    qp = bth.values["destqp"]
    base = f"{op.label} QP=0x{qp:06x}"
    if pkt.layer("ipoib") is not None:
        mode = "IPoIB" if op.transport == "UD" else "IPoIB-CM"
        text = inner_info(pkt, stack or [])
        info = f"{mode} {base} PSN={bth.values['psn']}"
        return (f"{info} | {text}" if text else info), None
    style: str | None = "ack" if op.name in ACK_OPERATIONS else None
    mad = mad_header(pkt)
    if mad is not None:
        text, replaces = mad_info(mad)
        if text:
            style = "cm" if text.startswith("CM:") else "mad"
            return (text if replaces else f"{base} {text}"), style
    info = f"{base} PSN={bth.values['psn']}"
    aeth = pkt.layer("aeth")
    if aeth is not None:
        v = aeth.values
        kind = v["syndrome_type"]
        if kind == ACK:
            info += f" MSN={v['msn']}"
        elif kind == RNR_NAK:
            info += f" [RNR NAK {rnr_ms(v['timer'])} ms]"
            style = "warn"
        elif kind == NAK:
            code = v["error_code"]
            info += f" [{NAK_CODES.get(code, f'NAK code {code}')}]"
            style = "error"
        else:
            info += f" [Reserved syndrome 0x{v['syndrome']:02x}]"
    return info, style


def link_info(pkt: Packet) -> str:
    v = pkt.layer("link").values  # type: ignore[union-attr]
    kind = "Flow Control Init" if v["op"] == 1 else "Flow Control"
    return f"{kind}: VL {v['vl']} FCTBS {v['fctbs']} FCCL {v['fccl']}"


def info_column(pkt: Packet, stack: list[str]) -> tuple[str, str | None]:
    """(Info text, style key)."""
    style: str | None
    if pkt.layer("link") is not None:
        info, style = link_info(pkt), "link"
    elif pkt.opcode is not None:
        info, style = transport_info(pkt, stack)
    elif pkt.is_infiniband:
        info, style = _routing_only(pkt), None
    else:
        return carrier_info(pkt, stack), "other"
    bad = [name for name, st in (("ICRC", pkt.icrc_status), ("VCRC", pkt.vcrc_status),
                                 ("LPCRC", pkt.lpcrc_status)) if st == CrcStatus.BAD]
    for name in bad:
        info += f" [bad {name}]"
    if pkt.problems:
        more = f" (+{len(pkt.problems) - 1} more)" if len(pkt.problems) > 1 else ""
        info += f" [Malformed: {pkt.problems[0].reason}{more}]"
    if bad or pkt.problems:
        style = "error"
    return info, style


def _routing_only(pkt: Packet) -> str:
    lrh = pkt.layer("lrh")
    following = None if lrh is None else GRAPH.next("lrh", lrh.values["lnh"])
    return _NON_IBA_INFO.get(following or "", "InfiniBand")


# Info of a native packet whose LRH leads to no IBA transport, by the LNH's next node.
_NON_IBA_INFO = {"rwh": "Raw", "ipv6": "IPv6 over InfiniBand"}


def columns(info: FrameInfo, time_text: str | None = None) -> Columns:
    """All summary columns of a frame (cached on the FrameInfo)."""
    if info.cols is not None:
        return info.cols
    pkt = info.pkt
    assert pkt is not None
    stack = info.stack
    src, dst = column_addresses(pkt)
    text, style = info_column(pkt, stack)
    cols = Columns(str(info.number), time_text or fmt_ns(info.rel_ns), src, dst,
                   column_protocol(pkt, stack), str(info.length), text, style)
    info.cols = cols
    return cols


TIME_FORMATS = ("r", "a", "ad", "d", "dd", "e", "u", "ud")
# -t formats that print a frame.* time as it is (the others are clock times).
TIME_MODES = {"r": "frame.time_relative", "d": "frame.time_delta",
              "dd": "frame.time_delta_displayed", "e": "frame.time_epoch"}


def time_text(info: FrameInfo, mode: str = "r") -> str:
    """The Time column for tshark's `-t` formats (r, a, ad, d, dd, e, u, ud)."""
    field = TIME_MODES.get(mode)
    if field is not None:
        return fmt_ns(getattr(info, TIME_FIELDS[field]))
    import time as _time
    sec, frac = divmod(info.ts_ns, 1_000_000_000)
    tm = _time.gmtime(sec) if mode in ("u", "ud") else _time.localtime(sec)
    clock = f"{_time.strftime('%H:%M:%S', tm)}.{frac:09d}"
    if mode in ("ad", "ud"):
        return f"{_time.strftime('%Y-%m-%d', tm)} {clock}"
    return clock
