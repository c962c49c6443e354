"""Column builders in chunks: the builders of `rc_input` and `credit_input` keep a
Python list per column (tens of bytes a value); every `CHUNK` frames (32768) their rows
become numpy arrays (a few bytes a value), and repeated strings (addresses) share
one object. The columns at the end are the same as one builder's would be
(tests/test_report.py compares them with a chunk of a few frames). The bulk read
adds its chunks' columns here too (`add_parts`), and the builders carry on after it."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ibwire.analysis import credit_input, rc_input

CHUNK = 1 << 15


def give_back() -> None:
    """Return freed heap pages to the system. The parts (and the analyses' temporaries)
    are arrays that glibc serves from its heap and keeps when freed: without this,
    joining the parts leaves the process holding the columns twice (measured: 2.7 ->
    4.9 GB for 10M frames), and each analysis starts above the last one's peak."""
    global _TRIM
    if _TRIM is None:
        try:
            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):     # not glibc: nothing to do
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


class Chunked:
    """`add(pkt)` to both builders; `rc_columns()` and `credit_columns()` at the end."""

    def __init__(self) -> None:
        self.rc_parts: list[dict[str, np.ndarray]] = []
        self.cr_parts: list[dict[str, np.ndarray]] = []
        self.labels: dict[str, int] = {}
        self.strings: dict[str, str] = {}
        self.frames = 0
        self._new()

    def _new(self) -> None:
        self.rcb = rc_input.ColumnBuilder()
        self.rcb.labels = self.labels            # endpoint numbers run across chunks
        self.crb = credit_input.ColumnBuilder()
        self.rows = 0

    def add(self, pkt: Any) -> None:
        self.rcb.add(pkt)
        self.crb.add(pkt)
        self.rows += 1
        if self.rows >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        rc = self.rcb.columns()
        rc["frame.number"] += self.frames          # the builder counts from 1 per chunk
        del rc[rc_input.ENDPOINTS]
        cr = self.crb.finish()
        canon = self.strings
        for name in credit_input.STRING_COLUMNS:
            cr[name] = np.asarray([canon.setdefault(s, s) for s in cr[name].tolist()],
                                  dtype=object)
        self.add_parts(rc, cr, self.rows)
        self._new()

    def add_parts(self, rc: dict[str, np.ndarray], cr: dict[str, np.ndarray], rows: int
                  ) -> None:
        """The next `rows` frames' columns, built elsewhere (the bulk read: frame numbers
        already counted from the file's start, endpoints numbered in `self.labels`)."""
        self.rc_parts.append({name: rc[name].astype(dt, copy=False)
                              for name, dt in rc_input.COLUMNS})
        # Text columns as they are: the bulk part's rows already share one object per
        # distinct value (`bulk_input.text_column`), the builder's were made to.
        part = {credit_input.TIME_COLUMN: cr[credit_input.TIME_COLUMN].astype(np.int64),
                **{name: cr[name] for name in credit_input.STRING_COLUMNS}}
        for name, dt in credit_input.INT_COLUMNS:
            part[name] = cr[name].astype(dt, copy=False)
        self.cr_parts.append(part)
        self.frames += rows

    def _join(self, parts: list[dict[str, np.ndarray]], empty: dict[str, np.ndarray]
              ) -> dict[str, np.ndarray]:
        if not parts:
            return empty
        out = {}
        for k in list(parts[0]):           # column by column: parts freed as they go
            out[k] = np.concatenate([p.pop(k) for p in parts])
            give_back()
        parts.clear()
        return out

    def finish(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(RC engine columns, credit analysis columns)."""
        self._flush()
        rc = self._join(self.rc_parts, self.rcb.columns())
        rc[rc_input.ENDPOINTS] = np.asarray(list(self.labels), dtype=object)
        cr = self._join(self.cr_parts, self.crb.finish())
        return rc, cr
