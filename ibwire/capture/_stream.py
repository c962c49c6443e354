"""Byte-stream plumbing shared by the readers and writers.

Readers never seek: everything works on pipes and on gzip streams, and the format
sniffer can push the bytes it looked at back in front of the stream (``prefix``).
A ``Source`` also knows where the current record started and how many records were
delivered, so any short read or decompression failure becomes one ``CaptureError``
that names the record.
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import IO, BinaryIO, Union

from ibwire.capture.frame import CaptureError

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]


def source_name(obj: object) -> str:
    """A human name for a path or file object, used in error messages."""
    if isinstance(obj, (str, os.PathLike)):
        return os.fspath(obj)
    name = getattr(obj, "name", None)
    if isinstance(name, (str, os.PathLike)) and os.fspath(name):
        return os.fspath(name)
    return "<stream>"


class Source:
    """A forward-only reader that tracks the byte offset and the current record."""

    def __init__(self, fileobj: IO[bytes], name: str, prefix: bytes = b"") -> None:
        self._f = fileobj
        self._prefix = prefix
        self.name = name
        self.pos = 0  # bytes consumed so far (offset in the decompressed stream)
        self.records = 0  # records delivered so far
        self.record_offset = 0  # where the record being read started

    def begin_record(self) -> None:
        self.record_offset = self.pos

    def error(self, reason: str, *, offset: int | None = None) -> CaptureError:
        return CaptureError(
            reason,
            source=self.name,
            index=self.records,
            offset=self.record_offset if offset is None else offset,
        )

    def _raw(self, n: int) -> bytes:
        """Up to ``n`` bytes from the underlying stream (fewer only at its end)."""
        out = b""
        while len(out) < n:
            try:
                chunk = self._f.read(n - len(out))
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                # gzip reports a cut-off stream only when it is read past the cut.
                raise self.error(f"gzip data truncated or corrupt ({exc})") from None
            if not chunk:
                break
            out += chunk
        return out

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer at end of stream) without consuming them."""
        if len(self._prefix) < n:
            self._prefix += self._raw(n - len(self._prefix))
        return self._prefix[:n]

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at end of stream."""
        out, self._prefix = self._prefix[:n], self._prefix[n:]
        if len(out) < n:
            out += self._raw(n - len(out))
        self.pos += len(out)
        return out

    def read_exact(self, n: int, what: str) -> bytes:
        """Exactly ``n`` bytes, or a CaptureError naming ``what`` was cut short."""
        data = self.read(n)
        if len(data) != n:
            raise self.error(f"truncated {what}: {len(data)} of {n} bytes")
        return data


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
