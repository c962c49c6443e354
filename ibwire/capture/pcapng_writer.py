"""pcapng files: a writer of one little-endian section of IDBs and Enhanced Packet Blocks."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ibwire.capture._stream import PathOrFile, Writer
from ibwire.capture.frame import Frame
from ibwire.capture.pcapng import (
    BYTE_ORDER_MAGIC,
    EPB,
    IDB,
    IF_NAME,
    IF_TSRESOL,
    OPT_ENDOFOPT,
    SHB,
    Interface,
    tsresol_units,
)

if TYPE_CHECKING:
    pass

_NS = 10**9
OPT_COMMENT = 1     # opt_comment, valid in every block (pcapng §3.5)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + bytes(-len(value) % 4)


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", btype, total) + body + struct.pack("<I", total)


class PcapngWriter(Writer):
    """Writes a little-endian pcapng file: one section, IDBs on demand, EPBs.

    Interfaces are added with ``add_interface`` before the packets that use them;
    ``write`` takes a Frame (its ``interface`` must be one added here, with the same
    link type) or bytes. Timestamps are truncated to the interface's resolution.
    """

    def __init__(self, fileobj_or_path: PathOrFile, *, gzip: bool | None = None) -> None:
        super().__init__(fileobj_or_path, gzip)
        self.interfaces: list[Interface] = []
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
        comment: str | None = None,
    ) -> None:
        """Write one EPB; arguments override the Frame's (defaults: 0, len, interface 0).
        ``comment`` becomes the packet's opt_comment (Wireshark's `frame.comment`)."""
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
        if comment:
            body += _option(OPT_COMMENT, comment.encode()) + struct.pack("<HH", OPT_ENDOFOPT, 0)
        self._out.write(_block(EPB, body))
        self.count += 1
