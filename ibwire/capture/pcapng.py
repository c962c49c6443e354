"""pcapng files: streaming reader and a writer of Enhanced Packet Blocks.

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
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ibwire.capture._stream import Output, PathOrFile, Source, open_source
from ibwire.capture.frame import CaptureError, Frame

if TYPE_CHECKING:
    from typing import Self

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


class PcapngReader:
    """Streaming pcapng reader: iterate to get Frames, one block in memory at a time."""

    format = "pcapng"

    def __init__(self, fileobj_or_path: PathOrFile | Source, name: str | None = None) -> None:
        self._src, self._owned = open_source(fileobj_or_path, name)
        self.interfaces: list[Interface] = []  # every IDB in the file, all sections
        self._section: list[Interface] = []  # the current section's interfaces
        self._e = "<"
        try:
            head = self._src.read(4)
            if not head:
                raise CaptureError("empty file", source=self._src.name, at_record=False)
            if head != PCAPNG_MAGIC:
                raise CaptureError(
                    f"not a pcapng file: first block type {head.hex(' ')}",
                    source=self._src.name, at_record=False,
                )
            self._pending = head
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Frame]:
        src = self._src
        try:
            while True:
                src.begin_record()
                head = self._pending + src.read(8 - len(self._pending))
                self._pending = b""
                if not head:
                    return
                if len(head) < 8:
                    raise src.error(f"truncated block header: {len(head)} of 8 bytes")
                frame = self._block(head)
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
                raise src.error(
                    f"truncated Section Header Block: {8 + len(bom)} of at least 28 bytes"
                )
            if bom not in _BOMS:
                raise src.error(f"Section Header Block: bad byte-order magic {bom.hex(' ')}")
            self._e = _BOMS[bom]
            head += bom
        e = self._e
        btype, total = struct.unpack(e + "II", head[:8])
        name = BLOCK_NAMES.get(btype, f"block type 0x{btype:08x}")
        if total < 12 or (btype == SHB and total < 28):
            raise src.error(f"{name}: total length {total} is too short")
        if total % 4:
            raise src.error(f"{name}: total length {total} is not a multiple of 4")
        if total > MAX_BLOCK_LEN:
            raise src.error(
                f"{name}: total length {total} exceeds the {MAX_BLOCK_LEN}-byte sanity limit"
            )
        block = head + src.read(total - len(head))
        if len(block) < total:
            raise src.error(f"truncated {name}: {len(block)} of {total} bytes")
        trailer = struct.unpack_from(e + "I", block, total - 4)[0]
        if trailer != total:
            raise src.error(
                f"{name}: block length mismatch: {total} at the start, {trailer} at the end"
            )
        body = block[8:total - 4]
        if btype == SHB:
            self._section_header(body)
        elif btype == IDB:
            self._interface(body)
        elif btype in (EPB, PB):
            return self._packet(name, body, btype)
        elif btype == SPB:
            return self._simple_packet(name, body)
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

    def _packet(self, name: str, body: bytes, btype: int) -> Frame:
        if len(body) < 20:
            raise self._src.error(f"{name}: body shorter than 20 bytes")
        if btype == EPB:
            local_id, ts_hi, ts_lo, cap_len, orig_len = struct.unpack_from(self._e + "5I", body)
        else:  # PB: a 16-bit interface id, then a 16-bit drop count
            local_id, _drops, ts_hi, ts_lo, cap_len, orig_len = struct.unpack_from(
                self._e + "HH4I", body
            )
        if cap_len > len(body) - 20:
            raise self._src.error(
                f"{name}: captured length {cap_len} exceeds the {len(body) - 20} bytes "
                "of the block"
            )
        iface = self._lookup(name, local_id)
        data = body[20:20 + cap_len]
        return self._frame(iface, iface.ts_ns((ts_hi << 32) | ts_lo), data, orig_len)

    def _simple_packet(self, name: str, body: bytes) -> Frame:
        if len(body) < 4:
            raise self._src.error(f"{name}: body shorter than 4 bytes")
        iface = self._lookup(name, 0)
        orig_len = struct.unpack_from(self._e + "I", body)[0]
        cap_len = min(orig_len, len(body) - 4)
        if iface.snaplen:
            cap_len = min(cap_len, iface.snaplen)
        # An SPB has no timestamp (tshark shows none); 0 stands for "unknown".
        return self._frame(iface, 0, body[4:4 + cap_len], orig_len)

    def _frame(self, iface: Interface, ts_ns: int, data: bytes, orig_len: int) -> Frame:
        return Frame(
            index=self._src.records,
            ts_ns=ts_ns,
            linktype=iface.linktype,
            data=data,
            wire_len=orig_len,
            interface=iface.id,
            offset=self._src.record_offset,
        )

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + bytes(-len(value) % 4)


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", btype, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Writes a little-endian pcapng file: one section, IDBs on demand, EPBs.

    Interfaces are added with ``add_interface`` before the packets that use them;
    ``write`` takes a Frame (its ``interface`` must be one added here, with the same
    link type) or bytes. Timestamps are truncated to the interface's resolution.
    """

    def __init__(self, fileobj_or_path: PathOrFile, *, gzip: bool | None = None) -> None:
        self._out = Output(fileobj_or_path, gzip)
        self.interfaces: list[Interface] = []
        self.count = 0
        # SHB: byte-order magic, version 1.0, section length unknown (-1), no options.
        self._out.write(_block(SHB, struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)))

    def add_interface(
        self, linktype: int, tsresol_ns: bool = True, name: str | None = None, *,
        snaplen: int = 0, tsresol: int | None = None,
    ) -> int:
        """Add an interface and return its id.

        ``tsresol_ns`` selects nanosecond timestamps (else the default microseconds);
        ``tsresol`` gives a raw ``if_tsresol`` byte instead (e.g. 0x80 | 30 for 2**-30 s).
        """
        if not 0 <= linktype <= 0xFFFF:
            raise ValueError(f"link type {linktype} does not fit a pcapng IDB")
        options = b""
        if name is not None:
            options += _option(IF_NAME, name.encode())
        if tsresol is None and tsresol_ns:
            tsresol = 9
        if tsresol is not None:
            options += _option(IF_TSRESOL, bytes([tsresol]))
        if options:
            options += struct.pack("<HH", OPT_ENDOFOPT, 0)
        self._out.write(_block(IDB, struct.pack("<HHI", linktype, 0, snaplen) + options))
        units = tsresol_units(tsresol) if tsresol is not None else 10**6
        iface = Interface(len(self.interfaces), linktype, snaplen, units, 0, name)
        self.interfaces.append(iface)
        return iface.id

    def write(
        self, frame_or_bytes: Frame | bytes, ts_ns: int | None = None,
        wire_len: int | None = None, interface: int | None = None,
    ) -> None:
        """Write one EPB; arguments override the Frame's (defaults: 0, len, interface 0)."""
        if isinstance(frame_or_bytes, Frame):
            frame = frame_or_bytes
            interface = frame.interface if interface is None else interface
            data = frame.data
            ts_ns = frame.ts_ns if ts_ns is None else ts_ns
            wire_len = frame.wire_len if wire_len is None else wire_len
            linktype: int | None = frame.linktype
        else:
            data = bytes(frame_or_bytes)
            interface = 0 if interface is None else interface
            ts_ns = 0 if ts_ns is None else ts_ns
            wire_len = len(data) if wire_len is None else wire_len
            linktype = None
        if not 0 <= interface < len(self.interfaces):
            raise ValueError(
                f"interface {interface} was not added ({len(self.interfaces)} interfaces)"
            )
        iface = self.interfaces[interface]
        if linktype is not None and linktype != iface.linktype:
            raise ValueError(
                f"record has link type {linktype}, interface {interface} {iface.linktype}"
            )
        if ts_ns < 0:
            raise ValueError(f"timestamp {ts_ns} ns is before the epoch")
        # The last tick that reads back as ts_ns or earlier: truncation, and exact
        # re-writing of what the reader produced even for 2**-k resolutions.
        ticks = ((ts_ns + 1) * iface.units_per_second - 1) // _NS
        if ticks >= 1 << 64:
            raise ValueError(f"timestamp {ts_ns} ns does not fit a pcapng timestamp")
        if not 0 <= wire_len < 1 << 32:
            raise ValueError(f"wire length {wire_len} does not fit an EPB")
        body = struct.pack(
            "<IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), wire_len
        ) + data + bytes(-len(data) % 4)
        self._out.write(_block(EPB, body))
        self.count += 1

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
