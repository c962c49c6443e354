"""The capture point: turns packets crossing the tap into capture `Frame`s.

Native InfiniBand is written the way ibdump writes it: each packet inside an ERF
record (type 21 for data packets, type 25 for link flow-control packets; the
capture-interface bits give the direction, 0 = A->B, 1 = B->A), in pcap/pcapng
with LINKTYPE_ERF (197) or as a native ERF file. RoCE is plain Ethernet (1).
Frame numbers are 1-based, as tshark's `frame.number`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ibwire.capture import Frame, erf_record, write_capture
from ibwire.constants import ERF_TYPE_IB, ERF_TYPE_IB_LINK, LINKTYPE_ERF, LINKTYPE_ETHERNET
from ibwire.headers.opcodes import OPCODES

if TYPE_CHECKING:
    from ibwire.gen.net import Pkt

# 2023-11-14T22:13:20Z: a fixed epoch keeps captures byte-identical between runs.
BASE_NS = 1_700_000_000 * 10**9
FORMATS = ("pcap", "pcapng", "erf")
LINK_RECORD_PAD = 54


class Tap:
    def __init__(self, native: bool, base_ns: int = BASE_NS, link_pad: bool = False) -> None:
        self.native = native
        # Wireshark 4.0 fills its columns by reading a link packet as if it began with
        # an LRH (then a GRH and BTH, by the "LNH" in FCTBS's low bits) and calls a
        # 6-byte record malformed; zero bytes after the LPCRC, up to 60 (LRH + GRH +
        # BTH), keep tshark quiet. Only on request (GenConfig.link_record_pad): ibwire
        # reads them as a trailer and the truth records the padding.
        self.link_pad = bytes(LINK_RECORD_PAD) if link_pad else b""
        self.base_ns = base_ns
        self.frames: list[Frame] = []
        self.tx_frames: dict[int, list[int]] = {}
        self.opcodes: Counter[int] = Counter()
        self.kinds: Counter[str] = Counter()
        # Captured RC requests per stream (sending host, DestQP): frame, PSN, PSNs taken.
        self.requests: dict[tuple[int, int], list[tuple[int, int, int]]] = {}

    @property
    def count(self) -> int:
        return len(self.frames)

    @property
    def linktype(self) -> int:
        return LINKTYPE_ERF if self.native else LINKTYPE_ETHERNET

    def record(self, pkt: Pkt, now: int) -> int:
        ts = self.base_ns + now
        if self.native:
            if pkt.kind == "link":
                data = erf_record(pkt.data + self.link_pad, ts, ERF_TYPE_IB_LINK,
                                  cap=pkt.src)
            else:
                data = erf_record(pkt.data, ts, ERF_TYPE_IB, cap=pkt.src)
        else:
            data = pkt.data
        frame = Frame(index=len(self.frames), ts_ns=ts, linktype=self.linktype, data=data,
                      wire_len=len(data), interface=0)
        self.frames.append(frame)
        number = len(self.frames)
        self.tx_frames.setdefault(pkt.tx, []).append(number)
        self.kinds[pkt.kind] += 1
        if pkt.kind == "req":
            self.requests.setdefault((pkt.src, pkt.qp), []).append(
                (number, pkt.psn, pkt.meta.get("npsn", 1)))
        if pkt.opcode >= 0:
            self.opcodes[pkt.opcode] += 1
        return number

    def frames_of(self, tx: int | None) -> list[int]:
        return [] if tx is None else self.tx_frames.get(tx, [])

    def first_frame(self, tx: int | None) -> int | None:
        f = self.frames_of(tx)
        return f[0] if f else None

    def opcode_counts(self) -> dict[str, int]:
        out = {}
        for code in sorted(self.opcodes):
            out[f"{code:#04x} {OPCODES[code].label}"] = self.opcodes[code]
        return out

    def write(self, path: str, fmt: str = "pcap") -> int:
        if fmt not in FORMATS:
            raise ValueError(f"unknown capture format {fmt!r}; choose from {', '.join(FORMATS)}")
        if fmt == "erf" and not self.native:
            raise ValueError("ERF files carry native InfiniBand; write RoCE as pcap or pcapng")
        return write_capture(path, self.frames, fmt=fmt, linktype=self.linktype)
