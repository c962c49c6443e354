"""`-T fields -e F ... -E opt=value`: one line per frame, values as tshark prints them.

Each `-e` name is resolved once to a getter: `frame.*` and `_ws.col.*` come from
the frame, a few tshark aggregate fields (`ip.addr`, `udp.port`, ...) from the
carrier layers, and everything else from `pkt.values_of(name)` formatted by
`ibwire.cli.tshark_text.format_field` (the registry's type and base). Names ibwire does
not know print empty, with one warning on stderr, so lines still line up with
tshark's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ibwire.cli.columns import columns
from ibwire.cli.frames import FrameInfo
from ibwire.cli.tshark_text import format_field, format_value
from ibwire.fields import REGISTRY
from ibwire.inner import NAMES as INNER_NAMES
from ibwire.inner import transport_of
from ibwire.packet import Packet

Getter = Callable[[FrameInfo, Packet], list[str]]


class UsageError(Exception):
    """Bad command-line usage: main() prints it with the usage line, exit 2."""


@dataclass
class FieldsOptions:
    header: bool = False
    separator: str = "\t"
    occurrence: str = "a"          # f, l, a or a 1-based number
    aggregator: str = ","
    quote: str = ""                # "", '"' or "'"
    escape: bool = True
    bom: bool = False


def _sep(value: str) -> str:
    return {"/t": "\t", "/s": " "}.get(value, value[:1])


def parse_E(options: list[str]) -> FieldsOptions:
    """tshark's -E: header=y|n separator=/t|/s|c occurrence=f|l|a|N aggregator=,|/s|c
    quote=d|s|n escape=y|n bom=y|n."""
    opts = FieldsOptions()
    for item in options:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f'-E: invalid field option "{item}" (expected key=value)')
        if key == "header":
            opts.header = _yes(key, value)
        elif key == "separator":
            opts.separator = _sep(value) if value else "\t"
        elif key == "occurrence":
            if value not in ("f", "l", "a") and not value.isdigit():
                raise UsageError(f'-E: occurrence must be f, l, a or a number, not "{value}"')
            opts.occurrence = value
        elif key == "aggregator":
            opts.aggregator = _sep(value) if value else ","
        elif key == "quote":
            if value not in ("d", "s", "n"):
                raise UsageError(f'-E: quote must be d, s or n, not "{value}"')
            opts.quote = {"d": '"', "s": "'", "n": ""}[value]
        elif key == "escape":
            opts.escape = _yes(key, value)
        elif key == "bom":
            opts.bom = _yes(key, value)
        else:
            raise UsageError(f'-E: unknown field option "{key}"')
    return opts


def _yes(key: str, value: str) -> bool:
    if value not in ("y", "n"):
        raise UsageError(f'-E: {key} must be y or n, not "{value}"')
    return value == "y"


# -- getters -------------------------------------------------------------------
def _registry_getter(name: str) -> Getter:
    def get(info: FrameInfo, pkt: Packet) -> list[str]:
        return [format_field(name, v) for v in info.values(name)]
    return get


Raw = Callable[[FrameInfo, Packet], list[Any]]


def _pair(layer: str, a: str, b: str) -> Raw:
    def get(info: FrameInfo, pkt: Packet) -> list[Any]:
        out: list[Any] = []
        for lay in pkt.layers:
            if lay.layout.name == layer:
                out += [lay.values[a], lay.values[b]]
        return out
    return get


def data_bytes(info: FrameInfo, pkt: Packet) -> bytes | None:
    """What tshark's `data` dissector would hold: the unclaimed payload."""
    if "data" not in info.stack:
        return None
    if pkt.is_infiniband and pkt.layer("ipoib") is None:
        return pkt.payload + pkt.pad      # Wireshark's data runs up to the ICRC
    return transport_of(pkt).data


def _joined(layer: str, *names: str) -> Raw:
    """tshark's aggregate of adjacent fields (`ip.dsfield` = DSCP and ECN): their
    bits side by side, as the layout places them."""
    def get(info: FrameInfo, pkt: Packet) -> list[int]:
        out = []
        for lay in pkt.layers:
            if lay.layout.name == layer:
                fields = [lay.layout.by_name[n] for n in names]
                end = fields[-1].bit_offset + fields[-1].bits
                out.append(sum(lay.values[f.name] << (end - f.bit_offset - f.bits)
                               for f in fields))
        return out
    return get


