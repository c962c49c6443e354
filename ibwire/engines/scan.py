"""Chunked record scanning: a capture file as batches of record arrays over a byte window.

Plain files are memory-mapped once; each batch is a view of the mapping (pages a
finished batch touched are given back with `madvise`, so the resident size stays
bounded whatever the file size). gzip files are decompressed in fixed-size pieces
into a window that keeps only the incomplete tail of the previous piece. The
record kernels (`scan_kernels`) find boundaries; a damaged record, a pcapng
interface the kernels cannot time exactly, or anything else unusual hands the rest
of the file to the streaming readers of `ibwire.capture` (same frames, same
resynchronisation), from the first record not yet delivered.
"""

from __future__ import annotations

import gzip
import io
import mmap
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ibwire.capture import open_capture
from ibwire.capture.erf import looks_like_erf
from ibwire.capture.frame import CaptureError
from ibwire.capture.open import GZIP_MAGIC, NOT_A_CAPTURE
from ibwire.capture.pcap import (
    DEFAULT_SNAPLEN,
    FILE_HEADER_LEN,
    MAX_RECORD_LEN,
    PCAP_MAGICS,
    PcapReader,
)
from ibwire.capture.pcapng import _BOMS, IDB, PCAPNG_MAGIC, SHB, PcapngReader
from ibwire.engines import scan_kernels as K
from ibwire.engines.pool import Pool

DEFAULT_CHUNK = 1 << 16        # records per batch (a batch of headers stays in cache)
GZIP_PIECE = 1 << 24           # decompressed bytes read per step
WINDOW = 1 << 26               # mapped bytes scanned per batch at most
_SNIFF = 16


@dataclass
class Batch:
    """Records of one chunk: frame i is buf[doff[i]:doff[i] + cap[i]]."""

    buf: np.ndarray      # uint8 window (a view of the mapping or a decompressed piece)
    first: int           # index of the first record in the file (0-based)
    doff: np.ndarray     # int64, offset of the frame data in buf
    cap: np.ndarray      # int32, captured length
    wire: np.ndarray     # int64, original length
    ts: np.ndarray       # int64, nanoseconds since the epoch
    lt: np.ndarray       # int32, link type
    ifc: np.ndarray      # int32, interface (pcapng: id within its section)
    roff: np.ndarray     # int64, offset of the record header in the (decompressed) file
    base: int = 0        # file offset of buf[0]; -1 when buf is not a file window

    def __len__(self) -> int:
        return int(self.doff.shape[0])


class _Arrays:
    """The record arrays the kernels fill: recycled from the pool for every batch (a
    Batch holds views of them, so arrays a caller keeps are never overwritten)."""

    DTYPES = (np.int64, np.int32, np.int64, np.int64, np.int32, np.int32, np.int64)

    def __init__(self, n: int, pool: Pool | None = None) -> None:
        self.pool = pool or Pool()
        self.n = n
        self.fresh()

    def fresh(self) -> None:
        self.arrays = tuple(self.pool.take(f"scan{k}", (self.n,), t)
                            for k, t in enumerate(self.DTYPES))

    def all(self) -> tuple[np.ndarray, ...]:
        return self.arrays

    def batch(self, buf: np.ndarray, first: int, n: int, base: int = 0) -> Batch:
        out = Batch(buf, first, *(a[:n] for a in self.arrays), base=base)
        self.fresh()
        return out


class _Handoff(Exception):
    """The kernels stop here; the streaming reader continues from record `index`."""

    def __init__(self, index: int) -> None:
        self.index = index


