"""Management datagrams as the fabric view needs them: one `Mad` per decoded MAD
packet, with its addressing (LRH LIDs, directed route) and its decoded layers.

Only the decoders in `ibwire.mad` read bytes; this module reads their layers.
Directed-route facts (IBA 14.2.2): the InitialPath entries 1..HopCount are the
egress ports taken at each hop, starting at the node that sent the request; a
response carries the same InitialPath and HopCount, so a captured response alone
says which route it answers. Requests and responses pair by TransactionID.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ibwire
import ibwire.mad  # noqa: F401 - registers the MAD decoder
from ibwire.capture import CaptureError
from ibwire.crc import CrcStatus
from ibwire.mad.build import PERMISSIVE_LID, method_code
from ibwire.mad.header import DR
from ibwire.packet import Layer, Packet

# Management classes (IBA 13.4.4) and methods (13.4.5) the fabric view reads.
SMP_LID, SMP_DR, SA_CLASS, PERF_CLASS = 0x01, DR, 0x03, 0x04
RESPONSE_BIT = 0x80
TRAP, TRAP_REPRESS, SET = (method_code(name) for name in ("Trap", "TrapRepress", "Set"))


@dataclass
class Mad:
    """One MAD as seen on the wire."""

    frame: int                    # frame number in its capture (1-based, like tshark)
    source: int                   # index of the capture file it came from
    ts: float                     # seconds
    mgmt_class: int
    method: int
    attribute: int
    modifier: int
    tid: int
    status: int
    slid: int | None
    dlid: int | None
    layers: list[Layer] = field(repr=False, default_factory=list)
    path: tuple[int, ...] | None = None   # DR: egress ports after entry 0
    return_path: tuple[int, ...] | None = None
    dr_slid: int | None = None
    dr_dlid: int | None = None
    direction: int = 0
    hop_pointer: int = 0
    origin: tuple | None = None           # DR: where its route is anchored (route_origin)

    @property
    def is_response(self) -> bool:
        return bool(self.method & RESPONSE_BIT)

    @property
    def directed(self) -> bool:
        return self.mgmt_class == SMP_DR

    def layer(self, name: str) -> Layer | None:
        for lay in self.layers:
            if lay.layout.name == name:
                return lay
        return None

    def all(self, name: str) -> list[Layer]:
        return [lay for lay in self.layers if lay.layout.name == name]

    def values(self, layer: str) -> dict[str, Any] | None:
        lay = self.layer(layer)
        return lay.values if lay is not None else None


def mad_of(pkt: Packet, frame: int, source: int) -> Mad | None:
    """The MAD a decoded packet carries (None if it carries none)."""
    hdr_index = next((i for i, lay in enumerate(pkt.layers) if lay.layout.name == "mad"), None)
    if hdr_index is None:
        return None
    h = pkt.layers[hdr_index].values
    lrh = pkt.layer("lrh")
    ts = pkt.frame.ts_ns / 1e9 if pkt.frame is not None else 0.0
    mad = Mad(frame=frame, source=source, ts=ts, mgmt_class=h["mgmt_class"],
              method=h["method"], attribute=h["attribute_id"],
              modifier=h["attribute_modifier"], tid=h["transaction_id"], status=h["status"],
              slid=lrh.slid if lrh is not None else None,
              dlid=lrh.dlid if lrh is not None else None,
              layers=pkt.layers[hdr_index + 1:])
    if mad.mgmt_class == SMP_DR:
        hops = h["class_specific"] & 0xFF
        mad.hop_pointer = h["class_specific"] >> 8
        mad.direction = h["status"] >> 15
        dr = mad.values("smp_dr")
        paths = mad.values("smp_dr_paths")
        if dr is not None:
            mad.dr_slid, mad.dr_dlid = dr["dr_slid"], dr["dr_dlid"]
        if paths is not None and hops < 64:
            mad.path = tuple(paths["initial_path"][1:hops + 1])
            mad.return_path = tuple(paths["return_path"][1:hops + 1])
    return mad


def read_mads(paths: Iterable[str], rejected: list[tuple[int, int, str]] | None = None,
              errors: list[str] | None = None) -> Iterator[Mad]:
    """Every MAD in the capture files, in file order. Packets that are not MADs, or
    whose MAD header could not be decoded, are skipped (the decoder marks them); a
    MAD whose ICRC or VCRC is wrong was corrupted on the way and is not evidence:
    it is listed in `rejected` as (capture index, frame, reason) instead. With
    `errors`, a capture that cannot be read to its end contributes what was read
    before the problem, and the problem is appended (else it is raised)."""
    for source, path in enumerate(paths):
        try:
            yield from file_mads(path, source, rejected)
        except (CaptureError, OSError) as exc:
            if errors is None:
                raise
            errors.append(str(exc))


def file_mads(path: str, source: int, rejected: list[tuple[int, int, str]] | None
              ) -> Iterator[Mad]:
    """The MADs of one capture file (index `source`); a read error is raised."""
    yield from packet_mads(enumerate(ibwire.read(path), start=1), source, rejected)


def packet_mads(numbered: Iterable[tuple[int, Packet]], source: int,
                rejected: list[tuple[int, int, str]] | None) -> Iterator[Mad]:
    """The MADs of (frame number, decoded packet) pairs of capture `source`, as
    `read_mads` keeps them (also for frames picked by the workers of ibwire.scale)."""
    for n, pkt in numbered:
        mad = checked_mad(pkt, n, source, rejected)
        if mad is not None:
            yield mad


def checked_mad(pkt: Packet, frame: int, source: int,
                rejected: list[tuple[int, int, str]] | None) -> Mad | None:
    """`mad_of`, unless the packet's ICRC or VCRC is bad: then None, and the packet
    is listed in `rejected` (see `read_mads`)."""
    mad = mad_of(pkt, frame, source)
    if mad is None:
        return None
    bad = [name for name, st in (("ICRC", pkt.icrc_status), ("VCRC", pkt.vcrc_status))
           if st == CrcStatus.BAD]
    if bad:
        if rejected is not None:
            rejected.append((source, frame, f"bad {'/'.join(bad)}"))
        return None
    return mad


@dataclass
class Exchange:
    """A request and its response (either may be missing from the capture)."""

    request: Mad | None
    response: Mad | None
    retries: int = 0

    @property
    def any(self) -> Mad:
        return self.response or self.request  # type: ignore[return-value]


def pair(mads: Iterable[Mad]) -> list[Exchange]:
    """Pair requests with responses by (capture, class, TransactionID). A request
    repeated with the same TID before its answer is a retry of it; traps and
    reports stand alone (their TrapRepress pairs by TID like a response would)."""
    out: list[Exchange] = []
    waiting: dict[tuple[int, int, int], Exchange] = {}
    for mad in mads:
        key = (mad.source, mad.mgmt_class, mad.tid)
        if mad.is_response or mad.method == TRAP_REPRESS:
            ex = waiting.pop(key, None)
            if ex is not None:
                ex.response = mad
            else:
                out.append(Exchange(None, mad))
            continue
        if key in waiting:
            waiting[key].retries += 1
            continue
        ex = Exchange(mad, None)
        out.append(ex)
        waiting[key] = ex
    return out


def route_origin(mad: Mad) -> tuple | None:
    """Where a directed route is anchored, as seen at the capture point.

    A request crossing the j-th link of its route carries HopPointer j (IBA 14.2.2.2:
    the sender sets 1 on the first link, each hop adds one), so the link's near end
    is the node at InitialPath[1..j-1] - the same physical node whoever sent the
    SMP. Routes anchored at (j, that prefix) therefore agree beyond it even when
    several requesters share a capture; at the requester's own port j is 1 and the
    prefix empty. A LID-routed first part anchors at the LRH DLID (DrSLID not
    permissive); a LID-routed tail (DrDLID not permissive) names no node: None."""
    if not mad.directed or mad.dr_dlid not in (None, PERMISSIVE_LID):
        return None
    if mad.dr_slid not in (None, PERMISSIVE_LID):
        return ("lid", mad.source, mad.slid if mad.is_response else mad.dlid)
    path = mad.path or ()
    hp = min(max(mad.hop_pointer, 1), max(len(path), 1))
    return ("dr", mad.source, hp, path[:hp - 1])


def assign_origins(exchanges: Iterable[Exchange]) -> None:
    """Set `origin` on every DR MAD; a response takes its request's (the response's
    HopPointer counts the way back, whose convention varies)."""
    for ex in exchanges:
        req, resp = ex.request, ex.response
        if req is not None:
            req.origin = route_origin(req)
        if resp is not None:
            same = req is not None and req.directed and req.path == resp.path
            resp.origin = req.origin if same and req is not None else route_origin(resp)
