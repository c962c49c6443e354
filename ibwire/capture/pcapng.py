"""pcapng files: the format and a streaming reader (the writer is in ``pcapng_writer``).

A pcapng file is a sequence of blocks ``type | total length | body | total length``,
grouped in sections that each start with a Section Header Block (SHB) whose
byte-order magic sets the byte order of the section. Interface Description Blocks
(IDB) give each interface its link type, snaplen and timestamp resolution
(``if_tsresol``: 10**-v, or 2**-v when the high bit is set; default microseconds)
and an optional ``if_tsoffset`` in seconds. Packets come in Enhanced (EPB), Simple
(SPB, no timestamp, interface 0) and obsolete Packet (PB) blocks. Every other block
(name resolution, statistics, decryption secrets, custom ...) is skipped.

What tshark 4.0.17 does, and this reader too (checked on crafted files):
``Frame.interface`` is the interface ID within its section (tshark's
``frame.interface_id``), so with several sections it is not unique -- the link type is
per frame anyway. Timestamps are truncated to the nanosecond; ``if_tsoffset`` is added.
Unlike in pcap, an ERF record's frame time is the EPB timestamp, not the ERF header's.
An SPB has no timestamp: tshark shows none, ``Frame.ts_ns`` is 0. tshark numbers
custom blocks as records too; this reader skips them, so with custom blocks its
indexes fall behind tshark's frame numbers.
Where tshark differs: resolutions finer than about 10**-10 s overflow its 64-bit
arithmetic (e.g. 10**-12 shows wrong nanoseconds); Python integers here do not.

Damage (see ``_resync``): a block length that is impossible, disagrees with the
block's trailing copy or runs past the end of the file, is skipped by scanning for a
block of a known type whose two lengths agree, followed by another such block. A
packet block whose lengths agree but whose captured length does not fit is skipped
as a whole. Other errors (an interface never described, a version other than 1.x)
stop the reader.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ibwire.capture._resync import (
    NEED,
    Candidates,
    Damage,
    any_of,
    lookahead_regex,
    recover,
    regex_candidates,
)
from ibwire.capture._stream import PathOrFile, Reader, Source
from ibwire.capture.frame import CaptureError, Frame

SHB = 0x0A0D0D0A
IDB = 0x00000001
PB = 0x00000002  # obsolete Packet Block
SPB = 0x00000003
EPB = 0x00000006
BYTE_ORDER_MAGIC = 0x1A2B3C4D
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_BOMS = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}
BLOCK_NAMES = {
    SHB: "Section Header Block",
    IDB: "Interface Description Block",
    PB: "Packet Block",
    SPB: "Simple Packet Block",
    EPB: "Enhanced Packet Block",
}
OPT_ENDOFOPT = 0
IF_NAME = 2
IF_TSRESOL = 9
IF_TSOFFSET = 14
# Block types a resynchronisation may start at: these, NRB, ISB, systemd journal,
# DSB and the two custom blocks.
KNOWN_BLOCKS = frozenset({IDB, PB, SPB, 4, 5, EPB, 9, 0x0A, 0xBAD, 0x40000BAD})
# No sane block is larger than this (64 MiB); a larger length means corruption.
MAX_BLOCK_LEN = 1 << 26
_NS = 10**9


@dataclass(frozen=True, slots=True)
class Interface:
    """What an IDB says about one interface."""

    id: int  # interface ID within its section
    linktype: int
    snaplen: int
    units_per_second: int  # timestamp ticks per second
    tsoffset: int = 0  # seconds added to every timestamp
    name: str | None = None

    def ts_ns(self, ticks: int) -> int:
        return self.tsoffset * _NS + ticks * _NS // self.units_per_second


def tsresol_units(value: int) -> int:
    """Ticks per second for an ``if_tsresol`` byte."""
    return 2 ** (value & 0x7F) if value & 0x80 else 10**value


def _options(body: bytes, start: int, e: str) -> Iterator[tuple[int, bytes]]:
    """(code, value) pairs of an option list; stops quietly at a malformed tail."""
    pos = start
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(e + "HH", body, pos)
        if code == OPT_ENDOFOPT:
            return
        pos += 4
        if pos + length > len(body):
            return
        yield code, body[pos:pos + length]
        pos += (length + 3) & ~3


class PcapngReader(Reader):
    """Streaming pcapng reader: iterate to get Frames, one block in memory at a time."""

    format = "pcapng"

    def __init__(self, fileobj_or_path: PathOrFile | Source, name: str | None = None, *,
                 resync: bool = True) -> None:
        super().__init__(fileobj_or_path, name, resync=resync)
        self.interfaces: list[Interface] = []  # every IDB in the file, all sections
        self._section: list[Interface] = []  # the current section's interfaces
        self._e = "<"
        try:
            head = self._src.peek(4)
            if not head:
                raise CaptureError("empty file", source=self._src.name, at_record=False)
            if head != PCAPNG_MAGIC:
                raise CaptureError(
                    f"not a pcapng file: first block type {head.hex(' ')}",
                    source=self._src.name, at_record=False,
                )
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Frame]:
        src = self._src
        try:
            while True:
                src.begin_record()
                try:
                    head = src.read_header(8, "block header")
                    if head is None:
                        return
                    frame = self._block(head)
                except Damage as damage:
                    recover(src, damage, self.skipped if self.resync else None,
                            _candidates(self._e), self._check, self._e)
                    continue
                if frame is not None:
                    yield frame
                    src.records += 1
        finally:
            self.close()

    def _block(self, head: bytes) -> Frame | None:
        src = self._src
        if head[:4] == PCAPNG_MAGIC:
            # A new section: its byte-order magic decides how to read even its length.
            bom = src.read(4)
            if len(bom) < 4:
                raise Damage(
                    f"truncated Section Header Block: {8 + len(bom)} of at least 28 bytes",
                    head + bom,
                )
            if bom not in _BOMS:
                raise Damage(f"Section Header Block: bad byte-order magic {bom.hex(' ')}",
                             head + bom)
            self._e = _BOMS[bom]
            head += bom
        e = self._e
        btype, total = struct.unpack(e + "II", head[:8])
        name = BLOCK_NAMES.get(btype, f"block type 0x{btype:08x}")
        problem = _length_problem(btype, total)
        if problem:
            raise Damage(f"{name}: total length {total} {problem}", head)
        block = head + src.read(total - len(head))
        if len(block) < total:
            raise Damage(f"truncated {name}: {len(block)} of {total} bytes", block)
        trailer = struct.unpack_from(e + "I", block, total - 4)[0]
        if trailer != total:
            raise Damage(
                f"{name}: block length mismatch: {total} at the start, {trailer} at the end",
                block,
            )
        body = block[8:total - 4]
        if btype == SHB:
            self._section_header(body)
        elif btype == IDB:
            self._interface(body)
        elif btype in (EPB, PB):
            return self._packet(name, block, btype)
        elif btype == SPB:
            return self._simple_packet(name, block)
        return None  # NRB, ISB, DSB, custom and unknown blocks carry no packets

    def _section_header(self, body: bytes) -> None:
        major, minor = struct.unpack_from(self._e + "HH", body, 4)
        if major != 1:
            raise self._src.error(f"unsupported pcapng version {major}.{minor}")
        self._section = []

    def _interface(self, body: bytes) -> None:
        e = self._e
        if len(body) < 8:
            raise self._src.error("Interface Description Block: body shorter than 8 bytes")
        linktype, _reserved, snaplen = struct.unpack_from(e + "HHI", body)
        units, tsoffset, if_name = 10**6, 0, None
        for code, value in _options(body, 8, e):
            if code == IF_TSRESOL and len(value) >= 1:
                units = tsresol_units(value[0])
            elif code == IF_TSOFFSET and len(value) >= 8:
                tsoffset = struct.unpack_from(e + "q", value)[0]
            elif code == IF_NAME:
                if_name = value.decode("utf-8", "replace")
        iface = Interface(len(self._section), linktype, snaplen, units, tsoffset, if_name)
        self.interfaces.append(iface)
        self._section.append(iface)

    def _lookup(self, name: str, local_id: int) -> Interface:
        if local_id >= len(self._section):
            raise self._src.error(
                f"{name}: interface {local_id} is not defined "
                f"({len(self._section)} interfaces in this section)"
            )
        return self._section[local_id]

    def _packet(self, name: str, block: bytes, btype: int) -> Frame:
        body = block[8:-4]
        if len(body) < 20:
            raise Damage(f"{name}: body shorter than 20 bytes", block, whole=True)
        if btype == EPB:
            local_id, ts_hi, ts_lo, cap_len, orig_len = struct.unpack_from(self._e + "5I", body)
        else:  # PB: a 16-bit interface id, then a 16-bit drop count
            local_id, _drops, ts_hi, ts_lo, cap_len, orig_len = struct.unpack_from(
                self._e + "HH4I", body
            )
        if cap_len > len(body) - 20:
            raise Damage(f"{name}: captured length {cap_len} exceeds the {len(body) - 20} "
                         "bytes of the block", block, whole=True)
        iface = self._lookup(name, local_id)
        data = body[20:20 + cap_len]
        return self._frame(iface, iface.ts_ns((ts_hi << 32) | ts_lo), data, orig_len)

    def _simple_packet(self, name: str, block: bytes) -> Frame:
        body = block[8:-4]
        if len(body) < 4:
            raise Damage(f"{name}: body shorter than 4 bytes", block, whole=True)
        iface = self._lookup(name, 0)
        orig_len = struct.unpack_from(self._e + "I", body)[0]
        cap_len = min(orig_len, len(body) - 4)
        if iface.snaplen:
            cap_len = min(cap_len, iface.snaplen)
        # An SPB has no timestamp (tshark shows none); 0 stands for "unknown".
        return self._frame(iface, 0, body[4:4 + cap_len], orig_len)

    def _frame(self, iface: Interface, ts_ns: int, data: bytes, orig_len: int) -> Frame:
        return self._src.frame(ts_ns, iface.linktype, data, orig_len, iface.id)

    def _check(self, buf: bytes, pos: int, end: int, e: object,
               first: bool) -> tuple[int, object]:
        """A block at ``pos`` (see ``_resync``): a known type first, both lengths agree."""
        if pos + 12 > end:
            return NEED, e
        if buf[pos:pos + 4] == PCAPNG_MAGIC:
            e = _BOMS.get(buf[pos + 8:pos + 12])
            if e is None:
                return 0, e
        btype, total = struct.unpack_from(f"{e}II", buf, pos)
        if (first and btype not in KNOWN_BLOCKS and btype != SHB) or _length_problem(
                btype, total):
            return 0, e
        if pos + total > end:
            return NEED, e
        return (total if struct.unpack_from(f"{e}I", buf, pos + total - 4)[0] == total
                else 0), e


def _length_problem(btype: int, total: int) -> str | None:
    if total < (28 if btype == SHB else 12):
        return "is too short"
    if total % 4:
        return "is not a multiple of 4"
    if total > MAX_BLOCK_LEN:
        return f"exceeds the {MAX_BLOCK_LEN}-byte sanity limit"
    return None


def _candidates(e: str) -> Candidates:
    return regex_candidates(lookahead_regex([any_of(
        [PCAPNG_MAGIC] + [struct.pack(e + "I", t) for t in sorted(KNOWN_BLOCKS)])]))
