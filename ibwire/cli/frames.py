"""Per-frame facts the capture gives and the decoder does not: number, times,
lengths, `frame.protocols`, as tshark's `frame.*` fields print them.

For ERF records (link type 197) tshark turns the 16-byte ERF header into a
pseudo-header: `frame.len` is the ERF wire length and `frame.cap_len` the bytes
after the header, so ibwire does the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ibwire.cli.carriers import protocol_stack
from ibwire.constants import (
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LINKTYPE_IPOIB,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
)
from ibwire.fields import REGISTRY
from ibwire.packet import Packet

# Wireshark's WTAP_ENCAP numbers, for frame.encap_type.
WTAP_ENCAP = {LINKTYPE_ETHERNET: 1, LINKTYPE_RAW: 7, LINKTYPE_ERF: 98, LINKTYPE_LINUX_SLL: 25,
              LINKTYPE_LINUX_SLL2: 210, LINKTYPE_IPOIB: 179}

FRAME_FIELDS = [
    ("frame.number", "uint32", "Frame Number"),
    ("frame.time_epoch", "double", "Epoch Time"),
    ("frame.time_relative", "double", "Time since reference or first frame"),
    ("frame.time_delta", "double", "Time delta from previous captured frame"),
    ("frame.time_delta_displayed", "double", "Time delta from previous displayed frame"),
    ("frame.len", "uint32", "Frame length on the wire"),
    ("frame.cap_len", "uint32", "Frame length stored into the capture file"),
    ("frame.protocols", "string", "Protocols in frame"),
    ("frame.encap_type", "uint16", "Encapsulation type"),
    ("frame.interface_id", "uint32", "Interface id"),
    ("frame.offset", "uint64", "Byte offset of the record in the file (ibwire)"),
]
COLUMN_FIELDS = [
    ("_ws.col.No.", "No."), ("_ws.col.Time", "Time"), ("_ws.col.Source", "Source"),
    ("_ws.col.Destination", "Destination"), ("_ws.col.Protocol", "Protocol"),
    ("_ws.col.Length", "Length"), ("_ws.col.Info", "Info"),
]
REGISTRY.add_protocol("frame", "Frame")
for _n, _t, _label in FRAME_FIELDS:
    REGISTRY.add(_n, _t, _label)
for _n, _label in COLUMN_FIELDS:
    if _n != "_ws.col.No.":     # tshark's name, served by -e; its dot does not fit the registry
        REGISTRY.add(_n, "string", _label)


def fmt_ns(ns: int) -> str:
    """Seconds with nine decimals, from integer nanoseconds (exact, signed)."""
    sign = "-" if ns < 0 else ""
    sec, frac = divmod(abs(ns), 1_000_000_000)
    return f"{sign}{sec}.{frac:09d}"


# frame.* times (seconds with nine decimals) -> the FrameInfo attribute in ns.
TIME_FIELDS = {"frame.time_epoch": "ts_ns", "frame.time_relative": "rel_ns",
               "frame.time_delta": "delta_ns", "frame.time_delta_displayed": "delta_disp_ns"}


def erf_header_len(pkt: Packet) -> int:
    """Bytes of ERF header (with extension headers) before the packet."""
    erf = pkt.layer("erf")
    if erf is None:
        return 0
    for lay in pkt.layers:
        if lay is not erf:
            return lay.offset
    return erf.offset + erf.layout.size


@dataclass(slots=True)
class FrameInfo:
    """Everything about one frame that is not the packet's own fields."""

    number: int
    ts_ns: int
    rel_ns: int
    delta_ns: int
    length: int
    cap_len: int
    linktype: int
    interface: int
    offset: int
    delta_disp_ns: int = 0
    pkt: Packet | None = None
    _stack: list[str] | None = field(default=None, repr=False)
    cols: Any = field(default=None, repr=False)  # columns.Columns, made on demand
    _index: dict[str, list[Any]] | None = field(default=None, repr=False)

    def values(self, name: str) -> list[Any]:
        """Every occurrence of a decoded field, in packet order (one pass per packet:
        looking up many fields costs one walk over the layers, not one per field)."""
        if self._index is None:
            index: dict[str, list[Any]] = {}
            if self.pkt is not None:
                for wsname, value, _ in self.pkt.all_fields():
                    index.setdefault(wsname, []).append(value)
            self._index = index
        return self._index.get(name, [])

    @property
    def stack(self) -> list[str]:
        if self._stack is None:
            self._stack = protocol_stack(self.pkt) if self.pkt is not None else []
        return self._stack

    def raw(self, name: str) -> Any:
        """A frame.* value for display filters (numbers as numbers)."""
        if name in ("frame.time_epoch", "frame.time_relative", "frame.time_delta",
                    "frame.time_delta_displayed"):
            ns = {"frame.time_epoch": self.ts_ns, "frame.time_relative": self.rel_ns,
                  "frame.time_delta": self.delta_ns,
                  "frame.time_delta_displayed": self.delta_disp_ns}[name]
            return ns / 1e9
        text = self.value(name)
        if text is None or name == "frame.protocols":
            return text
        return int(text)

    def value(self, name: str) -> str | None:
        """A frame.* field as tshark prints it, or None when not a frame field."""
        if name == "frame.number":
            return str(self.number)
        attr = TIME_FIELDS.get(name)
        if attr is not None:
            return fmt_ns(getattr(self, attr))
        if name == "frame.len":
            return str(self.length)
        if name == "frame.cap_len":
            return str(self.cap_len)
        if name == "frame.protocols":
            return ":".join(self.stack)
        if name == "frame.encap_type":
            return str(WTAP_ENCAP.get(self.linktype, self.linktype))
        if name == "frame.interface_id":
            return str(self.interface)
        if name == "frame.offset":
            return str(self.offset)
        return None


def frame_lengths(pkt: Packet, data_len: int, wire_len: int, linktype: int) -> tuple[int, int]:
    """(frame.len, frame.cap_len) the way tshark reports them."""
    if linktype == LINKTYPE_ERF:
        erf = pkt.layer("erf")
        if erf is not None:
            hdr = erf_header_len(pkt)
            wlen = erf.values["wlen"]
            return wlen, min(max(data_len - hdr, 0), wlen)
    return wire_len, data_len
