"""`ibwire fields`: the field registry in `tshark -G fields` layout.

    P  <label>  <name>
    F  <label>  <name>  <FT_type>  <protocol>  <BASE_*>  <mask>  <description>

(tshark's own column order: type before protocol.) The mask is the field's bits
within a value of its registered type, as tshark registers it (`0x0` = all bits).
"""

from __future__ import annotations

import argparse

from ibwire.cli.output import Output
from ibwire.registry import REGISTRY, Entry

FT = {"uint8": "FT_UINT8", "uint16": "FT_UINT16", "uint24": "FT_UINT24",
      "uint32": "FT_UINT32", "uint64": "FT_UINT64", "bool": "FT_BOOLEAN", "ipv6": "FT_IPv6",
      "ipv4": "FT_IPv4", "ether": "FT_ETHER", "bytes": "FT_BYTES", "string": "FT_STRING",
      "double": "FT_DOUBLE", "none": "FT_NONE", "int32": "FT_INT32"}
WIDTH = {"uint8": 8, "uint16": 16, "uint24": 24, "uint32": 32, "uint64": 64, "bool": 8}
BASES = {"dec": "BASE_DEC", "hex": "BASE_HEX", "dec_hex": "BASE_DEC_HEX"}


def mask(entry: Entry) -> str:
    f = entry.field
    width = WIDTH.get(entry.ftype)
    if f is None or width is None or f.derive is not None or f.bits == 0:
        return "0x0"
    first = f.bit_offset // 8
    shift = width - (f.bit_offset - first * 8) - f.bits
    if shift < 0 or f.bits >= width:
        return "0x0"
    return f"0x{((1 << f.bits) - 1) << shift:x}"


def base(entry: Entry) -> str:
    if entry.ftype == "bool":
        return str(WIDTH["bool"])
    if entry.ftype in WIDTH:
        return BASES.get(entry.base, "BASE_DEC")
    return ""


def protocol_of(entry: Entry) -> str:
    if entry.layout is not None:
        return entry.layout.protocol
    return entry.wsname.split(".")[0]


def lines(text: str | None = None) -> list[str]:
    out = []
    protos = dict(REGISTRY.protocols)
    for layout in REGISTRY.layouts.values():
        protos.setdefault(layout.protocol, layout.protocol)
    for name, label in sorted(protos.items()):
        if not text or text in name:
            out.append(f"P\t{label}\t{name}")
    for name in REGISTRY.names():
        if text and text not in name:
            continue
        e = REGISTRY.entries[name]
        desc = ""
        out.append("\t".join(["F", e.label, name, FT.get(e.ftype, "FT_NONE"), protocol_of(e),
                              base(e), mask(e), desc]))
    return out


def run(args: argparse.Namespace, out: Output) -> int:
    # (The registry imports every module that defines fields before it answers.)
    for line in lines(args.filter):
        out.line(line)
    out.flush()
    return 0
