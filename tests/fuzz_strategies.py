"""Seeds and mutators for the fuzz tests (issue 7).

Seeds: the shared captures, tests/vectors.py, `ibwire.encode` packets of every valid
opcode on every encapsulation and MADs of every supported attribute (so fuzzing runs
without the shared captures), and capture files (pcap us/ns both byte orders, pcapng
both, ERF) built from them. One engine mutates all: an op is a tuple drawn by
Hypothesis (`seed_ops`, shrinks well) or a seeded `random.Random` (`random_ops`,
cheap enough for the CI budget), both through `gen_op`. Field ops find fields from
the decoded layers and header layouts (`Field.bit_offset`) or the record layouts
below (PCAP_RECORD, PNG_BLOCK, ERF's), never magic numbers: length fields get
extremes (0, 1, max, exact fit, one past), dispatch fields values from their domain.
"""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hypothesis import strategies as st
from vectors import VECTORS  # tests/ is on sys.path (pytest; tools/fuzz_atheris.py)

import ibwire.headers as H
from ibwire import constants as C
from ibwire import decode, encode
from ibwire.capture import erf_record, read_capture
from ibwire.capture import pcapng as png
from ibwire.capture.pcap import MAGIC_NSEC, MAGIC_USEC
from ibwire.constants import NXTHDR_IBA

try:  # the MAD decoder registers itself on import (another module, maybe not ready)
    from ibwire.constants import MAD_SIZE
    from ibwire.mad.classes import CLASS_VERSIONS, supported
    from ibwire.mad.header import MAD_HEADER, RMPP, SA_HEADER
    HAVE_MAD = True
except Exception:  # noqa: BLE001 - any failure means: no MAD fuzzing
    HAVE_MAD = False

CAPTURES = Path(__file__).resolve().parents[1].parent / "shared" / "captures"
# Every entry point of `decode`: names and the pcap link types it maps.
ENCAPS: tuple[str | int, ...] = ("ib", "ib_link", "roce1", "roce2", "eth", "ip", "erf",
                                 247, 1, 101, 197, 9999) + (("mad",) if HAVE_MAD else ())
# Budget multiplier for long local runs: IBWIRE_FUZZ_SCALE=10 pytest tests/test_fuzz*.py
SCALE = max(1, int(os.environ.get("IBWIRE_FUZZ_SCALE", "1")))

# (layer, field) -> unit in bytes: fields that say how long something is.
LENGTH_FIELDS: dict[tuple[str, str], int] = {
    ("lrh", "pktlen"): 4, ("grh", "paylen"): 1, ("ip", "len"): 1, ("ip", "ihl"): 4,
    ("ipv6", "plen"): 1, ("udp", "length"): 1, ("erf", "rlen"): 1, ("erf", "wlen"): 1,
    ("bth", "padcnt"): 1, ("rmpp", "payload_length"): 1, ("sa", "attribute_offset"): 8,
    ("pcap_file", "snaplen"): 1, ("pcap_record", "incl_len"): 1, ("pcap_record", "orig_len"): 1,
    ("pcapng_block", "total_length"): 1, ("pcapng_trailer", "total_length"): 1,
    ("pcapng_epb", "cap_len"): 1, ("erf_record", "rlen"): 1, ("erf_record", "wlen"): 1,
}
_ETHERTYPES = (C.ETHERTYPE_ROCE, C.ETHERTYPE_IPV4, C.ETHERTYPE_IPV6, *C.ETHERTYPE_VLANS,
               0x0806, 0)
# (layer, field) -> values worth swapping in: what the decoder dispatches on.
DOMAINS: dict[tuple[str, str], tuple[int, ...]] = {
    ("bth", "opcode"): tuple(range(256)), ("lrh", "lnh"): (0, 1, 2, 3),
    ("grh", "nxthdr"): (NXTHDR_IBA, 17, 6, 59, 0), ("eth", "type"): _ETHERTYPES,
    ("vlan", "etype"): _ETHERTYPES, ("ip", "version"): (4, 6, 0, 15),
    ("ipv6", "version"): (4, 6, 0, 15), ("ip", "proto"): (17, 6, 0),
    ("ipv6", "nxt"): (17, 6, 0, 59), ("ip", "mf"): (0, 1), ("ip", "frag_offset"): (0, 1, 0x1FFF),
    ("udp", "dstport"): (C.ROCEV2_PORT, 0, 1), ("erf", "ext_header"): (0, 1),
    ("erf", "type"): (C.ERF_TYPE_IB, C.ERF_TYPE_IB_LINK, C.ERF_TYPE_ETH, 27, 48, 0, 127),
    ("bth", "destqp"): (0, 1, 2, 0xFFFFFF), ("link", "op"): (0, 1, 2, 15),
    ("deth", "srcqp"): (0, 1, 2), ("mad", "base_version"): (1, 0, 2, 255),
    ("mad", "mgmt_class"): (1, 0x81, 3, 4, 5, 6, 7, 0x21, 0x30, 0x4F, 0, 0xFF),
    ("mad", "class_version"): (1, 2, 0, 255), ("mad", "method"): (1, 2, 0x12, 0x81, 0x92, 0xFF),
    ("rmpp", "rmpp_type"): tuple(range(6)) + (255,), ("rmpp", "rmpp_flags"): tuple(range(8)),
}
if HAVE_MAD:
    DOMAINS[("mad", "attribute_id")] = tuple(sorted({a for _, a in supported()} | {0, 0xFFFF}))


