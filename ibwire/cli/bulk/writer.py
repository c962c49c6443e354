"""Text lines for many rows at once: a small op program run by a Numba kernel.

A line is a sequence of ops over integer columns: literal text, a per-group
constant (text the per-packet formatter produced for the group's first frame),
a decimal or zero-padded hex number, a time in seconds with nine decimals
(`frames.fmt_ns`), an IPv4 or Ethernet address, and a guard that skips the next
ops where a column is null.
`write_rows` writes every row whose group is >= 0 into one byte buffer and
records where each row starts; rows with group -1 stay empty for the caller to
fill from the per-packet formatter. `write_rows.py_func` is its plain-Python
twin (tests compare them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

OP_LIT, OP_GROUP, OP_DEC, OP_HEX, OP_TIME, OP_GUARD, OP_IPV4, OP_ETHER = range(8)
ALIGN_NONE, ALIGN_RIGHT, ALIGN_LEFT = 0, 1, 2
_MAX_NUMBER = 24         # sign and 20 digits, with room
_MAX_TIME = 32


@njit(cache=True)
def _digits(v, base, tmp):
    """Digits of v >= 0 into tmp, least significant first; returns the count."""
    n = 0
    while True:
        d = v % base
        tmp[n] = d + 48 if d < 10 else d + 87
        n += 1
        v //= base
        if v == 0:
            return n


@njit(cache=True)
def _fill(out, pos, byte, count):
    for _ in range(count):
        out[pos] = byte
        pos += 1
    return pos


@njit(cache=True)
def _number(out, pos, tmp, nd, neg, left, zeros, right):
    """Spaces, sign, zeros, the nd digits in tmp (least significant first), spaces."""
    pos = _fill(out, pos, 32, left)
    if neg:
        out[pos] = 45
        pos += 1
    pos = _fill(out, pos, 48, zeros)
    for j in range(nd):
        out[pos] = tmp[nd - 1 - j]
        pos += 1
    return _fill(out, pos, 32, right)


@njit(cache=True)
def write_rows(ops, ints, valid, group, gpool, gslots, lit, out, rowoff):
    """Run the op program for each row; returns the bytes written (see module doc)."""
    tmp = np.zeros(24, np.uint8)
    frac = np.zeros(24, np.uint8)
    pos = 0
    n = group.shape[0]
    for i in range(n):
        rowoff[i] = pos
        g = group[i]
        if g < 0:
            continue
        k = 0
        while k < ops.shape[0]:
            op, a, b, c = ops[k, 0], ops[k, 1], ops[k, 2], ops[k, 3]
            k += 1
            if op == OP_GUARD:
                if valid[a, i] == 0:
                    k += b
            elif op == OP_LIT:
                for j in range(b):
                    out[pos + j] = lit[a + j]
                pos += b
            elif op == OP_GROUP:
                start, length = gslots[g, 2 * a], gslots[g, 2 * a + 1]
                for j in range(length):
                    out[pos + j] = gpool[start + j]
                pos += length
            elif valid[a, i] == 0:
                continue
            elif op == OP_DEC or op == OP_HEX:
                v = ints[a, i]
                neg = v < 0
                if neg:
                    v = -v
                nd = _digits(v, 10 if op == OP_DEC else 16, tmp)
                zeros, pad = 0, 0
                if op == OP_HEX:
                    zeros = b - nd if b > nd else 0
                elif b > nd + neg:
                    pad = b - nd - neg
                pos = _number(out, pos, tmp, nd, neg, pad if c == ALIGN_RIGHT else 0, zeros,
                              pad if c == ALIGN_LEFT else 0)
            elif op == OP_IPV4 or op == OP_ETHER:
                v = ints[a, i]
                count = 4 if op == OP_IPV4 else 6
                for byte in range(count - 1, -1, -1):
                    octet = (v >> (8 * byte)) & 255
                    if op == OP_IPV4:
                        nd = _digits(octet, 10, tmp)
                        pos = _number(out, pos, tmp, nd, False, 0, 0, 0)
                    else:
                        nd = _digits(octet, 16, tmp)
                        pos = _number(out, pos, tmp, nd, False, 0, 2 - nd, 0)
                    if byte:
                        out[pos] = 46 if op == OP_IPV4 else 58
                        pos += 1
            elif op == OP_TIME:
                v = ints[a, i]
                neg = v < 0
                if neg:
                    v = -v
                sec, ns = v // 1000000000, v % 1000000000
                nd = _digits(sec, 10, tmp)
                for j in range(9):
                    frac[8 - j] = 48 + ns % 10
                    ns //= 10
                width = nd + 10 + neg
                pos = _number(out, pos, tmp, nd, neg, b - width if b > width else 0, 0, 0)
                out[pos] = 46
                pos += 1
                for j in range(9):
                    out[pos + j] = frac[j]
                pos += 9
    rowoff[n] = pos
    return pos


class Program:
    """Builds the op table, the literal pool and the per-group constant slots."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, int, int, int]] = []
        self._lit = bytearray()
        self.width = 0          # bytes a row can take, group slots excluded
        self.slots = 0
        self._out: np.ndarray | None = None

    def lit(self, text: str) -> None:
        raw = text.encode()
        if raw:
            self.ops.append((OP_LIT, len(self._lit), len(raw), 0))
            self._lit += raw
            self.width += len(raw)

    def group(self) -> int:
        """A per-group text slot; returns its number."""
        self.ops.append((OP_GROUP, self.slots, 0, 0))
        self.slots += 1
        return self.slots - 1

    def dec(self, col: int, width: int = 0, align: int = ALIGN_NONE) -> None:
        self.ops.append((OP_DEC, col, width, align))
        self.width += max(width, _MAX_NUMBER)

    def hex(self, col: int, digits: int) -> None:
        self.ops.append((OP_HEX, col, digits, 0))
        self.width += max(digits, _MAX_NUMBER)

    def address(self, col: int, ipv4: bool) -> None:
        """An IPv4 address (dotted quad) or Ethernet address (aa:bb:..) held as an int."""
        self.ops.append((OP_IPV4 if ipv4 else OP_ETHER, col, 0, 0))
        self.width += 17

    def time(self, col: int, width: int = 0) -> None:
        self.ops.append((OP_TIME, col, width, 0))
        self.width += max(width, _MAX_TIME)

    def guard(self, col: int) -> int:
        """Skip what follows (up to `end_guard`) where `col` is null; returns a handle."""
        self.ops.append((OP_GUARD, col, 0, 0))
        return len(self.ops) - 1

    def end_guard(self, handle: int) -> None:
        op, col, _, _ = self.ops[handle]
        self.ops[handle] = (op, col, len(self.ops) - handle - 1, 0)

    def run(self, ints: np.ndarray, valid: np.ndarray, group: np.ndarray,
            texts: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, row offsets) for the rows; texts[g][slot] fills the group slots.
        The bytes are a view of a buffer the next call reuses."""
        pool = bytearray()
        gslots = np.zeros((max(len(texts), 1), 2 * max(self.slots, 1)), np.int64)
        longest = 0
        for g, row in enumerate(texts):
            for s, raw in enumerate(row):
                gslots[g, 2 * s], gslots[g, 2 * s + 1] = len(pool), len(raw)
                pool += raw
            longest = max(longest, sum(len(r) for r in row))
        n = len(group)
        need = n * (self.width + longest + 1) + 1
        if self._out is None or len(self._out) < need:
            self._out = np.empty(need, np.uint8)      # reused: fresh pages cost more
        out = self._out
        rowoff = np.empty(n + 1, np.int64)
        ops = np.array(self.ops or [(OP_LIT, 0, 0, 0)], np.int64).reshape(-1, 4)
        total = write_rows(ops, ints, valid, group, np.frombuffer(bytes(pool) or b"\0", np.uint8),
                           gslots, np.frombuffer(bytes(self._lit) or b"\0", np.uint8),
                           out, rowoff)
        return out[:total], rowoff
