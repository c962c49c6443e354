"""Record spans: index a capture's record boundaries once, then read any span of
records directly (the unit of work of `ibwire.scale`).

`record_index(path, every)` runs the record kernels over the whole file (no decoding)
and keeps the byte offset of every `every`-th record. A worker given a span (first
record, count, byte offset) maps the file and starts the kernel at that offset, so
it reads only its own bytes. That needs a plain (uncompressed) pcap file read by the
kernels to its end: a pcap record's meaning depends only on the file header. Other
files are still split, but a span's reader scans the records before it (kernels
only, gzip decompressed); a file the kernels hand to the resynchronising reader
(damage) is `clean=False`, and its callers read it whole, the reference way, so bad
input is reported exactly as without spans.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from ibwire.capture.frame import CaptureError
from ibwire.engines import scan
from ibwire.engines.pool import Pool

NO_OFFSET = -1


@dataclass(frozen=True)
class Index:
    """Where a file's spans start."""

    count: int                # records in the file
    offsets: list[int]        # byte offset of record k * every (NO_OFFSET: scan to it)
    clean: bool               # read by the record kernels to its end, no damage


def seekable(path: str | os.PathLike[str]) -> bool:
    """A plain pcap file (its records need only the file header to be read)."""
    with open(path, "rb") as f:
        head = f.read(4)
    return head in scan.PCAP_MAGICS


def record_index(path: str | os.PathLike[str], every: int) -> Index:
    """Records of the file and the offset of every `every`-th one."""
    every = max(1, every)
    count, offsets, clean = 0, [], True
    try:
        for b in scan.batches(path, scan.DEFAULT_CHUNK):
            n = len(b)
            if b.base < 0:          # the resynchronising reader took over: damage,
                clean = False       # the file is read whole; no need to go on
                break
            first_here = -(-b.first // every) * every   # first multiple of `every` in b
            offsets += b.roff[first_here - b.first:n:every].tolist()
            count = b.first + n
    except (CaptureError, EOFError, OSError, zlib.error):
        clean = False       # the caller reads the file the reference way, which reports it
    if not clean or not seekable(path):
        offsets = [NO_OFFSET] * len(offsets)
    return Index(count, offsets, clean)


def span_batches(path: str | os.PathLike[str], first: int, count: int,
                 offset: int = NO_OFFSET, chunk: int = scan.DEFAULT_CHUNK,
                 pool: Pool | None = None) -> Iterator[scan.Batch]:
    """Records first .. first + count - 1 of the file, as `scan.batches` gives them.
    With the record's byte `offset` (from `record_index`, plain pcap) the kernels
    start there; otherwise the records before the span are scanned and dropped."""
    path = os.fspath(path)
    stop = first + count
    if offset == NO_OFFSET:
        for b in scan.batches(path, chunk, pool):
            if b.first + len(b) > first:
                yield _slice(b, max(first - b.first, 0), min(stop - b.first, len(b)))
            if b.first + len(b) >= stop:
                return
        return
    _, head = scan._sniff(path)
    fmt = scan._Format(head, path)
    arrays = scan._Arrays(min(chunk, max(count, 1)), pool)
    try:
        yield from scan._mmap_pieces(path, fmt, arrays, (first, offset), count)
    except scan._Handoff as h:      # not for an indexed clean file; kept for safety
        for b in scan._reader_batches(path, h.index, chunk):
            if b.first >= stop:
                return
            yield _slice(b, 0, min(stop - b.first, len(b)))


def _slice(b: scan.Batch, lo: int, hi: int) -> scan.Batch:
    if lo == 0 and hi == len(b):
        return b
    return scan.Batch(b.buf, b.first + lo, b.doff[lo:hi], b.cap[lo:hi], b.wire[lo:hi],
                      b.ts[lo:hi], b.lt[lo:hi], b.ifc[lo:hi], b.roff[lo:hi], base=b.base)


def spans(index: Index, every: int) -> list[tuple[int, int, int]]:
    """(first, count, offset) of each span of at most `every` records."""
    every = max(1, every)
    return [(k * every, min(every, index.count - k * every), off)
            for k, off in enumerate(index.offsets)]

