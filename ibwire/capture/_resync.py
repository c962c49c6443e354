"""Stepping over a damaged record: the scan every reader shares.

A reader that finds a record whose framing is broken (a length that is impossible,
disagrees with the block's other length, runs past the end of the file, or leaves
the next header unrecognisable) raises ``Damage`` with the bytes it read since the
record started. ``recover`` then either raises the CaptureError a strict reader
raises there (``resync=False``, or no resynchronisation point found), or finds the
next record and notes the bytes in between as one ``Skipped`` entry.

The rules:
* the scan starts one byte after the damaged record's first byte and looks at most
  ``RESYNC_WINDOW`` bytes ahead (fewer at the end of the file); the memory it takes
  is what the file holds there, never more;
* a resynchronisation point is an offset where a record passes the format's
  candidate check (stricter than when reading in step: known types, sane lengths,
  a timestamp close to the last good record's) *and* so does the record right after
  it -- or the file ends cleanly right after it. Two in a row keep bytes inside
  packet data from passing for a record by chance;
* the format supplies ``candidates`` (a fast pre-filter, usually a regular
  expression) and ``check``, which says how long the record at an offset is (0: not
  a record, NEED: cannot tell from the bytes at hand) and what the next record is
  checked against (timestamp, byte order).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ibwire.capture._stream import Damage, Source  # noqa: F401 - Damage lives here too
from ibwire.capture.frame import Skipped

RESYNC_WINDOW = 1 << 20  # the resynchronisation point and its successor lie within this
_FIRST_WINDOW = 1 << 12  # scans start this small and double: damage is usually local
NEED = -1  # check(): the record reaches past the bytes at hand
_LONGEST_PATTERN = 16  # bytes a pre-filter looks at (a record header)
DAY = 86_400

Candidates = Callable[[bytes, int, int], Iterable[int]]
# check(buf, pos, end, ref, first) -> (length or 0 or NEED, ref for the next record)
Check = Callable[[bytes, int, int, object, bool], tuple[int, object]]


def recover(src: Source, damage: Damage, skipped: list[Skipped] | None,
            candidates: Candidates, check: Check, ref: object) -> None:
    """Resynchronise after ``damage`` (noting it in ``skipped``) or raise it.

    ``skipped`` is None for a strict reader; ``ref`` is what the first record after
    the damage is checked against (e.g. the last good record's timestamp).
    """
    if skipped is None:
        raise src.error(damage.reason)
    start = src.record_offset
    if damage.whole:
        skipped.append(Skipped(src.records, start, len(damage.data), damage.reason))
        return
    src.unread(damage.data)
    size, resume = _FIRST_WINDOW, 1
    while True:
        buf, at, avail = src.lookahead(size)
        last = avail < size or size >= RESYNC_WINDOW  # no more bytes to wait for
        eof = src.eof and not src.broken and at + avail == len(buf)  # the end is the file's
        found, resume = _scan(buf, at, resume, avail, last, eof, candidates, check, ref)
        if found > 0:
            skipped.append(Skipped(src.records, start, found, damage.reason))
            src.skip(found)
            return
        if last:
            raise src.error(damage.reason)
        size *= 2


def _scan(buf: bytes, at: int, start: int, avail: int, last: bool, eof: bool,
          candidates: Candidates, check: Check, ref: object) -> tuple[int, int]:
    """(offset from ``at`` of the first record that passes twice in a row, or 0 if
    none; where to resume when more bytes come). Offsets before the resume point
    have been ruled out."""
    end = at + avail
    for p in candidates(buf, at + start, end):
        n1, ref1 = check(buf, p, end, ref, True)
        if n1 > 0 and p + n1 <= end:
            q = p + n1
            if q == end and eof:
                return p - at, 0  # the file ends cleanly after it
            n2 = check(buf, q, end, ref1, False)[0] if q < end else NEED
            if n2 > 0:
                return p - at, 0
            if n2 == 0:
                continue
        elif n1 == 0:
            continue
        if not last:
            return 0, p - at
    # A pre-filter cannot match where its pattern runs past the end: look there again.
    return 0, max(start, avail - _LONGEST_PATTERN)


# -- building the pre-filters ---------------------------------------------------------
def lookahead_regex(parts: Sequence[bytes]) -> re.Pattern[bytes]:
    """A pattern matching (without consuming) where ``parts`` (regex pieces, in file
    order) follow: matches may overlap."""
    return re.compile(b"(?s)(?=" + b"".join(parts) + b")")


def any_of(values: Iterable[bytes]) -> bytes:
    """A regex alternative of literal byte strings."""
    return b"(?:" + b"|".join(re.escape(v) for v in values) + b")"


def byte_range(lo: int, hi: int) -> bytes:
    return b"[" + re.escape(bytes([lo])) + b"-" + re.escape(bytes([hi])) + b"]"


def byte_set(values: Iterable[int]) -> bytes:
    return b"[" + b"".join(re.escape(bytes([v])) for v in sorted(values)) + b"]"


def seconds_high(prev: int, little: bool) -> bytes:
    """The two high bytes of a 32-bit seconds field within [prev - 1, prev + DAY]."""
    lo, hi = max(prev - 1, 0) >> 16, min(prev + DAY, 0xFFFFFFFF) >> 16
    return any_of(v.to_bytes(2, "little" if little else "big") for v in range(lo, hi + 1))


def near(prev: int | None, sec: int) -> bool:
    """A resynchronisation candidate's time: at most 1 s before the last good record
    (interfaces interleave) and at most a day after it."""
    return prev is None or prev - 1 <= sec <= prev + DAY


def regex_candidates(pattern: re.Pattern[bytes]) -> Candidates:
    def find(buf: bytes, start: int, end: int) -> Iterable[int]:
        return (m.start() for m in pattern.finditer(buf, start, end))
    return find