@dataclass(frozen=True)
class FieldRef:
    """Where one integer field of a seed sits: absolute bit offset, width, byte order."""
    layer: str
    name: str
    layer_offset: int
    bit: int
    bits: int
    little: bool = False   # capture-file fields in a little-endian file

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.layer, self.name)


@dataclass
class Seed:
    """A packet (encap: how to decode it) or a capture file (encap: its kind) to mutate;
    `fields` lists length and dispatch fields first; `records` are (offset, length)."""
    name: str
    encap: str | int
    data: bytes
    fields: list[FieldRef] = field(default_factory=list)
    records: list[tuple[int, int]] = field(default_factory=list)


def _span(buf: bytearray, ref: FieldRef) -> tuple[int, int, int, str] | None:
    """(first byte, end byte, shift, byte order) of the field, or None past the end."""
    first, last = ref.bit // 8, (ref.bit + ref.bits - 1) // 8
    if last >= len(buf):
        return None
    return first, last + 1, (last + 1) * 8 - ref.bit - ref.bits, "little" if ref.little else "big"


def get_field(buf: bytearray, ref: FieldRef) -> int | None:
    if (span := _span(buf, ref)) is None:
        return None
    return (int.from_bytes(buf[span[0]:span[1]], span[3]) >> span[2]) & ref.mask


def set_field(buf: bytearray, ref: FieldRef, value: int) -> None:
    if (span := _span(buf, ref)) is not None:
        first, end, shift, order = span
        word = int.from_bytes(buf[first:end], order) & ~(ref.mask << shift)
        buf[first:end] = (word | (value & ref.mask) << shift).to_bytes(end - first, order)


def _hot_first(refs: list[FieldRef]) -> list[FieldRef]:
    hot = [r for r in refs if r.key in LENGTH_FIELDS or r.key in DOMAINS]
    return hot + [r for r in refs if r not in hot]


def field_refs(data: bytes, encap: str | int) -> list[FieldRef]:
    """The integer fields (overlays too) of every decoded layer."""
    refs = [FieldRef(lay.layout.name, f.name, lay.offset, lay.offset * 8 + f.bit_offset, f.bits)
            for lay in decode(data, encap).layers for f in lay.layout.fields
            if f.kind == "int" and f.bits and f.derive is None]
    return _hot_first(refs)


def field_value(ref: FieldRef, mode: int, rnd: int, buf: bytearray) -> int:
    """Mode 0-9: 0, 1, max, max-1, cur+1, cur-1, exact fit, fit+1, random, domain."""
    m, cur = ref.mask, get_field(buf, ref) or 0
    fit = (len(buf) - ref.layer_offset) // LENGTH_FIELDS.get(ref.key, 1)
    domain = DOMAINS.get(ref.key)
    if mode == 9 and domain:
        return domain[rnd % len(domain)]
    return (0, 1, m, m - 1, cur + 1, cur - 1, fit, fit + 1, rnd, rnd)[mode % 10] & m


# -- ops ------------------------------------------------------------------------------
Op = tuple
RandInt = Callable[[int, int], int]
OP_KINDS = ("flip", "byte", "cut", "extend", "insert", "delete", "field", "field", "field",
            "splice")
RECORD_OPS = ("field", "cutrec", "cutrec", "dup", "drop")   # extra kinds for files


