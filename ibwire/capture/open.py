"""Open any supported capture by sniffing its first bytes; read and write whole captures.

Sniffing never seeks: the bytes looked at are handed back to the reader in front of
the stream, so pipes and gzip streams work and memory stays constant.
"""

from __future__ import annotations

import gzip as gzip_module
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING

from ibwire.capture._stream import Output, PathOrFile, Source, source_name
from ibwire.capture.erf import ErfReader, ErfWriter, looks_like_erf
from ibwire.capture.frame import CaptureError, Frame, Skipped
from ibwire.capture.pcap import PCAP_MAGICS, PcapReader, PcapWriter
from ibwire.capture.pcapng import PCAPNG_MAGIC, PcapngReader
from ibwire.capture.pcapng_writer import PcapngWriter

if TYPE_CHECKING:
    from typing import Self

GZIP_MAGIC = b"\x1f\x8b"
NOT_A_CAPTURE = "not a capture file (pcap, pcapng, ERF or gzip of these)"
_SNIFF_LEN = 16  # enough for the pcap/pcapng magics and an ERF record header

Reader = PcapReader | PcapngReader | ErfReader


class CaptureReader:
    """An iterator of Frames over a sniffed capture; also a context manager.

    ``format`` is "pcap", "pcapng" or "erf"; ``compressed`` says whether it was
    gzipped; ``reader`` is the format reader (pcap's ``linktype``, pcapng's
    ``interfaces`` ...); ``skipped`` lists the damaged regions stepped over so far.
    """

    def __init__(self, reader: Reader, compressed: bool, closers: list[IO[bytes]]) -> None:
        self.reader = reader
        self.format: str = reader.format
        self.compressed = compressed
        self._closers = closers
        self._frames = iter(reader)

    def __iter__(self) -> Iterator[Frame]:
        return self

    @property
    def skipped(self) -> list[Skipped]:
        return self.reader.skipped

    def __next__(self) -> Frame:
        try:
            return next(self._frames)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.reader.close()
        for f in self._closers:
            f.close()
        self._closers = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sniff(src: Source, compressed: bool, resync: bool) -> Reader:
    head = src.peek(_SNIFF_LEN)  # not consumed: the reader starts at offset 0
    if not head:
        what = "empty file (gzip of 0 bytes)" if compressed else "empty file"
        raise CaptureError(what, source=src.name, at_record=False)
    if head[:4] in PCAP_MAGICS:
        return PcapReader(src, resync=resync)
    if head[:4] == PCAPNG_MAGIC:
        return PcapngReader(src, resync=resync)
    if looks_like_erf(head):
        return ErfReader(src, resync=resync)
    shown = " ".join(f"{b:02x}" for b in head[:4])
    after = " after gzip decompression" if compressed else ""
    raise CaptureError(f"{NOT_A_CAPTURE}: first bytes{after} {shown}", source=src.name,
                       at_record=False)


def open_capture(path_or_fileobj: PathOrFile, *, resync: bool = True) -> CaptureReader:
    """Open a pcap, pcapng or native ERF file, or a gzip of one, and iterate its Frames.

    Format errors in the file header (empty, not a capture, truncated header) raise
    CaptureError here; errors in records raise while iterating, after every good
    record before them has been yielded. With ``resync`` (the default) a record with
    a broken length in the middle is stepped over where the next records can be found
    again, and noted in ``.skipped``; ``resync=False`` raises at it instead.
    """
    name = source_name(path_or_fileobj)
    closers: list[IO[bytes]] = []
    if isinstance(path_or_fileobj, (str, os.PathLike)):
        raw: IO[bytes] = open(path_or_fileobj, "rb")  # noqa: SIM115 - closed by CaptureReader
        closers.append(raw)
    else:
        raw = path_or_fileobj
    try:
        src = Source(raw, name)
        magic = src.peek(2)
        if magic == GZIP_MAGIC:
            stream: IO[bytes] = gzip_module.GzipFile(
                fileobj=_Prepend(src.read(2), raw), mode="rb"
            )
            closers.insert(0, stream)
            return CaptureReader(_sniff(Source(stream, name), True, resync), True, closers)
        return CaptureReader(_sniff(src, False, resync), False, closers)
    except BaseException:
        for f in closers:
            f.close()
        raise


class _Prepend:
    """A read-only stream: ``head`` then the rest of ``f`` (gzip needs its magic back)."""

    def __init__(self, head: bytes, f: IO[bytes]) -> None:
        self._head, self._f = head, f

    def read(self, n: int = -1) -> bytes:
        if not self._head:
            return self._f.read(n)
        if n < 0:
            out, self._head = self._head + self._f.read(), b""
            return out
        out, self._head = self._head[:n], self._head[n:]
        if len(out) < n:
            out += self._f.read(n - len(out))
        return out


def read_capture(path_or_fileobj: PathOrFile) -> list[Frame]:
    """Every Frame of a capture (convenience; loads the whole file).

    Strict: a list has nowhere to say what was skipped, so damage raises CaptureError;
    ``open_capture`` steps over it and lists it in ``.skipped``.
    """
    with open_capture(path_or_fileobj, resync=False) as frames:
        return list(frames)


def write_capture(
    path: PathOrFile,
    frames: Iterable[Frame],
    fmt: str = "pcap",
    linktype: int | None = None,
    nanosecond: bool = True,
    gzip: bool | None = None,
) -> int:
    """Write Frames as pcap, pcapng or native ERF; return the number written.

    ``gzip`` defaults to whether ``path`` ends in ``.gz``. pcap holds one link type:
    ``linktype`` (default: the first frame's); a frame of another link type is an error.
    pcapng gets one interface per distinct (frame.interface, frame.linktype), in order of
    first use, with nanosecond or microsecond timestamps. ERF needs LINKTYPE_ERF frames.
    """
    it = iter(frames)
    first = next(it, None)
    if first is not None:
        it = itertools.chain([first], it)
    out = Output(path, gzip)
    writer: PcapWriter | PcapngWriter | ErfWriter
    try:
        if fmt == "pcap":
            if linktype is None:
                if first is None:
                    raise ValueError("an empty pcap needs an explicit linktype")
                linktype = first.linktype
            writer = PcapWriter(out.stream, linktype, nanosecond)
            for frame in it:
                writer.write(frame)
        elif fmt == "pcapng":
            png = PcapngWriter(out.stream)
            ids: dict[tuple[int, int], int] = {}
            for frame in it:
                if linktype is not None and frame.linktype != linktype:
                    raise ValueError(
                        f"record {frame.index} has link type {frame.linktype}, not {linktype}"
                    )
                key = (frame.interface, frame.linktype)
                if key not in ids:
                    ids[key] = png.add_interface(frame.linktype, tsresol_ns=nanosecond)
                png.write(frame, interface=ids[key])
            writer = png
        elif fmt == "erf":
            writer = ErfWriter(out.stream)
            for frame in it:
                writer.write(frame)
        else:
            raise ValueError(f"unknown capture format {fmt!r} (pcap, pcapng or erf)")
        writer.close()
        return writer.count
    finally:
        out.close()