class _Format:
    """Per-format state and the call of its kernel."""

    def __init__(self, head: bytes, path: str) -> None:
        self.path = path
        if head[:4] in PCAP_MAGICS:
            self.kind = "pcap"
            order, self.nsec = PCAP_MAGICS[head[:4]]
            self.big = order == ">"
            hdr = PcapReader(io.BytesIO(head[:FILE_HEADER_LEN]), path)
            self.linktype = hdr.linktype
            self.max_len = min(max(hdr.snaplen, DEFAULT_SNAPLEN), MAX_RECORD_LEN)
            self.start = FILE_HEADER_LEN
        elif head[:4] == PCAPNG_MAGIC:
            self.kind = "pcapng"
            self.start = 0
            self.big = False
            self.png = PcapngReader(io.BytesIO(PCAPNG_MAGIC))  # parses SHB/IDB bodies
            self._ifaces()
        elif looks_like_erf(head):
            self.kind = "erf"
            self.start = 0
            self.prev = -1
        else:
            raise CaptureError(f"{NOT_A_CAPTURE}: first bytes "
                               f"{' '.join(f'{b:02x}' for b in head[:4])}",
                               source=path, at_record=False)

    def _ifaces(self) -> None:
        sec = self.png._section
        self.if_lt = np.array([f.linktype for f in sec], np.int64)
        # Exact int64 arithmetic needs ticks % units * 1e9 and the offset in ns to fit;
        # an interface that breaks either is timed by the streaming reader instead.
        self.exact = all(f.units_per_second < (1 << 33) and abs(f.tsoffset) < (1 << 33)
                         for f in sec)
        units = [min(f.units_per_second, 1 << 33) for f in sec]
        self.if_units = np.array(units, np.int64)
        self.if_mul = np.array([K.NS // u if K.NS % u == 0 else 0 for u in units], np.int64)
        self.if_off = np.array([max(min(f.tsoffset, 1 << 33), -(1 << 33)) * K.NS for f in sec],
                               np.int64)
        self.if_snap = np.array([f.snaplen for f in sec], np.int64)

    def run(self, buf: np.ndarray, pos: int, base: int, a: _Arrays, n: int,
            end: int | None = None) -> tuple[int, int, int]:
        """Records of buf[pos:end] (default: to the end of buf)."""
        end = len(buf) if end is None else end
        if self.kind == "pcap":
            return K.scan_pcap(buf, pos, end, base, self.big, self.nsec, self.linktype,
                               self.max_len, *a.all(), n)
        if self.kind == "erf":
            n, pos, status, self.prev = K.scan_erf(buf, pos, end, base, self.prev,
                                                   *a.all(), n)
            return n, pos, status
        while True:
            n, pos, status = K.scan_pcapng(buf, pos, end, base, self.big, self.if_lt,
                                           self.if_units, self.if_mul, self.if_off,
                                           self.if_snap, *a.all(), n)
            if status != K.BLOCK:
                return n, pos, status
            got = self._block(buf, pos, end)
            if got < 0:
                return n, pos, K.NEED if got == -1 else K.DAMAGE
            pos = got

    def _block(self, buf: np.ndarray, pos: int, end: int) -> int:
        """Parse an SHB or IDB at pos; -1 = incomplete, -2 = hand over."""
        if pos + 12 > end:
            return -1
        big = self.big
        if bytes(buf[pos:pos + 4]) == PCAPNG_MAGIC:
            e = _BOMS.get(bytes(buf[pos + 8:pos + 12]))
            if e is None:
                return -2
            big = e == ">"
        btype, total = K.rd32(buf, pos, big), K.rd32(buf, pos + 4, big)
        if total < (K.SHB_MIN if btype == SHB else 12) or total % 4 or total > (1 << 26):
            return -2
        if pos + total > end:
            return -1
        if K.rd32(buf, pos + total - 4, big) != total:
            return -2
        body = bytes(buf[pos + 8:pos + total - 4])
        self.png._e = ">" if big else "<"
        try:
            if btype == SHB:
                self.big = big
                self.png._section_header(body)
            elif btype == IDB:
                self.png._interface(body)
        except CaptureError:
            return -2
        self._ifaces()
        return pos + total if self.exact else -2


def _sniff(path: str) -> tuple[bool, bytes]:
    with open(path, "rb") as f:
        head = f.read(2)
        if head == GZIP_MAGIC:
            with gzip.open(path, "rb") as g:
                return True, g.read(FILE_HEADER_LEN)
        return False, head + f.read(FILE_HEADER_LEN - 2)


def batches(path: str | os.PathLike[str], chunk: int = DEFAULT_CHUNK,
            pool: Pool | None = None) -> Iterator[Batch]:
    """The records of a capture file, `chunk` at a time (arrays recycled via `pool`)."""
    path = os.fspath(path)
    try:
        compressed, head = _sniff(path)
    except (EOFError, OSError, zlib.error):
        # A gzip file too short or broken for its first header: the streaming reader
        # reports it exactly as it does everywhere else.
        yield from _reader_batches(path, 0, chunk)
        return
    if not head:
        raise CaptureError("empty file", source=path, at_record=False)
    fmt = _Format(head, path)
    try:
        arrays = _Arrays(chunk, pool)
        pieces = _gzip_pieces(path, fmt, arrays) if compressed else \
            _mmap_pieces(path, fmt, arrays)
        yield from pieces
    except _Handoff as h:
        yield from _reader_batches(path, h.index, chunk)


def _mmap_pieces(path: str, fmt: _Format, a: _Arrays, start: tuple[int, int] | None = None,
                 limit: int | None = None) -> Iterator[Batch]:
    """The file's records; from `start` = (record index, its byte offset) and at most
    `limit` of them when given (a worker's span, `ibwire.engines.span`)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= fmt.start:
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    buf = np.frombuffer(mm, dtype=np.uint8)
    first, pos = start or (0, fmt.start)
    stop = None if limit is None else first + limit
    released = (pos // mmap.PAGESIZE) * mmap.PAGESIZE
    window = WINDOW
    while True:
        if stop is not None:
            if first >= stop:
                return
            if stop - first < a.n:
                # Arrays no longer than the records left, so the kernel stops at the span's end.
                a.n = stop - first
                a.fresh()
        end = min(size, pos + window)
        n, pos, status = fmt.run(buf, pos, 0, a, 0, end)
        if n:
            yield a.batch(buf, first, n)
            first += n
        page = (pos // mmap.PAGESIZE) * mmap.PAGESIZE
        if page > released and hasattr(mm, "madvise"):
            mm.madvise(mmap.MADV_DONTNEED, released, page - released)  # bound the RSS
            released = page
        if status == K.FULL or (status == K.NEED and end < size):
            # A record larger than the window: widen it until the record fits.
            window = WINDOW if n else window * 2
            continue
        if status == K.DAMAGE or pos < size:
            raise _Handoff(first)
        return


def _gzip_pieces(path: str, fmt: _Format, a: _Arrays) -> Iterator[Batch]:
    tail = b""
    base, pos, first = 0, fmt.start, 0
    with gzip.open(path, "rb") as g:
        eof = False
        while not eof:
            try:
                piece = g.read(GZIP_PIECE)
            except (EOFError, OSError):
                raise _Handoff(first) from None
            eof = not piece
            data = tail + piece
            buf = np.frombuffer(data, dtype=np.uint8)
            while True:
                n, pos, status = fmt.run(buf, pos, base, a, 0)
                if n:
                    yield a.batch(buf, first, n, base)
                    first += n
                if status != K.FULL:
                    break
            if status == K.DAMAGE:
                raise _Handoff(first)
            tail = data[pos:]
            base += pos
            pos = 0
        if tail:
            raise _Handoff(first)


def _reader_batches(path: str, skip: int, chunk: int) -> Iterator[Batch]:
    """The streaming reader's frames from record `skip` on, packed into batches."""
    parts: list[bytes] = []
    rows: list[tuple[int, int, int, int, int, int]] = []
    first = skip
    try:
        with open_capture(path) as frames:
            for fr in frames:
                if fr.index < skip:
                    continue
                rows.append((len(fr.data), fr.wire_len, clamp_ns(fr.ts_ns), fr.linktype,
                             fr.interface, fr.offset))
                parts.append(fr.data)
                if len(rows) == chunk:
                    yield _pack(parts, rows, first)
                    first += len(rows)
                    parts, rows = [], []
    except GeneratorExit:     # the consumer stopped: nothing more to deliver
        raise
    except BaseException:     # the frames before an error are delivered, then the error
        if rows:
            yield _pack(parts, rows, first)
        raise
    if rows or first == skip:
        # (An empty batch too, when no record followed the handover: the batch itself,
        # base -1, tells the consumer that the streaming reader took over, e.g. after
        # damage it stepped over.)
        yield _pack(parts, rows, first)


def clamp_ns(ts_ns: int) -> int:
    """A frame time as the int64 column holds it: saturated past 1677 and 2262."""
    return max(min(ts_ns, K.TS_MAX), K.TS_OUT + 1)


def _pack(parts: list[bytes], rows: list[tuple[int, ...]], first: int) -> Batch:
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    cols = np.array(rows, dtype=np.int64).reshape(-1, 6)
    cap = cols[:, 0]
    doff = np.zeros(len(rows), np.int64)
    np.cumsum(cap[:-1], out=doff[1:])
    return Batch(buf, first, doff, cap.astype(np.int32), cols[:, 1].copy(), cols[:, 2].copy(),
                 cols[:, 3].astype(np.int32), cols[:, 4].astype(np.int32), cols[:, 5].copy(),
                 base=-1)
