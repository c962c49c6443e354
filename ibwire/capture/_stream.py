"""Byte-stream plumbing shared by the readers and writers.

Readers never seek: everything works on pipes and on gzip streams. A ``Source``
keeps the bytes it has read ahead (the format sniffer's peek, a resynchronisation
window) in a buffer in front of the stream, and can take bytes back (``unread``).
It also knows where the current record started and how many records were
delivered, so any short read or decompression failure becomes one ``CaptureError``
that names the record.

Memory: the stream is read in chunks of at most ``CHUNK`` bytes, so a record length
claiming 64 MiB in a small file costs what the file holds, not what it claims
(``file.read(n)`` and gzip allocate ``n`` bytes up front).
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import IO, BinaryIO, Union

from ibwire.capture.frame import CaptureError, Frame, Skipped

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]
CHUNK = 1 << 16  # largest single read from the underlying stream


def source_name(obj: object) -> str:
    """A human name for a path or file object, used in error messages."""
    if isinstance(obj, (str, os.PathLike)):
        return os.fspath(obj)
    name = getattr(obj, "name", None)
    if isinstance(name, (str, os.PathLike)) and os.fspath(name):
        return os.fspath(name)
    return "<stream>"


class Damage(Exception):  # noqa: N818 - not an error the caller sees
    """A record whose framing is broken; ``data`` is what was read since it started.

    ``whole``: the record was read to its verified end (only its content is bad),
    so it can be skipped without a scan.
    """

    def __init__(self, reason: str, data: bytes = b"", whole: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.data, self.whole = reason, data, whole


class Source:
    """A forward-only reader that tracks the byte offset and the current record."""

    def __init__(self, fileobj: IO[bytes], name: str, prefix: bytes = b"") -> None:
        self._f = fileobj
        self._buf = prefix  # read ahead, not yet consumed: self._buf[self._at:]
        self._at = 0
        self.eof = False  # the stream ended cleanly
        self.broken: str | None = None  # why the stream cannot be read further
        self.name = name
        self.pos = 0  # bytes consumed so far (offset in the decompressed stream)
        self.records = 0  # records delivered so far
        self.record_offset = 0  # where the record being read started

    def begin_record(self) -> None:
        self.record_offset = self.pos

    def read_header(self, n: int, what: str) -> bytes | None:
        """A record's n-byte header: None where the stream ends before it, `Damage`
        where it ends inside it."""
        head = self.read(n)
        if head and len(head) < n:
            raise Damage(f"truncated {what}: {len(head)} of {n} bytes", head)
        return head or None

    def frame(self, ts_ns: int, linktype: int, data: bytes, wire_len: int,
              interface: int = 0) -> Frame:
        """The Frame of the record being read (its index and offset are the source's)."""
        return Frame(self.records, ts_ns, linktype, data, wire_len, interface,
                     self.record_offset)

    def error(self, reason: str, *, offset: int | None = None) -> CaptureError:
        return CaptureError(
            reason,
            source=self.name,
            index=self.records,
            offset=self.record_offset if offset is None else offset,
        )

    def _raw(self, n: int) -> bytes:
        """Up to ``n`` bytes from the stream, in chunks; fewer where it ends or breaks."""
        parts: list[bytes] = []
        have = 0
        while have < n and not (self.eof or self.broken):
            try:
                chunk = self._f.read(min(n - have, CHUNK))
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                # gzip reports a cut-off stream only when it is read past the cut.
                self.broken = f"gzip data truncated or corrupt ({exc})"
                break
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _buffered(self, n: int) -> int:
        """Read ahead until ``n`` bytes are buffered (or the stream ends); how many are."""
        avail = len(self._buf) - self._at
        if avail < n:
            more = self._raw(n - avail)
            if more:
                self._buf = self._buf[self._at:] + more if avail else more
                self._at = 0
                avail = len(self._buf)
        return avail

    def lookahead(self, n: int) -> tuple[bytes, int, int]:
        """(buffer, start, count): up to ``n`` bytes ahead, not consumed; never raises."""
        avail = self._buffered(n)
        return self._buf, self._at, min(n, avail)

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer at end of stream) without consuming them."""
        buf, at, avail = self.lookahead(n)
        if avail < n and self.broken:
            raise self.error(self.broken)
        return buf[at:at + avail]

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at end of stream (a broken stream raises)."""
        if self._at == len(self._buf):
            out = self._raw(n)  # nothing read ahead: the common case
        else:
            avail = min(n, self._buffered(n))
            out = self._buf[self._at:self._at + avail]
            self._at += avail
            if self._at == len(self._buf):
                self._buf, self._at = b"", 0
        if len(out) < n and self.broken:
            raise self.error(self.broken)
        self.pos += len(out)
        return out

    def read_exact(self, n: int, what: str) -> bytes:
        """Exactly ``n`` bytes, or a CaptureError naming ``what`` was cut short."""
        data = self.read(n)
        if len(data) != n:
            raise self.error(f"truncated {what}: {len(data)} of {n} bytes")
        return data

    def unread(self, data: bytes) -> None:
        """Put ``data`` (the bytes just read) back in front of the stream."""
        self._buf = data + self._buf[self._at:]
        self._at = 0
        self.pos -= len(data)

    def skip(self, n: int) -> None:
        """Consume ``n`` bytes that ``lookahead`` has already buffered."""
        self._at += n
        self.pos += n
        if self._at == len(self._buf):
            self._buf, self._at = b"", 0


