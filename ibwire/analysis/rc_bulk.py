"""The RC engine's input columns from the bulk path (see `rc_input.rc_columns`).

Every column but four comes from the bulk engine's columns. The CM REQ/REP
fields are MAD payload, so only rows with a MAD header (`ibwire.offset.mad`) are
decoded per packet. Endpoint labels (IP address, else GID, else LID, as
`rc_input.endpoints_of`) are keyed per row by (kind, bytes), and each distinct key
is formatted once, in order of first use (source before destination).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ibwire.analysis import bulk_input as bi
from ibwire.analysis.rc_input import COLUMNS, ENDPOINTS, _address, rc_columns_per_packet
from ibwire.capture._stream import PathOrFile
from ibwire.packet import Packet

_CM = [name for name, _ in COLUMNS if name.startswith("infiniband.cm.")]
_RENAMED = {"frame.time_ns": "ibwire.frame.time_ns", "ibwire.payload_len": "ibwire.payload.len"}
_COMPUTED = {"ibwire.src", "ibwire.dst", *_CM}
# Endpoint sources in order of preference: (source field, destination field, bytes).
_ADDRESSES = (("ip.src", "ip.dst", 4), ("ipv6.src", "ipv6.dst", 16),
              ("infiniband.grh.sgid", "infiniband.grh.dgid", 16))
_LIDS = ("infiniband.lrh.slid", "infiniband.lrh.dlid")
# Key kinds: an address (its bytes), a LID, no LID ("?"), an absent destination address.
ADDR, LID, NO_LID, NONE = 1, 2, 3, 4
FIELDS = sorted({_RENAMED.get(n, n) for n, _ in COLUMNS if n not in _COMPUTED}
                | {f for a in _ADDRESSES for f in a[:2]} | set(_LIDS) | {"ibwire.offset.mad"})


def _label(key: bytes) -> str:
    kind, value = key[0], key[2:2 + key[1]]   # (kind, width, bytes)
    if kind == ADDR:
        return _address(value)
    if kind == LID:
        return f"lid {int.from_bytes(value, 'big')}"
    return "?" if kind == NO_LID else "None"


def _endpoint_keys(ch: bi.Chunk) -> np.ndarray:
    """(2n x 18) keys: row 2i the source of frame i, row 2i + 1 its destination."""
    n = len(ch)
    keys = np.zeros((n, 2, 18), np.uint8)
    native = bi.present(ch, _LIDS[0])      # (an IP header there is payload: IPoIB)
    done = np.zeros(n, bool)
    for src, dst, width in _ADDRESSES:
        use = bi.present(ch, src) & ~done
        if src.startswith(("ip.", "ipv6.")):
            use &= ~native
        done |= use
        for side, name in enumerate((src, dst)):
            ok = use & bi.present(ch, name) if side else use
            keys[ok, side, 0] = ADDR
            keys[ok, side, 1] = width
            keys[ok, side, 2:2 + width] = bi.big_endian(ch, name, width)[ok]
            keys[use & ~ok, side, 0] = NONE
    rest = ~done
    for side, name in enumerate(_LIDS):
        has = bi.present(ch, name)
        keys[rest & has, side, 0] = LID
        keys[rest & has, side, 1] = 2
        keys[rest & has, side, 2:4] = bi.big_endian(ch, name, 2)[rest & has]
        keys[rest & ~has, side, 0] = NO_LID
    return keys.reshape(2 * n, 18)


def rc_columns_bulk(path: PathOrFile, *, strict: bool = True) -> dict[str, np.ndarray]:
    """`rc_input.rc_columns` (a file object goes the per-packet way)."""
    if not isinstance(path, str | os.PathLike):
        return rc_columns_per_packet(path, strict=strict)
    try:
        return _bulk(path, strict)
    except bi.ENGINE_ERRORS:
        return rc_columns_per_packet(path, strict=strict)


def _bulk(path: str | os.PathLike[str], strict: bool) -> dict[str, np.ndarray]:
    labels: dict[str, int] = {}
    parts = [chunk_columns(ch, labels) for ch in bi.chunks(path, FIELDS, strict)]
    out = bi.concat(parts, dict(COLUMNS))
    out[ENDPOINTS] = np.asarray(list(labels), dtype=object)
    return out


def chunk_columns(ch: bi.Chunk, labels: dict[str, int],
                  packet: Callable[[int], Packet] | None = None) -> dict[str, np.ndarray]:
    """One chunk's RC columns (int64); endpoints numbered through `labels` (label ->
    number, extended in order of first use). `packet(row)`: the chunk's per-packet
    decode, if the caller keeps one (else rows are decoded here). Also the workers'
    decode (ibwire.scale) and the report's (report.bulk_read)."""
    part = {name: bi.ints(ch, _RENAMED.get(name, name)) for name, _ in COLUMNS
            if name not in _COMPUTED}
    uniq, inverse = bi.unique_rows(_endpoint_keys(ch))
    ids = np.array([labels.setdefault(_label(k.tobytes()), len(labels)) for k in uniq]
                   + [0], np.int64)
    ends = ids[inverse].reshape(len(ch), 2) if len(ch) else np.zeros((0, 2), np.int64)
    part["ibwire.src"], part["ibwire.dst"] = ends[:, 0], ends[:, 1]
    cm = {name: np.full(len(ch), -1, np.int64) for name in _CM}
    mads = np.flatnonzero(bi.ints(ch, "ibwire.offset.mad") >= 0)
    for i, pkt in bi.decoded(ch, mads, packet):
        for name in _CM:
            v = pkt.get(name)
            cm[name][i] = -1 if v is None else int(v)
    part.update(cm)
    return part
