"""`-V` / `-O proto`: the packet as a tree, one section per protocol and, inside
InfiniBand, one per header, each field as `Label: value` (with the value's name
where the field has named values, and tshark's bit pattern for fields that do
not fill whole bytes). CRCs read `Invariant CRC: 0xa8035550 [correct]`. `-x`
(hexdump) lives here too: it is the same "one packet, many lines" output.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator
from typing import Any

from ibwire.cli.carriers import COLUMN_NAMES
from ibwire.cli.frames import FrameInfo, erf_header_len, fmt_ns
from ibwire.cli.tshark_text import display_value, format_field, format_value
from ibwire.constants import LINKTYPE_ERF
from ibwire.crc import CrcStatus
from ibwire.fields import BOOL, REGISTRY, Field
from ibwire.inner import transport_of
from ibwire.packet import Layer, Packet

INDENT = "    "
CRC_WORDS = {CrcStatus.GOOD: "correct", CrcStatus.BAD: "incorrect",
             CrcStatus.UNVERIFIED: "unverified", CrcStatus.NOT_PRESENT: "not present"}
# Extras folded into other lines, or shown elsewhere.
_HIDDEN_EXTRAS = {"infiniband.invariant.crc.status", "infiniband.variant.crc.status",
                  "infiniband_link.lpcrc.status", "ibwire.opcode.name"}


def _addr(raw: Any) -> str:
    return str(ipaddress.ip_address(bytes(raw))) if isinstance(raw, (bytes, bytearray)) \
        else str(raw)


def _mac(raw: Any) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def protocol_text(name: str, info: FrameInfo, pkt: Packet) -> str:
    """The one-line heading of a protocol (also what `-e ip` prints, as in tshark)."""
    if name == "frame":
        return (f"Frame {info.number}: {info.length} bytes on wire ({info.length * 8} bits), "
                f"{info.cap_len} bytes captured ({info.cap_len * 8} bits)")
    lay = next((x for x in pkt.layers if x.layout.protocol == name), None)
    v = lay.values if lay is not None else {}
    if name == "eth" and v:
        return f"Ethernet II, Src: {_mac(v['src'])}, Dst: {_mac(v['dst'])}"
    if name == "vlan" and v:
        return f"802.1Q Virtual LAN, PRI: {v['priority']}, DEI: {v['dei']}, ID: {v['id']}"
    if name in ("ip", "ipv6") and v:
        ver = 4 if name == "ip" else 6
        return f"Internet Protocol Version {ver}, Src: {_addr(v['src'])}, Dst: {_addr(v['dst'])}"
    if name == "udp" and v:
        return f"User Datagram Protocol, Src Port: {v['srcport']}, Dst Port: {v['dstport']}"
    if name == "erf":
        return "Extensible Record Format"
    if name == "infiniband":
        return "infiniband"
    if name == "infiniband_link":
        return "InfiniBand Link"
    if name == "data":
        return f"Data ({len(_data(info, pkt))} bytes)"
    inner = INNER_HEADINGS.get(name)
    if inner is not None:
        vals = transport_of(pkt).fields
        ports = vals.get(f"{name}.srcport", []) + vals.get(f"{name}.dstport", [])
        return inner + (f", Src Port: {ports[0]}, Dst Port: {ports[1]}" if ports else "")
    if name == "ipoib":
        return REGISTRY.protocols.get(name, name)
    return COLUMN_NAMES.get(name, name)


# What IP carries (`ibwire.inner`): section headings as tshark's.
INNER_HEADINGS = {"tcp": "Transmission Control Protocol",
                  "icmp": "Internet Control Message Protocol",
                  "icmpv6": "Internet Control Message Protocol v6"}
# Extras shown with a label of their own.
_EXTRA_LABELS = {"infiniband.rwh.etype": "Ethertype"}


def _data(info: FrameInfo, pkt: Packet) -> bytes:
    from ibwire.cli.fields_out import data_bytes  # (fields_out imports this module)
    data = data_bytes(info, pkt)
    return data if data is not None else pkt.payload


def _inner_lines(pkt: Packet, proto: str) -> Iterator[str]:
    """Field lines of a protocol IP carries, from Scapy's decode (`ibwire.inner`)."""
    for name, vals in transport_of(pkt).fields.items():
        # (tcp.port repeats both ports; tshark hides it in the tree too)
        if name.startswith(proto + ".") and name in REGISTRY.entries \
                and not name.endswith(".port"):
            label = REGISTRY.entries[name].label
            for v in vals:
                yield f"{label}: {display_value(name, v)}"


def bit_pattern(f: Field, value: int) -> str:
    """tshark's `..00 .... = ` prefix for a field that does not fill whole bytes."""
    first = f.bit_offset // 8
    last = (f.bit_offset + f.bits - 1) // 8
    nbits = (last - first + 1) * 8
    start = f.bit_offset - first * 8
    chars = ["."] * nbits
    for i in range(f.bits):
        chars[start + i] = "1" if (value >> (f.bits - 1 - i)) & 1 else "0"
    return " ".join("".join(chars[i:i + 4]) for i in range(0, nbits, 4)) + " = "