def _data(fn: Callable[[bytes], Any]) -> Raw:
    return lambda i, p: [] if (d := data_bytes(i, p)) is None else [fn(d)]


# tshark fields that ibwire's layouts do not hold: (type, base, raw values).
ALIASES: dict[str, tuple[str, str, Raw]] = {
    "eth.addr": ("ether", "dec", _pair("eth", "dst", "src")),
    "ip.addr": ("ipv4", "dec", _pair("ip", "src", "dst")),
    "ip.host": ("ipv4", "dec", _pair("ip", "src", "dst")),
    # tshark's IPv6 dissector fills ip.version too.
    "ip.version": ("uint8", "dec", lambda i, p: [lay.values["version"] for lay in p.layers
                                               if lay.layout.name in ("ip", "ipv6")]),
    "ipv6.addr": ("ipv6", "dec", _pair("ipv6", "src", "dst")),
    "udp.port": ("uint16", "dec", _pair("udp", "srcport", "dstport")),
    "ip.dsfield": ("uint8", "hex", _joined("ip", "dscp", "ecn")),
    "ip.flags": ("uint8", "hex", _joined("ip", "rb", "df", "mf")),
    "data.data": ("bytes", "dec", _data(lambda d: d)),
    "data.len": ("uint32", "dec", _data(len)),
}
for _alias, (_ft, _base, _get) in ALIASES.items():
    REGISTRY.add(_alias, _ft, f"{_alias} (tshark field, computed by the CLI)", _base)


def _alias_getter(name: str) -> Getter:
    ftype, base, raw = ALIASES[name]
    return lambda info, pkt: [format_value(ftype, base, v) for v in raw(info, pkt)]


PROTOCOL_NAMES = {"eth", "ip", "ipv6", "udp", "vlan", "erf", "infiniband", "infiniband_link",
                  "frame", "data", "tcp", "arp"}


def _protocol_getter(name: str) -> Getter:
    from ibwire.cli.tree import protocol_text

    def get(info: FrameInfo, pkt: Packet) -> list[str]:
        if name == "frame" or name in info.stack:
            return [protocol_text(name, info, pkt)]
        return []
    return get


def _inner_getter(name: str) -> Getter:
    """Fields of what IP carries: decoded layers first (IPoIB's ARP, the fields the
    IPoIB decoder added), else what Scapy finds in this frame (`ibwire.inner`)."""
    def get(info: FrameInfo, pkt: Packet) -> list[str]:
        vals = info.values(name) or transport_of(pkt).fields.get(name, [])
        return [format_field(name, v) for v in vals]
    return get


def getter(name: str) -> Getter | None:
    """How to fetch one field; None when ibwire does not know the name."""
    if name.startswith("frame.") and name != "frame":
        return lambda info, pkt: [] if (v := info.value(name)) is None else [v]
    if name.startswith("_ws.col."):
        return lambda info, pkt: [] if (v := columns(info).get(name)) is None else [v]
    if name in ALIASES:
        return _alias_getter(name)
    if name in PROTOCOL_NAMES:
        return _protocol_getter(name)
    if name in INNER_NAMES:
        return _inner_getter(name)
    if name in REGISTRY.entries:
        return _registry_getter(name)
    return None


class FieldsWriter:
    """Formats `-T fields` lines."""

    def __init__(self, names: list[str], opts: FieldsOptions) -> None:
        self.names = names
        self.opts = opts
        self.unknown = [n for n in names if getter(n) is None]
        self._getters = [getter(n) or (lambda i, p: []) for n in names]

    def header(self) -> str:
        return self.opts.separator.join(self.names)

    def row(self, info: FrameInfo, pkt: Packet) -> str:
        o = self.opts
        cells = []
        for get in self._getters:
            vals = get(info, pkt)
            if vals and o.occurrence != "a":
                if o.occurrence == "f":
                    vals = vals[:1]
                elif o.occurrence == "l":
                    vals = vals[-1:]
                else:
                    n = int(o.occurrence)
                    vals = vals[n - 1:n] if n > 0 else []
            text = o.aggregator.join(vals)
            if o.escape and text:
                text = _escape(text)
            cells.append(f"{o.quote}{text}{o.quote}" if o.quote and text else text)
        return o.separator.join(cells)


def _escape(text: str) -> str:
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
                .replace("\r", "\\r"))
    return text