def gen_op(randint: RandInt, seed: Seed) -> Op:
    """One mutation; `randint(a, b)` is Hypothesis's draw or random.Random.randint."""
    kinds = OP_KINDS + RECORD_OPS if seed.records else OP_KINDS
    kind = kinds[randint(0, len(kinds) - 1)]
    n = len(seed.data)
    if kind in ("flip", "byte"):
        return (kind, randint(0, max(n - 1, 0)), randint(0, 7 if kind == "flip" else 255))
    if kind in ("cut", "cutrec"):
        return ("cut", randint(0, n)) if kind == "cut" else \
            ("cutrec", randint(0, len(seed.records) - 1), randint(-20, 20))
    if kind in ("extend", "insert"):
        blob = bytes([randint(0, 255)]) * randint(1, 4) if randint(0, 1) else \
            randint(0, (1 << 64) - 1).to_bytes(8, "big")[:randint(1, 8)]
        return (kind, randint(0, n), blob)
    if kind in ("delete", "dup", "drop"):
        return (kind, randint(0, max(n - 1, 0)), randint(1, 16)) if kind == "delete" else \
            (kind, randint(0, len(seed.records) - 1))
    if kind == "field" and seed.fields:
        hot = sum(1 for r in seed.fields if r.key in LENGTH_FIELDS or r.key in DOMAINS)
        top = hot - 1 if hot and randint(0, 3) else len(seed.fields) - 1
        return ("field", randint(0, top), randint(0, 9), randint(0, (1 << 32) - 1))
    return ("splice", randint(0, 1 << 16), randint(0, n))


def apply_ops(seed: Seed, ops: list[Op], others: list[Seed] | None = None) -> bytes:
    buf = bytearray(seed.data)
    for op in ops:
        kind = op[0]
        if kind in ("flip", "byte") and buf:
            pos = op[1] % len(buf)
            buf[pos] = buf[pos] ^ (1 << op[2]) if kind == "flip" else op[2]
        elif kind in ("cut", "cutrec"):
            del buf[op[1] if kind == "cut" else max(seed.records[op[1]][0] + op[2], 0):]
        elif kind in ("extend", "insert"):
            at = len(buf) if kind == "extend" else op[1]
            buf[at:at] = op[2]
        elif kind == "delete":
            del buf[op[1]:op[1] + op[2]]
        elif kind in ("dup", "drop"):
            off, length = seed.records[op[1]]
            if off + length <= len(buf):
                rec = buf[off:off + length]
                buf[off:off + length] = rec + rec if kind == "dup" else b""
        elif kind == "field" and seed.fields:
            ref = seed.fields[op[1] % len(seed.fields)]
            set_field(buf, ref, field_value(ref, op[2], op[3], buf))
        elif kind == "splice" and others:
            donor = others[op[1] % len(others)].data
            buf[op[2]:] = donor[op[2]:]
    return bytes(buf)


def random_ops(rng: random.Random, seed: Seed) -> list[Op]:
    return [gen_op(rng.randint, seed) for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5)))]


def mutants(rng: random.Random, seeds: list[Seed], n: int):
    """`n` (seed, encap, ops, bytes); one in eight is decoded as another encapsulation."""
    for _ in range(n):
        seed = rng.choice(seeds)
        ops = random_ops(rng, seed)
        encap = rng.choice(ENCAPS) if rng.random() < 0.125 else seed.encap
        yield seed, encap, ops, apply_ops(seed, ops, seeds)


@st.composite
def seed_ops(draw, seeds: list[Seed]) -> tuple[Seed, list[Op]]:
    """Hypothesis: a seed and a short list of ops (shrinks towards fewer, smaller ops)."""
    seed = draw(st.sampled_from(seeds))

    def randint(a: int, b: int) -> int:
        return draw(st.integers(a, b))

    return seed, [gen_op(randint, seed) for _ in range(draw(st.integers(1, 4)))]


