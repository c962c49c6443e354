"""The RC engine's input: one numpy column per field, named by registry field names.

`rc_columns(path)` is the only place that turns a capture into the engine's
columns: it reads the bulk path (`iter_chunks`, chunked, vectorised) and decodes
per packet only the MAD rows (for the CM REQ/REP fields, which are MAD payload).
`rc_columns_per_packet` is its reference twin over `decode` (tests: identical).

Absent values are -1. Endpoints (`ibwire.src` / `ibwire.dst`) are small integers
indexing `ENDPOINTS`, a list of labels (IP address, else GID, else LID; the IP
header only where it carries the BTH, `endpoints_of`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

import numpy as np

from ibwire.capture._stream import PathOrFile
from ibwire.packet import Packet

ENDPOINTS = "ibwire.endpoints"

# (column name, numpy dtype, where the value comes from: a field name or None = computed)
COLUMNS: tuple[tuple[str, str], ...] = (
    ("frame.number", "int64"),
    ("frame.time_ns", "int64"),
    ("frame.interface_id", "int32"),
    ("ibwire.src", "int32"),
    ("ibwire.dst", "int32"),
    ("infiniband.bth.opcode", "int16"),
    ("infiniband.bth.destqp", "int32"),
    ("infiniband.bth.psn", "int32"),
    ("infiniband.bth.a", "int8"),
    ("infiniband.aeth.syndrome", "int16"),
    ("infiniband.aeth.msn", "int32"),
    ("infiniband.reth.dmalen", "int64"),
    ("ibwire.payload_len", "int32"),
    ("infiniband.invariant.crc.status", "int8"),
    ("erf.flags.cap", "int8"),
    ("udp.srcport", "int32"),
    ("infiniband.cm.req.localqpn", "int32"),
    ("infiniband.cm.req.startpsn", "int32"),
    ("infiniband.cm.rep.localqpn", "int32"),
    ("infiniband.cm.rep.startpsn", "int32"),
)
_FIELD_COLUMNS = [name for name, _ in COLUMNS if not name.startswith(("frame.", "ibwire."))
                  and name != "infiniband.invariant.crc.status"]


def _address(value: Any) -> str:
    if isinstance(value, bytes | bytearray) and len(value) in (4, 16):
        return str(ipaddress.ip_address(bytes(value)))
    return str(value)


def endpoints_of(pkt: Packet) -> tuple[str, str]:
    """(source, destination) labels: IP addresses, else GIDs, else LIDs. An IP
    header names the endpoints only where it carries the BTH (RoCEv2: no LRH); on
    a native IB link it is payload (IPoIB, also over RC in connected mode), and
    naming by it split a connection's SENDs from their ACKs."""
    native = pkt.get("infiniband.lrh.slid") is not None
    for src, dst in (("ip.src", "ip.dst"), ("ipv6.src", "ipv6.dst"),
                     ("infiniband.grh.sgid", "infiniband.grh.dgid")):
        if native and not src.startswith("infiniband"):
            continue
        s = pkt.get(src)
        if s is not None:
            return _address(s), _address(pkt.get(dst))
    slid, dlid = pkt.get("infiniband.lrh.slid"), pkt.get("infiniband.lrh.dlid")
    return (f"lid {slid}" if slid is not None else "?",
            f"lid {dlid}" if dlid is not None else "?")


class ColumnBuilder:
    """Columns grown one decoded packet at a time (frame numbers count from 1)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[int]] = {name: [] for name, _ in COLUMNS}
        self.labels: dict[str, int] = {}

    def add(self, pkt: Packet) -> None:
        rows, labels = self.rows, self.labels
        frame = pkt.frame
        rows["frame.number"].append(len(rows["frame.number"]) + 1)
        rows["frame.time_ns"].append(frame.ts_ns if frame is not None else 0)
        rows["frame.interface_id"].append(frame.interface if frame is not None else 0)
        s, d = endpoints_of(pkt)
        rows["ibwire.src"].append(labels.setdefault(s, len(labels)))
        rows["ibwire.dst"].append(labels.setdefault(d, len(labels)))
        rows["ibwire.payload_len"].append(len(pkt.payload))
        rows["infiniband.invariant.crc.status"].append(int(pkt.icrc_status))
        for name in _FIELD_COLUMNS:
            v = pkt.get(name)
            rows[name].append(-1 if v is None else int(v))

    def columns(self) -> dict[str, np.ndarray]:
        out = {name: np.asarray(self.rows[name], dtype=dtype) for name, dtype in COLUMNS}
        out[ENDPOINTS] = np.asarray(list(self.labels), dtype=object)
        return out


def columns_from_packets(packets: Iterable[Packet]) -> dict[str, np.ndarray]:
    """Columns from decoded packets (frame numbers count from 1 in iteration order)."""
    builder = ColumnBuilder()
    for pkt in packets:
        builder.add(pkt)
    return builder.columns()


def rc_columns_per_packet(path: PathOrFile, *, strict: bool = True) -> dict[str, np.ndarray]:
    """The RC engine's input columns for a capture file, decoded per packet.

    Frames are read as `ibwire dump` reads them (damaged regions stepped over), so
    row i is dump's frame i + 1. A broken file raises `CaptureError` after reading
    every good record (`strict`), or ends the columns there (`strict=False`)."""
    from ibwire.capture import CaptureError, open_capture
    from ibwire.decoder import decode

    builder = ColumnBuilder()
    try:
        with open_capture(path) as frames:
            for frame in frames:
                builder.add(decode(frame.data, frame.linktype, frame=frame))
    except CaptureError:
        if strict:
            raise
    return builder.columns()


def rc_columns(path: PathOrFile, *, strict: bool = True) -> dict[str, np.ndarray]:
    """The RC engine's input columns for a capture file, from the bulk path.

    Frames are read as `ibwire dump` reads them (damaged regions stepped over), so
    row i is dump's frame i + 1. A broken file raises `CaptureError` after reading
    every good record (`strict`), or ends the columns there (`strict=False`).
    Identical to `rc_columns_per_packet`."""
    from ibwire.analysis.rc_bulk import rc_columns_bulk

    return rc_columns_bulk(path, strict=strict)
