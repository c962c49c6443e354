"""Helpers for the MAD tests: shared captures, tshark runs (PDML), crafted
ERF-in-pcap files, and the field-by-field comparison with tshark."""

from __future__ import annotations

import functools
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

import ibwire
import ibwire.mad  # noqa: F401 - registers the MAD hooks
from ibwire.cli.tshark_text import format_field
from ibwire.mad.dispatch import mad_layers
from ibwire.packet import Packet

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MAD_DIR = SHARED / "captures" / "mad"
CM_CAPTURES = [SHARED / "captures" / "public" / "roce-v2-rxe-cm-write-read.pcap",
               SHARED / "captures" / "rxe" / "a6_write_rdmacm_clean.wire.pcap"]
TSHARK = shutil.which("tshark")


def need_shared() -> None:
    if not MAD_DIR.is_dir():
        pytest.skip(f"shared captures not found at {SHARED} (the MAD capture set lives "
                    "outside the repository)")


def need_tshark() -> None:
    if TSHARK is None:
        pytest.skip("tshark is not installed")


def mad_pcaps() -> list[Path]:
    return sorted(MAD_DIR.glob("*.pcap")) if MAD_DIR.is_dir() else []


# -- reading and decoding -------------------------------------------------------
@functools.cache
def frames(path: Path) -> tuple:
    from ibwire.capture import read_capture
    return tuple(read_capture(path))


def decoded(path: Path, only_mads: bool = False) -> list[tuple[int, bytes, Packet]]:
    """(frame number from 1, record bytes, packet) for every record of a capture."""
    out = []
    for i, fr in enumerate(frames(path), 1):
        pkt = ibwire.decode(fr.data, fr.linktype)
        if only_mads and pkt.layer("mad") is None:
            continue
        out.append((i, fr.data, pkt))
    return out