def open_source(
    obj: PathOrFile | Source, name: str | None = None
) -> tuple[Source, IO[bytes] | None]:
    """Wrap a path, file object or Source; also return the file we opened (to close), if any."""
    if isinstance(obj, Source):
        return obj, None
    if isinstance(obj, (str, os.PathLike)):
        f: IO[bytes] = open(obj, "rb")  # noqa: SIM115 - closed by the reader
        return Source(f, name or source_name(obj)), f
    return Source(obj, name or source_name(obj)), None


class Output:
    """A writable byte stream, gzip-compressed if asked (or if the path ends in ``.gz``).

    Closing it closes only what it opened: a caller's file object stays open.
    """

    def __init__(self, target: PathOrFile, compress: bool | None = None) -> None:
        self._owned: IO[bytes] | None = None
        if isinstance(target, (str, os.PathLike)):
            if compress is None:
                compress = os.fspath(target).endswith(".gz")
            raw: IO[bytes] = open(target, "wb")  # noqa: SIM115 - closed in close()
            self._owned = raw
        else:
            raw = target
        self._gzip: gzip.GzipFile | None = None
        if compress:
            # mtime=0 and no file name: the same frames always give the same bytes.
            self._gzip = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="")
            self.stream: BinaryIO | IO[bytes] = self._gzip
        else:
            self.stream = raw
        self.closed = False

    def write(self, data: bytes) -> None:
        self.stream.write(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._gzip is not None:
            self._gzip.close()
        if self._owned is not None:
            self._owned.close()
        elif self._gzip is None:
            # Caller's stream: push our bytes out but leave it open.
            flush = getattr(self.stream, "flush", None)
            if flush is not None:
                flush()


class Writer:
    """What every capture writer shares: an `Output`, a record count, and closing."""

    def __init__(self, target: PathOrFile, compress: bool | None = None) -> None:
        self._out = Output(target, compress)
        self.count = 0

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reader:
    """What every capture reader shares: its `Source`, whether damage is stepped over
    (`resync`), the regions it stepped over (`skipped`), and closing what it opened."""

    def __init__(self, fileobj_or_path: PathOrFile | Source, name: str | None = None, *,
                 resync: bool = True) -> None:
        self._src, self._owned = open_source(fileobj_or_path, name)
        self.resync = resync
        self.skipped: list[Skipped] = []  # damaged regions stepped over

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
