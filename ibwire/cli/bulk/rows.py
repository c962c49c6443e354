"""One engine chunk as the CLI sees it: columns, frame facts, groups of alike frames,
and the per-packet decode of any single row (FrameInfo and Packet exactly as
`cli.reader.packets` would make them).

Grouping: rows whose key columns are equal print alike (same protocol stack,
same addresses, same opcode ...). The key is hashed to one integer for a fast
`np.unique`; hash groups whose rows differ in a key column are split exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ibwire.cli.frames import FrameInfo, frame_lengths
from ibwire.constants import LINKTYPE_ERF, MAD_QPS
from ibwire.decoder import Options
from ibwire.engines import fallback
from ibwire.engines.columns import OFFSET_PREFIX, Chunk
from ibwire.engines.tables import LAYER_NAMES
from ibwire.packet import Packet

# 16-byte columns (GIDs, IPv6 addresses): grouped on as two 64-bit halves.
B16_KEYS = ("infiniband.grh.sgid", "infiniband.grh.dgid", "ipv6.src", "ipv6.dst")
# Columns every bulk command reads.
BASE = ["frame.number", "ibwire.frame.time_ns", "frame.len", "frame.cap_len",
        "frame.interface_id", "ibwire.frame.linktype", "ibwire.frame.offset",
        "ibwire.payload.len", "ibwire.ib.offset", "ibwire.malformed.code", "ibwire.fallback",
        "erf.wlen", *(OFFSET_PREFIX + n for n in LAYER_NAMES)]


class Clock:
    """First and previous frame times across chunks (tshark's relative and delta)."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.prev = 0
        self.prev_disp: int | None = None    # time of the last displayed frame


class Rows:
    """A chunk (possibly cut short by `-c`) with the arrays the CLI needs."""

    def __init__(self, chunk: Chunk, n: int, clock: Clock, options: Options) -> None:
        self.chunk, self.n, self.options = chunk, n, options
        ts = self.int("ibwire.frame.time_ns")
        if clock.first is None and n:
            clock.first = clock.prev = int(ts[0])
        first = clock.first if clock.first is not None else 0
        self.ts = ts
        self.rel = ts - first
        self.delta = np.empty(n, np.int64)
        if n:
            self.delta[0] = ts[0] - clock.prev
            np.subtract(ts[1:], ts[:-1], out=self.delta[1:])
            clock.prev = int(ts[-1])
        self.disp_delta = self.delta      # until `display` says otherwise
        self.number = self.int("frame.number")
        self.linktype = self.int("ibwire.frame.linktype")
        # tshark's frame.len of an ERF record is the ERF wire length (frames.frame_lengths).
        erf = (self.linktype == LINKTYPE_ERF) & self.has_layer("erf")
        self.length = np.where(erf, self.int("erf.wlen"), self.int("frame.len"))
        self.slow = self.raw("ibwire.fallback")[0][:n].astype(bool) | \
            (self.int("ibwire.malformed.code") != 0)
        self._packets: dict[int, Packet] = {}

    def display(self, shown: np.ndarray, clock: Clock) -> None:
        """Times since the previous displayed frame (tshark's delta displayed)."""
        idx = np.flatnonzero(shown)
        self.disp_delta = np.zeros(self.n, np.int64)
        if len(idx):
            prev = np.empty(len(idx), np.int64)
            prev[0] = self.ts[idx[0]] if clock.prev_disp is None else clock.prev_disp
            prev[1:] = self.ts[idx[:-1]]
            self.disp_delta[idx] = self.ts[idx] - prev
            clock.prev_disp = int(self.ts[idx[-1]])

    # -- columns ---------------------------------------------------------------
    def raw(self, name: str) -> tuple[np.ndarray, np.ndarray | None]:
        return self.chunk.array(name)

    def int(self, name: str) -> np.ndarray:
        """A numeric column as int64 (absent values are 0; see `present`)."""
        return self.raw(name)[0][:self.n].astype(np.int64)

    def present(self, name: str) -> np.ndarray:
        values, mask = self.raw(name)
        if mask is None:
            return np.ones(self.n, bool)
        return mask[:self.n].astype(bool)

    def b16(self, name: str) -> list[np.ndarray]:
        values = np.ascontiguousarray(self.raw(name)[0][:self.n])
        halves = values.view(np.int64).reshape(self.n, -1)
        return [halves[:, k] for k in range(halves.shape[1])]

    def has_layer(self, layer: str) -> np.ndarray:
        return self.raw(OFFSET_PREFIX + layer)[0][:self.n] >= 0

    def mad_qps(self) -> tuple[np.ndarray, np.ndarray]:
        """(BTH destination QP, DETH source QP) is a well-known MAD QP (QP0/QP1):
        the QP half of the graph's MAD rule (`GRAPH.carries_mad`)."""
        return (np.isin(self.int("infiniband.bth.destqp"), MAD_QPS),
                np.isin(self.int("infiniband.deth.srcqp"), MAD_QPS))

    def layer_bits(self) -> np.ndarray:
        bits = np.zeros(self.n, np.int64)
        for k, name in enumerate(LAYER_NAMES):
            bits |= self.has_layer(name).astype(np.int64) << k
        return bits

    # -- per packet -----------------------------------------------------------
    def packet(self, i: int) -> Packet:
        pkt = self._packets.get(i)
        if pkt is None:
            pkt = self._packets[i] = fallback.decode_row(self.chunk.batch, i, self.options)
        return pkt

    def info(self, i: int) -> FrameInfo:
        """The FrameInfo `cli.reader.packets` makes for this row."""
        pkt = self.packet(i)
        frame = pkt.frame
        length, cap_len = frame_lengths(pkt, len(frame.data), frame.wire_len, frame.linktype)
        return FrameInfo(int(self.number[i]), frame.ts_ns, int(self.rel[i]),
                         int(self.delta[i]), length, cap_len, frame.linktype,
                         frame.interface, frame.offset, pkt=pkt,
                         delta_disp_ns=int(self.disp_delta[i]))


def groups(keys: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(group id per row, first row of each group); ids follow first appearance."""
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cols = [np.asarray(k)[:n].astype(np.int64) for k in keys] or [np.zeros(n, np.int64)]
    h = np.zeros(n, np.uint64)
    mult = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        for c in cols:
            h ^= c.view(np.uint64)
            h *= mult
            h ^= h >> np.uint64(29)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    rep = first[inverse]
    if not all((c == c[rep]).all() for c in cols):
        # A hash collision: group on the columns themselves.
        mat = np.stack(cols, axis=1)
        _, first, inverse = np.unique(mat, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse], first[order]


def last_rows(gid: np.ndarray, count: int) -> np.ndarray:
    """The last row of each group."""
    last = np.zeros(count, np.int64)
    np.maximum.at(last, gid, np.arange(len(gid)))
    return last


def ints_matrix(cols: Sequence[np.ndarray], valid: Sequence[np.ndarray], n: int
                ) -> tuple[np.ndarray, np.ndarray]:
    ints = np.zeros((max(len(cols), 1), n), np.int64)
    ok = np.zeros((max(len(cols), 1), n), np.uint8)
    for j, (c, v) in enumerate(zip(cols, valid)):
        ints[j] = c[:n]
        ok[j] = v[:n]
    return ints, ok