def field_line(lay: Layer, f: Field, value: Any) -> str:
    if f.derive is not None:
        text = format_value(f.ftype, f.base, value)
        return f"[{f.label}: {text}]"
    if f.name == "opcode" and lay.layout.name == "bth":
        from ibwire.headers.opcodes import OPCODES
        return f"{f.label}: {OPCODES[value].label} ({value})"
    if f.ftype == BOOL:
        text = "True" if value else "False"
    elif f.wsname:
        text = display_value(f.wsname, value)
    else:
        text = format_value(f.ftype, f.base, value)
        name = f.describe(value)
        text = f"{name} ({text})" if name else text
    prefix = ""
    if f.kind == "int" and (f.bits % 8 or f.bit_offset % 8) and f.bits <= 32:
        prefix = bit_pattern(f, int(value))
    label = f.label if not f.reserved or f.bits % 8 == 0 else f"{f.label} ({f.bits} bits)"
    return f"{prefix}{label}: {text}"


def layer_lines(lay: Layer) -> Iterator[str]:
    for f, value in lay.fields():
        if value is None:
            continue
        yield field_line(lay, f, value)


def _extra_lines(pkt: Packet, prefix: str) -> Iterator[str]:
    for name, vals in pkt.extras.items():
        if name in _HIDDEN_EXTRAS or not name.startswith(prefix):
            continue
        for v in vals:
            if name == "infiniband.invariant.crc":
                yield f"Invariant CRC: {format_field(name, v)} [{CRC_WORDS[pkt.icrc_status]}]"
            elif name == "infiniband.variant.crc":
                yield f"Variant CRC: {format_field(name, v)} [{CRC_WORDS[pkt.vcrc_status]}]"
            elif isinstance(v, (bytes, bytearray)):
                label = {"infiniband.payload": "Payload", "infiniband.pad": "Pad",
                         "infiniband.raw": "Undecoded"}.get(name, name)
                yield f"{label}: {len(v)} byte{'s' if len(v) != 1 else ''}"
            elif name in _EXTRA_LABELS:
                yield f"{_EXTRA_LABELS[name]}: {display_value(name, v)}"
            else:
                yield f"{name}: {format_field(name, v)}"


def _frame_lines(info: FrameInfo) -> Iterator[str]:
    sec, frac = divmod(info.ts_ns, 1_000_000_000)
    when = time.strftime("%b %d, %Y %H:%M:%S", time.gmtime(sec))
    yield f"Encapsulation type: link type {info.linktype}"
    yield f"Arrival Time: {when}.{frac:09d} UTC"
    yield f"Epoch Time: {fmt_ns(info.ts_ns)} seconds"
    yield f"[Time delta from previous captured frame: {fmt_ns(info.delta_ns)} seconds]"
    yield f"[Time delta from previous displayed frame: {fmt_ns(info.delta_disp_ns)} seconds]"
    yield f"[Time since reference or first frame: {fmt_ns(info.rel_ns)} seconds]"
    yield f"Frame Number: {info.number}"
    yield f"Frame Length: {info.length} bytes ({info.length * 8} bits)"
    yield f"Capture Length: {info.cap_len} bytes ({info.cap_len * 8} bits)"
    yield f"[Protocols in frame: {':'.join(info.stack)}]"


def tree_lines(info: FrameInfo, pkt: Packet, expand: set[str] | None = None) -> list[str]:
    """The -V tree (expand=None: everything) or -O tree (expand: these protocols)."""
    def open_(name: str) -> bool:
        return expand is None or name in expand

    out = [protocol_text("frame", info, pkt)]
    if open_("frame"):
        out += [INDENT + x for x in _frame_lines(info)]
    groups: list[tuple[str, list[Layer]]] = []
    for lay in pkt.layers:
        proto = lay.layout.protocol
        if groups and groups[-1][0] == proto:
            groups[-1][1].append(lay)
        else:
            groups.append((proto, [lay]))
    for proto, layers in groups:
        heading = "InfiniBand" if proto == "infiniband" else protocol_text(proto, info, pkt)
        out.append(heading)
        if not open_(proto):
            continue
        nested = proto == "infiniband"
        for lay in layers:
            if nested:
                out.append(INDENT + lay.layout.label)
            pad = INDENT * (2 if nested else 1)
            out += [pad + line for line in layer_lines(lay)]
        if proto in ("infiniband", "infiniband_link"):
            out += [INDENT + x for x in _extra_lines(pkt, proto + ".")]
            if pkt.lpcrc_status != CrcStatus.NOT_PRESENT and proto == "infiniband_link":
                out.append(f"{INDENT}[Link Packet CRC: {CRC_WORDS[pkt.lpcrc_status]}]")
    for proto in transport_of(pkt).stack:
        if proto in INNER_HEADINGS:
            out.append(protocol_text(proto, info, pkt))
            if open_(proto):
                out += [INDENT + x for x in _inner_lines(pkt, proto)]
    if "data" in info.stack and _data(info, pkt):
        out.append(protocol_text("data", info, pkt))
    for p in pkt.problems:
        out.append(f"[Malformed: {p}]")
    return out


HEX_ROW = 16  # bytes per line of tshark -x


def hexdump(info: FrameInfo, pkt: Packet) -> list[str]:
    """tshark -x: offset, 16 hex bytes, ASCII; the ERF pseudo-header is not shown."""
    data = pkt.data
    if info.linktype == LINKTYPE_ERF:
        data = data[erf_header_len(pkt):]
    lines = []
    for off in range(0, len(data), HEX_ROW):
        chunk = data[off:off + HEX_ROW]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:04x}  {hexpart:<47}   {text}")
    return lines
