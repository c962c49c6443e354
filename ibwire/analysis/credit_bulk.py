"""The credit/congestion analyses' columns from the bulk path (see
`credit_input.credit_columns`).

Integer columns are the bulk engine's columns (absent -1). Computed here, vectorised:
`infiniband.aeth.credits` from the AETH syndrome (the registry's derived field:
credit code through `CREDITS`, present for ACKs with a code other than 31), and
the CRC status fields as the decoder reports them: ICRC and LPCRC status only
when a CRC was found or expected-but-uncaptured (never "not present"), the VCRC
status also "not present" for a native packet whose VCRC is not captured.
Addresses are formatted once per distinct value with the registry's formatter.
Decoded per packet: frames whose EtherType is MAC Control (PFC fields are not
bulk columns) and malformed frames (their CRC reporting depends on where the
problem is).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ibwire.analysis import bulk_input as bi
from ibwire.analysis.credit_input import (
    INT_COLUMNS,
    STRING_COLUMNS,
    TIME_COLUMN,
    _value,
    credit_columns_per_packet,
)
from ibwire.cli.tshark_text import format_field
from ibwire.constants import ETHERTYPE_MAC_CONTROL
from ibwire.crc import CrcStatus
from ibwire.headers.extended import CREDITS, SYN_ACK, syndrome_part
from ibwire.packet import Packet

_MACC = [name for name, _ in INT_COLUMNS if name.startswith("macc.")]
_CREDITS = "infiniband.aeth.credits"
_STATUS = ("infiniband.invariant.crc.status", "infiniband.variant.crc.status",
           "infiniband_link.lpcrc.status")
_SYNDROME = "infiniband.aeth.syndrome"
_LRH = "ibwire.offset.lrh"
_MALFORMED = "ibwire.malformed.code"
_ETHERTYPES = ("eth.type", "vlan.etype", "sll.etype")
_COMPUTED = {_CREDITS, *_MACC}
# Bytes of each address column's value (as the decoder returns it).
_WIDTH = {"ip.src": 4, "ip.dst": 4, "ipv6.src": 16, "ipv6.dst": 16, "eth.src": 6, "eth.dst": 6}
FIELDS = sorted({TIME_COLUMN, _SYNDROME, _LRH, _MALFORMED, *_ETHERTYPES, *STRING_COLUMNS}
                | {n for n, _ in INT_COLUMNS if n not in _COMPUTED})
# The joined columns' dtypes.
DTYPES: dict[str, object] = {TIME_COLUMN: np.int64, **dict(INT_COLUMNS),
                             **{name: object for name in STRING_COLUMNS}}
# Credit code 31: no credit information (`CREDITS` has the 31 codes before it).
_CREDIT_OF = np.array([*CREDITS, -1], np.int64)


def _credits(ch: bi.Chunk) -> np.ndarray:
    syn = bi.ints(ch, _SYNDROME)
    ack = (syn >= 0) & (syndrome_part(syn, "syndrome_type") == SYN_ACK)
    return np.where(ack, _CREDIT_OF[syndrome_part(syn, "credit_count")], -1)


def chunk_columns(ch: bi.Chunk, packet: Callable[[int], Packet] | None = None
                  ) -> dict[str, np.ndarray]:
    """One chunk's columns (int64 and text; `bi.concat(parts, DTYPES)` joins them);
    `packet(row)`: the chunk's per-packet decode, if the caller keeps one. Also the
    workers' decode (ibwire.scale) and the report's (report.bulk_read)."""
    part = {TIME_COLUMN: bi.ints(ch, TIME_COLUMN)}
    for name, _ in INT_COLUMNS:
        if name not in _COMPUTED:
            part[name] = bi.ints(ch, name)
    for name in _STATUS:
        part[name][part[name] == CrcStatus.NOT_PRESENT] = -1
    vcrc = part[_STATUS[1]]
    vcrc[(vcrc < 0) & (bi.ints(ch, _LRH) >= 0)] = CrcStatus.NOT_PRESENT
    part[_CREDITS] = _credits(ch)
    odd = bi.ints(ch, _MALFORMED) != 0
    for name in _ETHERTYPES:
        odd |= bi.ints(ch, name) == ETHERTYPE_MAC_CONTROL
    for name in _MACC:
        part[name] = np.full(len(ch), -1, np.int64)
    for i, pkt in bi.decoded(ch, np.flatnonzero(odd), packet):
        for name in (*_MACC, *_STATUS):
            v = _value(pkt, name)
            part[name][i] = -1 if v is None or isinstance(v, (bytes, str)) else int(v)
    for name in STRING_COLUMNS:
        part[name] = bi.text_column(bi.big_endian(ch, name, _WIDTH[name]), bi.present(ch, name),
                                    lambda raw, name=name: format_field(name, raw))
    return part


def credit_columns_bulk(path: str, strict: bool = True) -> dict[str, np.ndarray]:
    """`credit_input.credit_columns` (a file object goes the per-packet way)."""
    if not isinstance(path, str | os.PathLike):
        return credit_columns_per_packet(path, strict)
    try:
        return _bulk(path, strict)
    except bi.ENGINE_ERRORS:
        return credit_columns_per_packet(path, strict)


def _bulk(path: str | os.PathLike[str], strict: bool) -> dict[str, np.ndarray]:
    parts = []
    for ch in bi.chunks(path, FIELDS, strict):
        if ch.batch.base < 0:
            # The record kernels met damage and the resynchronising reader took over;
            # these columns read a file strictly (`ibwire.read`), so read it that way.
            return credit_columns_per_packet(path, strict)
        parts.append(chunk_columns(ch))
    return bi.concat(parts, DTYPES)
