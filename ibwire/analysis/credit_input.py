"""The columns the credit and congestion analyses read, from one place.

`credit_columns(path)` returns numpy arrays keyed by registry field names (the
names `ibwire.columns` uses), built from the bulk path (`credit_bulk`);
`credit_columns_per_packet` is its reference twin over `ibwire.read` (tests:
identical). A value a frame does not carry is -1.
"""

from __future__ import annotations

import numpy as np

import ibwire
from ibwire.capture.frame import CaptureError
from ibwire.cli.tshark_text import format_field

# Integer columns: (registry field name, dtype).
INT_COLUMNS = (
    ("frame.number", np.int64),
    ("frame.interface_id", np.int16),
    ("erf.flags.cap", np.int8),
    ("infiniband.lrh.vl", np.int8),
    ("infiniband.lrh.sl", np.int8),
    ("infiniband.lrh.pktlen", np.int32),
    ("infiniband.lrh.slid", np.int32),
    ("infiniband.lrh.dlid", np.int32),
    ("infiniband.bth.opcode", np.int16),
    ("infiniband.bth.p_key", np.int32),
    ("infiniband.bth.destqp", np.int32),
    ("infiniband.bth.psn", np.int32),
    ("infiniband.deth.srcqp", np.int32),
    ("infiniband.aeth.syndrome", np.int16),
    ("infiniband.bth.fecn", np.int8),
    ("infiniband.bth.becn", np.int8),
    ("infiniband.aeth.credits", np.int16),
    ("infiniband_link.op", np.int8),
    ("infiniband_link.fctbs", np.int32),
    ("infiniband_link.vl", np.int8),
    ("infiniband_link.fccl", np.int32),
    ("infiniband_link.lpcrc.status", np.int8),
    ("infiniband.invariant.crc.status", np.int8),
    ("infiniband.variant.crc.status", np.int8),
    ("vlan.priority", np.int8),
    ("ip.dsfield.dscp", np.int8),
    ("ip.dsfield.ecn", np.int8),
    ("ipv6.tclass", np.int16),
    ("udp.srcport", np.int32),
    ("frame.len", np.int32),
    ("macc.opcode", np.int32),
    ("macc.pause_time", np.int32),
    ("macc.cbfc.enbv", np.int32),
    *((f"macc.cbfc.pause_time.c{i}", np.int32) for i in range(8)),
)
TIME_COLUMN = "ibwire.frame.time_ns"   # capture timestamp, integer ns (the bulk reader's name)
STRING_COLUMNS = ("ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "eth.src", "eth.dst")
ALL_NAMES = (TIME_COLUMN,) + tuple(n for n, _ in INT_COLUMNS) + STRING_COLUMNS


def _value(pkt: ibwire.Packet, name: str) -> object:
    if pkt.frame is None and name.startswith("frame."):
        return None
    if name == "frame.number":
        return pkt.frame.index + 1
    if name == "frame.interface_id":
        return pkt.frame.interface
    if name == "frame.len":
        return pkt.frame.wire_len
    if name == "infiniband_link.lpcrc.status":
        return int(pkt.lpcrc_status) if pkt.has("infiniband_link") else None
    try:
        return pkt.get(name)
    except (KeyError, AttributeError):
        return None


class ColumnBuilder:
    """Collects the columns one decoded packet at a time (also for `-z` collectors)."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {n: [] for n in ALL_NAMES}

    def add(self, pkt: ibwire.Packet) -> None:
        rows = self.rows
        rows[TIME_COLUMN].append(pkt.frame.ts_ns if pkt.frame is not None else 0)
        for name, _ in INT_COLUMNS:
            v = _value(pkt, name)
            rows[name].append(-1 if v is None or isinstance(v, (bytes, str)) else int(v))
        for name in STRING_COLUMNS:
            v = _value(pkt, name)
            rows[name].append("" if v is None else format_field(name, v))

    def finish(self) -> dict[str, np.ndarray]:
        rows = self.rows
        out: dict[str, np.ndarray] = {TIME_COLUMN: np.asarray(rows[TIME_COLUMN], np.int64)}
        for name, dt in INT_COLUMNS:
            out[name] = np.asarray(rows[name], np.int64).astype(dt)
        for name in STRING_COLUMNS:
            out[name] = np.asarray(rows[name], dtype=object)
        return out


def credit_columns_per_packet(path: str, strict: bool = True) -> dict[str, np.ndarray]:
    """Read `path` into the columns listed in ALL_NAMES (one row per frame). A damaged
    file raises CaptureError, unless `strict` is off: then the frames before the
    damage are kept (the caller's reader reports the error)."""
    b = ColumnBuilder()
    try:
        for pkt in ibwire.read(path):
            b.add(pkt)
    except CaptureError:
        if strict:
            raise
    return b.finish()


def credit_columns(path: str, strict: bool = True) -> dict[str, np.ndarray]:
    """Read `path` into the columns listed in ALL_NAMES (one row per frame) from the
    bulk path; identical to `credit_columns_per_packet`. A damaged file raises
    CaptureError, unless `strict` is off: then the frames before the damage are kept."""
    from ibwire.analysis.credit_bulk import credit_columns_bulk

    return credit_columns_bulk(path, strict)
