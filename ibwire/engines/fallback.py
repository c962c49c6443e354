"""Frames the kernels hand over: decoded one by one, their values written into the
chunk's arrays, so a column always equals the per-packet decode.

The kernels flag (`ibwire.fallback`) every frame the decoder would mark malformed,
whose payload a payload decoder may claim (UD SENDs: MADs, IPoIB), or whose
encapsulation they do not model (IPoIB link type, raw LRH packets, ERF extension
headers ...). `fill` decodes exactly those with `ibwire.decode` (same options) and
overwrites their rows: layer offsets, payload, CRC statuses, malformed code and
every requested field column (its first occurrence, as `Packet.get`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.capture.frame import Frame
from ibwire.decoder import Options, decode
from ibwire.engines.place import IB_OFF, MAL, PAY_LEN, PAY_OFF
from ibwire.engines.tables import layers, malformed_code
from ibwire.packet import Packet


def decode_row(batch: Any, i: int, options: Options | None) -> Packet:
    """The per-packet decode of row i of a batch."""
    b = int(batch.doff[i])
    data = bytes(batch.buf[b:b + int(batch.cap[i])])
    frame = Frame(index=batch.first + i, ts_ns=int(batch.ts[i]), linktype=int(batch.lt[i]),
                  data=data, wire_len=int(batch.wire[i]), interface=int(batch.ifc[i]),
                  offset=int(batch.roff[i]))
    return decode(data, frame.linktype, frame=frame, options=options)


def _value(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return v if len(v) == 16 else int.from_bytes(v, "big")
    return int(v)


def fill(chunk: Any, rows: np.ndarray, options: Options | None) -> None:
    """Overwrite the given rows of a chunk with the per-packet decoder's results."""
    index = layers().index
    for i in rows:
        pkt = decode_row(chunk.batch, int(i), options)
        seen: set[str] = set()
        chunk.lo[:, i] = -1
        for lay in pkt.layers:
            name = lay.layout.name
            if name in seen or name not in index:
                continue
            seen.add(name)
            chunk.lo[index[name], i] = lay.offset
        info = chunk.info
        info[PAY_OFF, i] = pkt.payload_offset
        info[PAY_LEN, i] = len(pkt.payload) if pkt.payload_offset >= 0 else 0
        info[IB_OFF, i] = pkt.ib_offset
        info[MAL, i] = malformed_code(pkt.problems[0].layer) if pkt.problems else 0
        if chunk.crc is not None:
            ist, vst, lst, ival, vval = chunk.crc
            ist[i], vst[i], lst[i] = pkt.icrc_status, pkt.vcrc_status, pkt.lpcrc_status
            ival[i] = int.from_bytes(pkt.icrc, "big") if pkt.icrc else 0
            vval[i] = int.from_bytes(pkt.vcrc, "big") if pkt.vcrc else 0
        for name, arr in chunk.values.items():
            vals = pkt.values_of(name)
            pres = chunk.present.get(name)
            if vals:
                arr[i] = np.frombuffer(vals[0], np.uint8) if arr.ndim == 2 else _value(vals[0])
            else:
                arr[i] = 0
            if pres is not None:
                pres[i] = bool(vals)