# -- seeds ----------------------------------------------------------------------------
def generated_packets() -> list[tuple[str, str | int, bytes]]:
    """(name, encap, bytes): every valid opcode, round-robin over the encapsulations."""
    eth = H.ETHERNET(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0a")
    grh = H.GRH(sgid=bytes(range(16)), dgid=bytes(range(16, 32)))
    v4 = H.IPV4(src="10.0.0.1", dst="10.0.0.2")
    v6 = H.IPV6(src="fd00::1", dst="fd00::2")
    carriers = [("ib", [H.LRH(dlid=2, slid=1)]), ("ib-grh", [H.LRH(dlid=2, slid=1), grh]),
                ("roce1", [eth, grh]), ("roce2", [eth, v4, H.UDP()]),
                ("vlan", [eth, H.VLAN(id=7), v4, H.UDP()]), ("roce2-v6", [eth, v6, H.UDP()])]
    out: list[tuple[str, str | int, bytes]] = []
    for i, op in enumerate(o for o in H.OPCODES if o.valid):
        cname, parts = carriers[i % len(carriers)]
        headers = [H.BTH(opcode=op.code, destqp=0x12 + i, psn=1000 + i, a=1),
                   *(H.ETH_LAYOUTS[n]() for n in op.headers)]
        if op.transport == "UD":
            headers = [H.BTH(opcode=op.code, destqp=0x12 + i), H.DETH(q_key=0x1234, srcqp=3)]
        payload = bytes(range(13)) if op.payload else b""
        data = encode(*parts, *headers, payload=payload)
        encap = "ib" if cname.startswith("ib") else "eth"
        out.append((f"{cname}/{op.label}", encap, data))
        if cname == "roce1":
            out.append((f"roce1/{op.label}", "roce1", data[H.ETHERNET.size:]))
        elif cname == "roce2":
            ip_off, bth_off = H.ETHERNET.size, H.ETHERNET.size + H.IPV4.size + H.UDP.size
            out.append((f"ip/{op.label}", "ip", data[ip_off:]))
            out.append((f"roce2/{op.label}", "roce2", data[bth_off:]))
        elif cname == "ib":
            out.append((f"erf/{op.label}", "erf", erf_record(data, 10**18)))
            out.append((f"247/{op.label}", 247, data))
    link = encode(H.LINK(op=1, fctbs=5, vl=2, fccl=9))
    out += [("link", "ib_link", link), ("erf-link", "erf", erf_record(link, 0, C.ERF_TYPE_IB_LINK)),
            ("erf-eth", "erf", erf_record(bytes(2) + out[3][2], 0, C.ERF_TYPE_ETH)),
            ("erf-hdr", "erf", encode(H.ERF(type=C.ERF_TYPE_IB), H.LRH(dlid=1, slid=2),
                                      H.BTH(opcode=4), payload=b"abc"))]
    return out


def mad_packets() -> list[tuple[str, str | int, bytes]]:
    """A MAD of every supported (class, attribute) on QP0/QP1, natively, and bare."""
    out: list[tuple[str, str | int, bytes]] = []
    for i, (cls, attr) in enumerate(supported() if HAVE_MAD else ()):
        sa = cls == 0x03
        head = MAD_HEADER.pack({"base_version": 1, "mgmt_class": cls, "method": 0x92 if sa
                                else 0x81, "class_version": CLASS_VERSIONS.get(cls, 1),
                                "attribute_id": attr, "transaction_id": i})
        if sa:  # one RMPP DATA segment (first and last) and one record
            size = MAD_SIZE - MAD_HEADER.size - RMPP.size - SA_HEADER.size
            head += RMPP.pack({"rmpp_version": 1, "rmpp_type": 1, "rmpp_flags": 7,
                               "data1": 1, "data2": size})
            head += SA_HEADER.pack({"attribute_offset": size // 8})
        mad = (head + bytes(range(7, 256, 3)) * 3)[:MAD_SIZE]
        qp = 0 if cls in (0x01, 0x81) else 1
        data = encode(H.LRH(dlid=1, slid=2, vl=15 * (1 - qp)), H.BTH(opcode=0x64, destqp=qp),
                      H.DETH(q_key=0x80010000, srcqp=qp), payload=mad)
        out += [(f"mad/{cls:#x}/{attr:#x}", "ib", data), (f"bare/{cls:#x}/{attr:#x}", "mad", mad)]
    return out


def shared_packets(per_file: int = 6) -> list[tuple[str, str | int, bytes]]:
    """A few distinct frames (by length and bytes 40-63) of each shared capture."""
    out: list[tuple[str, str | int, bytes]] = []
    for path in sorted(CAPTURES.glob("*/*.pcap")) if CAPTURES.is_dir() else ():
        kept = {(len(fr.data), fr.data[40:64]): fr for fr in reversed(read_capture(path))}
        out += [(f"{path.parent.name}/{path.name}#{fr.index}", fr.linktype, fr.data)
                for fr in sorted(kept.values(), key=lambda f: f.index)[:per_file]]
    return out


@cache
def packet_seeds(include_shared: bool = True) -> list[Seed]:
    raw = generated_packets() + mad_packets() + [(f"vector/{v.name}", v.encap, v.data)
                                                 for v in VECTORS]
    if include_shared:
        raw += shared_packets()
    return [Seed(name, encap, data, field_refs(data, encap)) for name, encap, data in raw]


# -- capture files --------------------------------------------------------------------
# Record layouts as (name, struct code) rows; a field's offset follows from the order.
PCAP_FILE = (("magic", "I"), ("version_major", "H"), ("version_minor", "H"),
             ("thiszone", "i"), ("sigfigs", "I"), ("snaplen", "I"), ("network", "I"))
PCAP_RECORD = (("ts_sec", "I"), ("ts_frac", "I"), ("incl_len", "I"), ("orig_len", "I"))
PNG_BLOCK = (("block_type", "I"), ("total_length", "I"))
PNG_EPB = (("interface_id", "I"), ("ts_high", "I"), ("ts_low", "I"), ("cap_len", "I"),
           ("orig_len", "I"))
CAPTURE_KINDS = ("pcap-le-us", "pcap-le-ns", "pcap-be-us", "pcap-be-ns", "pcapng-le",
                 "pcapng-be", "erf")
BASE_NS = 1_700_000_000_123_456_789


def where(rows: tuple[tuple[str, str], ...], name: str) -> int:
    """Byte offset of `name` in a record layout."""
    return struct.calcsize("=" + "".join(c for _, c in rows[:[n for n, _ in rows].index(name)]))


def build_capture(kind: str, frames: list[bytes], linktype: int) -> Seed:
    """A capture of `frames`, with its length fields (ERF: InfiniBand ERF records)."""
    e = ">" if "-be" in kind or kind == "erf" else "<"
    little, head, recs, refs = e == "<", b"", [], []
    if kind == "erf":
        recs = [erf_record(d, BASE_NS + i * 1000) for i, d in enumerate(frames)]
        lens = [("erf_record", n, H.ERF.by_name[n].offset, 2) for n in ("rlen", "wlen")]
    elif kind.startswith("pcap-"):
        magic = MAGIC_NSEC if kind.endswith("ns") else MAGIC_USEC
        head = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype)
        refs.append(FieldRef("pcap_file", "snaplen", 0, where(PCAP_FILE, "snaplen") * 8, 32,
                             little))
        recs = [struct.pack(e + "IIII", 1_700_000_000 + i, i, len(d), len(d)) + d
                for i, d in enumerate(frames)]
        lens = [("pcap_record", n, where(PCAP_RECORD, n), 4) for n in ("incl_len", "orig_len")]
    else:
        recs = [_png(e, png.SHB, struct.pack(e + "IHHq", png.BYTE_ORDER_MAGIC, 1, 0, -1)),
                _png(e, png.IDB, struct.pack(e + "HHI", linktype, 0, 0) + struct.pack(
                    e + "HH", png.IF_TSRESOL, 1) + b"\x09\0\0\0" + bytes(4))]
        for i, d in enumerate(frames):
            ts = BASE_NS + i * 1000
            body = struct.pack(e + "5I", 0, ts >> 32, ts & 0xFFFFFFFF, len(d), len(d))
            recs.append(_png(e, png.EPB, body + d + bytes(-len(d) % 4)))
            if i == len(frames) // 2:  # a block readers must skip (unknown type)
                recs.append(_png(e, 0x0BAD0005, b"skip-me!"))
        total = where(PNG_BLOCK, "total_length")
        lens = [("pcapng_block", "total_length", total, 4), ("pcapng_trailer", "total_length",
                -4, 4), ("pcapng_epb", "cap_len", total + 4 + where(PNG_EPB, "cap_len"), 4)]
    pos, records = len(head), []
    for r in recs:
        records.append((pos, len(r)))
        refs += [FieldRef(layer, n, pos, (pos + rel % len(r)) * 8, size * 8, little)
                 for layer, n, rel, size in lens]
        pos += len(r)
    return Seed(kind, kind, head + b"".join(recs), _hot_first(refs), records)


def with_field(seed: Seed, key: tuple[str, str], at: int, value: int) -> bytes:
    """The seed's bytes with field `key` of the record at offset `at` set to `value`."""
    ref = next(r for r in seed.fields if r.key == key and r.layer_offset == at)
    buf = bytearray(seed.data)
    set_field(buf, ref, value)
    return bytes(buf)


def _png(e: str, btype: int, body: bytes) -> bytes:
    total = struct.pack(e + "I", 12 + len(body))
    return struct.pack(e + "I", btype) + total + body + total


@cache
def capture_seeds() -> list[Seed]:
    """Every kind, over a spread of the packet seeds (Ethernet, native IB with MADs,
    ERF records in pcap), twelve packets a file."""
    by_link: dict[int, list[bytes]] = {1: [], 247: [], 197: []}
    for s in packet_seeds():
        link = {"eth": 1, 1: 1, "ib": 247, 247: 247, "erf": 197, 197: 197}.get(s.encap)
        if link is not None:
            by_link[link].append(s.data)
    out = []
    for kind in CAPTURE_KINDS:
        for link, frames in by_link.items():
            if kind == "erf" and link != 247:
                continue
            spread = frames[::max(1, len(frames) // 60)][:60]
            out += [build_capture(kind, spread[i:i + 12], link) for i in range(0, 60, 12)]
    return out