# -- crafted captures -------------------------------------------------------------
def erf_pcap(path: Path, packets: Iterable[bytes]) -> Path:
    """Native packets (LRH ... VCRC) as ERF type 21 records in a pcap (linktype 197)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 197))
    for i, pkt in enumerate(packets):
        rec = struct.pack(">QBBHHH", (1_700_000_000 + i) << 32, 21, 4, 16 + len(pkt), 0,
                          len(pkt)) + pkt
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(rec), len(rec)) + rec
    path.write_bytes(bytes(out))
    return path


# -- tshark ----------------------------------------------------------------------
@dataclass
class TField:
    name: str
    pos: int
    size: int
    show: str
    value: str
    container: bool


@functools.cache
def tshark_types() -> dict[str, tuple[str, str, str]]:
    """name -> (type, base, mask) from `tshark -G fields`."""
    out = subprocess.run([TSHARK, "-G", "fields"], capture_output=True, text=True).stdout
    types = {}
    for line in out.splitlines():
        cols = line.split("\t")
        if cols[0] == "F" and cols[2].startswith(("infiniband", "ipoib")):
            types[cols[2]] = (cols[3], cols[5] if len(cols) > 5 else "",
                              cols[6] if len(cols) > 6 else "")
    return types


@functools.cache
def tshark_labels() -> dict[str, str]:
    out = subprocess.run([TSHARK, "-G", "fields"], capture_output=True, text=True).stdout
    return {c[2]: c[1] for c in (line.split("\t") for line in out.splitlines())
            if c[0] == "F" and len(c) > 2}


@functools.cache
def tshark_fields(path: Path) -> dict[int, tuple[TField, ...]]:
    """Frame number -> every `infiniband.*` field tshark shows in that MAD frame,
    with position and text."""
    xml = subprocess.run([TSHARK, "-r", str(path), "-Y", "infiniband.mad", "-T", "pdml"],
                         capture_output=True).stdout
    result = {}
    for packet in ET.fromstring(xml).iter("packet"):
        num = int(next(f.get("show") for f in packet.iter("field") if f.get("name") == "num"))
        result[num] = tuple(_pdml_fields(packet))
    return result


def _pdml_fields(elem: ET.Element) -> list[TField]:
    out = []
    for child in elem:
        if child.tag == "field":
            name = child.get("name") or ""
            if name.startswith("infiniband"):
                out.append(TField(
                    name, int(child.get("pos") or 0), int(child.get("size") or 0),
                    child.get("show") or "", child.get("value") or "",
                    any(c.tag == "field" for c in child)))
        out += _pdml_fields(child)
    return out


def tshark_text(f: TField) -> str:
    """What `tshark -T fields` prints for the field (PDML: value for bytes)."""
    ftype = tshark_types().get(f.name, ("", "", ""))[0]
    return f.value if ftype == "FT_BYTES" else f.show


# -- our side -----------------------------------------------------------------------
def our_fields(pkt: Packet, base: int) -> tuple[dict, dict]:
    """({(name, pos): [text, ...]} for positioned fields of the MAD layers,
    {name: [text, ...]} for derived fields and container extras)."""
    positioned: dict[tuple[str, int], list[str]] = {}
    floating: dict[str, list[str]] = {}
    for lay in mad_layers(pkt):
        for f, v in lay.fields():
            if not f.wsname or v is None:
                continue
            text = format_field(f.wsname, v)
            if f.derive is not None:
                floating.setdefault(f.wsname, []).append(text)
                continue
            pos = lay.offset + f.bit_offset // 8 - base
            positioned.setdefault((f.wsname, pos), []).append(text)
    for name, vals in pkt.extras.items():
        if name.startswith("infiniband.") and name not in (
                "infiniband.invariant.crc", "infiniband.variant.crc"):
            for v in vals:
                floating.setdefault(name, []).append(format_field(name, v))
    return positioned, floating


def compare(pkt: Packet, tfields: Iterable[TField], base: int,
            mad_start: int) -> list[tuple[str, int, str, str]]:
    """Every MAD field tshark shows, compared with ours: (name, pos, tshark, ours)
    for each disagreement ("<missing>" where we have no such field)."""
    positioned, floating = our_fields(pkt, base)
    out = []
    for f in tfields:
        if f.pos < mad_start or f.name in ("infiniband.invariant.crc",
                                          "infiniband.variant.crc"):
            continue
        want = tshark_text(f)
        ftype = tshark_types().get(f.name, ("", "", ""))[0]
        if ftype == "FT_NONE":
            continue          # a label-only subtree item, no value
        if f.container:
            # A subtree item: a byte range, not a decoded field; check the range.
            raw = pkt.data[base + f.pos:base + f.pos + f.size].hex()
            if f.value and raw != f.value:
                out.append((f.name, f.pos, f.value, raw))
            continue
        # Masked fields: tshark gives the first byte it read, we the first byte
        # holding the field's bits; both lie within the bytes tshark read.
        mine = None
        for pos in range(f.pos, f.pos + max(f.size, 1)):
            mine = positioned.get((f.name, pos))
            if mine is not None:
                break
        if mine is None:
            mine = floating.get(f.name)
        if mine is None:
            out.append((f.name, f.pos, want, "<missing>"))
            continue
        if want not in mine:
            out.append((f.name, f.pos, want, mine[0] if len(mine) == 1 else "|".join(mine)))
    return out


def base_offset(pkt: Packet) -> int:
    """tshark positions count from the LRH for ERF records (the ERF header is a
    pseudo-header), from the Ethernet header otherwise."""
    return pkt.ib_offset if pkt.encap == "erf" else 0


def mad_start(pkt: Packet) -> int:
    hdr = pkt.layer("mad")
    return hdr.offset - base_offset(pkt) if hdr is not None else 1 << 30




# Where tshark and ibwire disagree, by (tshark field, attribute or message): the
# specification is on our side in each case; every entry has a pinned test below.
KNOWN = {
    ("infiniband.smpdirected.d", None): "D bit read from one byte with a 16-bit mask",
    ("infiniband.classportinfo.reserved", "ClassPortInfo"): "TrapHL shown as reserved",
    ("infiniband.reserved", "PathRecord"): "PathRecord ServiceID shown as reserved",
    ("infiniband.reserved", "PortInfoRecord"): "PortInfoRecord Options shown as reserved",
    ("infiniband.reserved", "PortCounters"): "CounterSelect2 and QP1Dropped shown as reserved",
    ("infiniband.reserved", "PortCountersExtended"): "CounterSelect2 shown as reserved",
    ("infiniband.reserved", "MultiPathRecord"): "MultiPathRecord ServiceID shown as reserved",
    ("infiniband.cm.req.prim_flowlabel", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.cm.req.prim_reserved0", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.cm.req.prim_pktrate", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.cm.req.alt_flowlabel", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.cm.req.alt_reserved0", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.cm.req.alt_pktrate", None): "flow label word read with 3/1-byte lengths",
    ("infiniband.rmpp.rresptime", None): "RMPP byte 26 split 4/4 instead of 5/3",
    ("infiniband.rmpp.rmppflags", None): "RMPP byte 26 split 4/4 instead of 5/3",
}


def known(name: str, attribute: str) -> bool:
    return (name, None) in KNOWN or (name, attribute) in KNOWN
