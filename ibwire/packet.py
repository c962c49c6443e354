"""Decoded packets: layers of named values, addressable by Wireshark field name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ibwire.crc import CrcStatus
from ibwire.fields import REGISTRY, UINT8, UINT32, Field, Layout
from ibwire.headers.opcodes import Opcode

# Fields that no header layout holds: the packet computes them.
REGISTRY.add_protocol("infiniband", "InfiniBand")
REGISTRY.add_protocol("infiniband_link", "InfiniBand Link")
_EXTRA_FIELDS = [
    ("infiniband.invariant.crc", UINT32, "Invariant CRC", "hex"),
    ("infiniband.invariant.crc.status", UINT8, "Invariant CRC Status", "dec"),
    ("infiniband.variant.crc", "uint16", "Variant CRC", "hex"),
    ("infiniband.variant.crc.status", UINT8, "Variant CRC Status", "dec"),
    ("infiniband_link.lpcrc.status", UINT8, "Link Packet CRC Status", "dec"),
    ("infiniband.payload", "bytes", "Payload", "dec"),
    ("infiniband.pad", "bytes", "Pad bytes (ibwire)", "dec"),
    ("infiniband.raw", "bytes", "Undecoded bytes (ibwire)", "dec"),
    ("ibwire.malformed", "string", "Malformed: layer, offset and reason", "dec"),
    ("ibwire.opcode.name", "string", "Opcode name (transport and operation)", "dec"),
]
for _name, _ft, _label, _base in _EXTRA_FIELDS:
    REGISTRY.add(_name, _ft, _label, _base)


@dataclass(frozen=True)
class Malformed:
    """Where decoding stopped or found an inconsistency."""

    layer: str
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.layer} at byte {self.offset}: {self.reason}"


@dataclass
class Layer:
    """One decoded header: its layout, where it starts and its field values."""

    layout: Layout
    offset: int
    values: dict[str, Any]

    @property
    def name(self) -> str:
        return self.layout.name

    @property
    def size(self) -> int:
        return self.layout.size

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"layer {self.__dict__.get('layout')!r} has no field {name!r}")

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def fields(self) -> Iterator[tuple[Field, Any]]:
        """Fields in layout order, skipping those not present for these values."""
        for f in self.layout.fields:
            if f.present is not None and not _safe_present(f, self.values):
                continue
            yield f, self.values.get(f.name)


class LazyLayer(Layer):
    """A layer whose values are unpacked from the packet bytes on first access
    (the decoder's fast path stores headers it did not need to look into)."""

    def __init__(self, layout: Layout, offset: int, data: bytes) -> None:  # noqa: D107
        d = self.__dict__
        d["layout"], d["offset"], d["_data"], d["_values"] = layout, offset, data, None

    @property  # type: ignore[override]
    def values(self) -> dict[str, Any]:
        d = self.__dict__
        v = d["_values"]
        if v is None:
            v = d["_values"] = d["layout"].values_at(d["_data"], d["offset"])
        return v

    @values.setter
    def values(self, values: dict[str, Any]) -> None:
        self.__dict__["_values"] = values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        values = self.values
        if name in values:
            return values[name]
        raise AttributeError(f"layer {self.layout!r} has no field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layer):
            return NotImplemented
        return (self.layout, self.offset, self.values) == (other.layout, other.offset,
                                                            other.values)

    __hash__ = None  # type: ignore[assignment]


def _safe_present(f: Field, values: dict[str, Any]) -> bool:
    try:
        return bool(f.present(values))  # type: ignore[misc]
    except (KeyError, TypeError, ValueError):
        return False


@dataclass
class Packet:
    """A decoded packet. `pkt["infiniband.bth.psn"]`, `pkt.bth.psn`, `pkt.layer("grh")`."""

    data: bytes
    encap: str
    layers: list[Layer] = field(default_factory=list)
    problems: list[Malformed] = field(default_factory=list)
    extras: dict[str, list[Any]] = field(default_factory=dict)
    opcode: Opcode | None = None
    payload: bytes = b""
    payload_offset: int = -1
    pad: bytes = b""
    icrc: bytes | None = None
    icrc_status: CrcStatus = CrcStatus.NOT_PRESENT
    vcrc: bytes | None = None
    vcrc_status: CrcStatus = CrcStatus.NOT_PRESENT
    lpcrc_status: CrcStatus = CrcStatus.NOT_PRESENT
    trailer: bytes = b""          # bytes after the packet (Ethernet padding, FCS)
    undecoded: bytes = b""        # bytes the decoder could not place
    undecoded_offset: int = -1
    frame: Any = None             # the capture Frame, when read from a file
    ib_offset: int = -1           # where the InfiniBand part (LRH, GRH or BTH) starts
    options: Any = None           # decoder Options used

    # -- access ------------------------------------------------------------
    @property
    def malformed(self) -> Malformed | None:
        return self.problems[0] if self.problems else None

    @property
    def is_infiniband(self) -> bool:
        return self.ib_offset >= 0

    def mark(self, layer: str, offset: int, reason: str) -> None:
        self.problems.append(Malformed(layer, offset, reason))

    def layer(self, name: str, index: int = 0) -> Layer | None:
        n = 0
        for lay in self.layers:
            if lay.layout.name == name:
                if n == index:
                    return lay
                n += 1
        return None

    def __getattr__(self, name: str) -> Layer:
        layers = self.__dict__.get("layers")
        if layers is not None:
            for lay in layers:
                if lay.layout.name == name:
                    return lay
        raise AttributeError(f"packet has no {name!r} layer")

    def __contains__(self, name: str) -> bool:
        return self.has(name)

    def __getitem__(self, wsname: str) -> Any:
        vals = self.values_of(wsname)
        if not vals:
            raise KeyError(wsname)
        return vals[0]

    def get(self, wsname: str, default: Any = None) -> Any:
        vals = self.values_of(wsname)
        return vals[0] if vals else default

    def values_of(self, wsname: str) -> list[Any]:
        """Every occurrence of a field, in packet order."""
        out: list[Any] = []
        for lay in self.layers:
            layout = lay.layout
            if wsname == layout.prefix:
                out.append(self.data[lay.offset:lay.offset + layout.size])
                continue
            for f in _by_wsname(layout).get(wsname, ()):
                if f.present is not None and not _safe_present(f, lay.values):
                    continue
                v = lay.values.get(f.name)
                if v is not None:
                    out.append(v)
        out.extend(self.extras.get(wsname, ()))
        return out

    def has(self, name: str) -> bool:
        """Field present, or protocol present (`infiniband`, `ip`, `udp`, ...)."""
        if name in REGISTRY.protocols:
            if name == "infiniband":
                return self.is_infiniband and any(
                    lay.layout.protocol == "infiniband" for lay in self.layers)
            return any(lay.layout.protocol == name for lay in self.layers)
        return bool(self.values_of(name))

    def protocols(self) -> list[str]:
        """Protocols in stack order (one entry per change of protocol)."""
        out: list[str] = []
        for lay in self.layers:
            if not out or out[-1] != lay.layout.protocol:
                out.append(lay.layout.protocol)
        return out

    def all_fields(self) -> Iterator[tuple[str, Any, Layer | None]]:
        """(public name, value, layer) for every present public field, in order."""
        for lay in self.layers:
            if lay.layout.prefix:
                yield lay.layout.prefix, self.data[lay.offset:lay.offset + lay.size], lay
            for f, v in lay.fields():
                if f.wsname and v is not None:
                    yield f.wsname, v, lay
        for name, vals in self.extras.items():
            for v in vals:
                yield name, v, None

    def add(self, wsname: str, value: Any) -> None:
        self.extras.setdefault(wsname, []).append(value)

    def summary(self) -> str:
        if self.opcode is not None:
            bth = self.layer("bth")
            assert bth is not None
            return f"{self.opcode.label} QP={bth.destqp:#08x} PSN={bth.psn}"
        return "/".join(self.protocols()) or "empty"


_WS_CACHE: dict[int, dict[str, list[Field]]] = {}


def _by_wsname(layout: Layout) -> dict[str, list[Field]]:
    """Public name -> fields of a layout (a name may recur, e.g. ServiceData words)."""
    table = _WS_CACHE.get(id(layout))
    if table is None:
        table = {}
        for f in layout.fields:
            if f.wsname:
                table.setdefault(f.wsname, []).append(f)
        _WS_CACHE[id(layout)] = table
    return table
