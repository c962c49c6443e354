"""Flat numpy tables for the bulk kernels, all derived from the registry and the
protocol graph.

Nothing here types a header offset or a next-header number: layer sizes and field
positions come from `Layout.offsets()` / `Layout.size`, what follows each header
from `GRAPH` (`next_table`: link type, EtherType, IP protocol, UDP port, LNH, NxtHdr
and ERF type -> the kernel state of the next node), the opcode chain and the MAD
rule from `OPCODES` / `GRAPH`, CRC tables
from `ibwire.crc`, and the bytes the ICRC masks from `ibwire.crc`'s own mask
functions applied to zeroed headers (so the kernels mask exactly what the
per-packet decoder masks).

The graph can change after import (a new extended header, a RoCE port), and Numba
bakes global arrays into a compiled kernel (and `cache=True` would keep them), so
the graph-derived tables are built per `GRAPH.version` by functions (`layers`,
`next_table`, `kernel_tables`, `field_rows`) and passed to the kernels as
arguments. The old module names (`LAYOUTS`, `FIELD_ROWS`, `OP_CHAIN`, ...) read the
current version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ibwire import crc
from ibwire.constants import MAD_QPS
from ibwire.graph import BUILTIN_EXTENDED, GRAPH, MAD_OPCODES
from ibwire.headers import BTH, ERF, ETH_LAYOUTS, ETHERNET, GRH, IPV4, IPV6, LINK, LRH, UDP, VLAN
from ibwire.headers.carriers import SLL, SLL2
from ibwire.headers.opcodes import OPCODES
from ibwire.mad.header import MAD_HEADER

# Layers the placement kernel locates: the row of each in the per-packet layer-offset
# matrix. The built-in rows never move; extended headers declared later
# (`GRAPH.add_extended_header`) get rows after them, so codes and rows stay stable.
_FIXED_HEAD = (ERF, SLL, SLL2, ETHERNET, VLAN, IPV4, IPV6, UDP, LRH, GRH, BTH)
_FIXED_TAIL = (MAD_HEADER, LINK)

# Walk states of the placement kernel, also the values of the next-header table
# (`NEXT`): the node a value leads to, as the kernel's state. S_DONE: no edge, the
# walk stops; S_FALLBACK: a node the decoder has a step for and the kernel does not
# model, so the frame is handed over; S_VLAN, S_GRH: nodes the kernel handles inside
# another state (tags in S_ETYPE, the GRH of LNH 3 in S_IB).
(S_DONE, S_ETH, S_ETYPE, S_IP, S_UDP, S_ROCE1, S_IB, S_BTH, S_ERF, S_LINK, S_SLL,
 S_SLL2, S_ROCE2, S_VLAN, S_GRH, S_FALLBACK) = range(16)
NODE_STATE = {"eth": S_ETH, "ip": S_IP, "udp": S_UDP, "roce1": S_ROCE1, "roce2": S_ROCE2,
              "ib": S_IB, "bth": S_BTH, "erf": S_ERF, "ib_link": S_LINK, "sll": S_SLL,
              "sll2": S_SLL2, "vlan": S_VLAN, "grh": S_GRH}
# Nodes the decoder steps into that have no column layers: their frames stay in the
# kernel, which shows the layers before them (MAC Control, as the decoder's fields
# other than those layers are not columns).
_NOT_HANDED_OVER = frozenset({"macc"})
# Rows of `NEXT`: which header's deciding field indexes the row.
N_LINKTYPE, N_ETYPE, N_IP4, N_IP6, N_UDP, N_LNH, N_NXTHDR, N_ERF, N_ERF_SKIP = range(9)
_ROW_EDGE = {N_ETYPE: ETHERNET.name, N_IP4: IPV4.name, N_IP6: IPV6.name, N_UDP: UDP.name,
             N_LNH: LRH.name, N_NXTHDR: GRH.name, N_ERF: ERF.name}
NEXT_WIDTH = 1 << 16      # every 16-bit value (EtherType, UDP port) has a cell


@dataclass(frozen=True)
class Layers:
    """The layer rows, malformed codes and opcode tables of one graph version."""

    layouts: tuple
    names: tuple[str, ...]
    index: dict[str, int]
    size: np.ndarray           # int32 per layer row
    malformed_names: tuple[str, ...]
    malformed: dict[str, int]
    layer_mal: np.ndarray      # int32: layer row -> malformed code of its truncation
    op_chain: np.ndarray       # (256, max chain) layer rows, -1 = end
    op_size: np.ndarray        # int32: bytes of the opcode's extended headers
    op_payload: np.ndarray     # uint8: a payload follows the headers
    op_valid: np.ndarray       # uint8: the opcode is defined
    op_mad: np.ndarray         # uint8: a UD SEND Only that may carry a MAD
    mad_qps: np.ndarray        # int64: QP0, QP1


_CACHE: dict[Any, Any] = {}


def layers() -> Layers:
    """The tables of the current graph (rebuilt when `GRAPH.version` moves)."""
    key = ("layers", GRAPH.version)
    if key not in _CACHE:
        _CACHE[key] = _build_layers()
    return _CACHE[key]


def _build_layers() -> Layers:
    builtin = tuple(ETH_LAYOUTS[n] for n in BUILTIN_EXTENDED)
    added = tuple(lay for n, lay in ETH_LAYOUTS.items() if n not in BUILTIN_EXTENDED)
    lays = (*_FIXED_HEAD, *builtin, *_FIXED_TAIL, *added)
    names = tuple(lay.name for lay in lays)
    index = {name: i for i, name in enumerate(names)}
    mal_names = ("", "frame", "erf", "sll", "sll2", "eth", "vlan", "ip", "ipv6", "udp", "lrh",
                 "grh", "bth", *BUILTIN_EXTENDED, "payload", "icrc", "vcrc",
                 "infiniband_link", "link", "mad", "decoder", "other",
                 *(lay.name for lay in added))
    mal = {name: i for i, name in enumerate(mal_names)}
    layer_mal = np.array([mal.get(n, mal["other"]) for n in names], dtype=np.int32)
    width = max(1, max(len(op.headers) for op in OPCODES))
    chain = np.full((256, width), -1, dtype=np.int32)
    payload = np.zeros(256, dtype=np.uint8)
    valid = np.zeros(256, dtype=np.uint8)
    op_mad = np.zeros(256, dtype=np.uint8)
    for op in OPCODES:
        for k, name in enumerate(op.headers):
            chain[op.code, k] = index[name]
        payload[op.code] = op.payload
        valid[op.code] = op.valid
        op_mad[op.code] = op.code in MAD_OPCODES
    sizes = np.array([lay.size for lay in lays], dtype=np.int32)
    op_size = np.where(chain >= 0, sizes[np.maximum(chain, 0)], 0).sum(axis=1).astype(np.int32)
    return Layers(lays, names, index, sizes, mal_names, mal, layer_mal, chain, op_size,
                  payload, valid, op_mad,
                  np.array(MAD_QPS, dtype=np.int64))


def _state(node: str | None, steps: dict) -> int:
    if node is None:
        return S_DONE
    if node in NODE_STATE:
        return NODE_STATE[node]
    return S_FALLBACK if node in steps and node not in _NOT_HANDED_OVER else S_DONE


def next_table(roce_ports: frozenset[int]) -> np.ndarray:
    """`NEXT[row, value]`: the kernel state the value of a header's deciding field leads
    to, from the graph's edges (rows N_*). UDP: `roce_ports` (the run's) lead to
    RoCEv2; N_ERF_SKIP holds the bytes an ERF type skips before its frame."""
    from ibwire.decoder import STEPS

    key = ("next", GRAPH.version, roce_ports, tuple(STEPS))
    if key in _CACHE:
        return _CACHE[key]
    nxt = np.zeros((N_ERF_SKIP + 1, NEXT_WIDTH), dtype=np.int8)
    nxt[N_LINKTYPE, :] = S_FALLBACK     # link types the kernel does not model
    for lt, node in GRAPH.linktypes.items():
        if 0 <= lt < NEXT_WIDTH:
            nxt[N_LINKTYPE, lt] = _state(node, STEPS) if node in NODE_STATE else S_FALLBACK
    for row, lower in _ROW_EDGE.items():
        edge = GRAPH.edges[lower]
        for value, node in edge.table.items():
            if row == N_UDP and node == "roce2":
                continue              # RoCEv2 ports are the run's (below)
            nxt[row, value] = _state(node, STEPS)
        if row == N_ERF:
            for value, skip in edge.skip.items():
                nxt[N_ERF_SKIP, value] = skip
    for port in roce_ports:
        nxt[N_UDP, port] = S_ROCE2
    _CACHE[key] = nxt
    return nxt


class KernelTables(NamedTuple):
    """The arrays `place` takes after its frame arguments (`place(..., *tables)`):
    passed, never global, so a compiled kernel follows graph changes."""

    next: np.ndarray
    op_chain: np.ndarray
    op_payload: np.ndarray
    op_valid: np.ndarray
    op_mad: np.ndarray
    mad_qps: np.ndarray
    layer_size: np.ndarray
    layer_mal: np.ndarray


def kernel_tables(roce_ports: frozenset[int] | None = None) -> KernelTables:
    """Tables for `place` from the current graph; `roce_ports` default: the graph's."""
    lay = layers()
    ports = GRAPH.roce_ports() if roce_ports is None else frozenset(roce_ports)
    return KernelTables(next_table(ports), lay.op_chain, lay.op_payload, lay.op_valid,
                        lay.op_mad, lay.mad_qps, lay.size, lay.layer_mal)


def malformed_code(layer: str) -> int:
    """The code of a decoder `Malformed.layer` (MAD sub-layers count as "mad")."""
    mal = layers().malformed
    if layer in mal:
        return mal[layer]
    return mal["mad"] if layer.startswith(("mad", "smp", "sa", "rmpp")) else mal["other"]


# CRC tables: slicing-by-16 for CRC-32 (ICRC), slicing-by-8 for CRC-16 (VCRC).
def _slices(poly_reflected: int, n: int, dtype) -> np.ndarray:
    t = np.zeros((n, 256), dtype=np.uint64)
    t[0] = crc.reflected_table(poly_reflected)
    for k in range(1, n):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t.astype(dtype)


CRC32_T = _slices(crc.ICRC_POLY_REFLECTED, 16, np.int64)
CRC16_T = _slices(crc.VCRC_POLY_REFLECTED, 8, np.int64)

# ICRC masking, per encapsulation: the ones the ICRC input has where the packet
# has variant fields, from ibwire.crc applied to zeroed headers. Each template
# covers the headers from the first masked one through the BTH; `STANDIN` says
# whether eight ones (the LRH stand-in of RoCE) come first.
CRC_NONE, CRC_NATIVE, CRC_NATIVE_GRH, CRC_ROCE1, CRC_ROCE2_V4, CRC_ROCE2_V6 = range(6)


def _ormask(out: bytes, inp: bytes) -> np.ndarray:
    return np.frombuffer(bytes(a ^ b for a, b in zip(out, inp)), dtype=np.uint8)


def _templates() -> tuple[np.ndarray, np.ndarray]:
    zb = bytes(BTH.size)
    rows = {
        CRC_NATIVE: _ormask(crc.icrc_input_native(bytes(LRH.size) + zb, LRH.size + BTH.size,
                                                  False), bytes(LRH.size + BTH.size)),
        CRC_NATIVE_GRH: _ormask(crc.icrc_input_native(
            bytes(LRH.size + GRH.size) + zb, LRH.size + GRH.size + BTH.size, True),
            bytes(LRH.size + GRH.size + BTH.size)),
        CRC_ROCE1: _ormask(crc.icrc_input_roce1(bytes(GRH.size) + zb),
                           crc.LRH_STANDIN + bytes(GRH.size + BTH.size))[LRH.size:],
    }
    for kind, ip in ((CRC_ROCE2_V4, bytes([0x40]) + bytes(IPV4.size - 1)),
                     (CRC_ROCE2_V6, bytes([0x60]) + bytes(IPV6.size - 1))):
        rest = bytes(UDP.size + BTH.size)
        rows[kind] = _ormask(crc.icrc_input_roce2(ip, rest), crc.LRH_STANDIN + ip + rest)[
            LRH.size:]
    width = max(len(r) for r in rows.values())
    tmpl = np.zeros((6, width), dtype=np.uint8)
    lens = np.zeros(6, dtype=np.int32)
    for kind, r in rows.items():
        tmpl[kind, :len(r)] = r
        lens[kind] = len(r)
    return tmpl, lens


CRC_TMPL, CRC_TMPL_LEN = _templates()
STANDIN_LEN = len(crc.LRH_STANDIN)
# The stand-in's contribution is constant: the CRC register after eight ones.
STANDIN_CRC = crc.crc32(crc.LRH_STANDIN) ^ 0xFFFFFFFF


# -- field rows for the extraction kernel --------------------------------------
K_U8, K_U16, K_U32, K_U64, K_B16 = range(5)
KIND_DTYPE = (np.uint8, np.uint16, np.uint32, np.uint64, np.uint8)


@dataclass(frozen=True)
class FieldRow:
    """One column the extraction kernel fills: `name` from `layout`'s field."""

    name: str        # public (registry) name
    layer: int       # row in the layer-offset matrix
    offset: int      # byte offset in the layer
    nbytes: int
    shift: int
    mask: int
    kind: int        # K_U8 ... K_B16 (16 raw bytes: GIDs, IPv6 addresses)
    field: object    # the registry Field


def _kind(bits: int) -> int:
    return K_U8 if bits <= 8 else K_U16 if bits <= 16 else K_U32 if bits <= 32 else K_U64


def field_rows() -> dict[str, list[FieldRow]]:
    """Registry field name -> where the extraction kernel reads it (current graph)."""
    key = ("fields", GRAPH.version)
    if key not in _CACHE:
        _CACHE[key] = _rows(layers().layouts)
    return _CACHE[key]


def _rows(layouts: tuple) -> dict[str, list[FieldRow]]:
    out: dict[str, list[FieldRow]] = {}
    for li, lay in enumerate(layouts):
        offs = lay.offsets()
        for f in lay.fields:
            if not f.wsname or f.derive is not None or f.reserved and f.kind != "int":
                continue
            if f.kind == "int":
                off, nb, shift, mask = offs[f.name]
                row = FieldRow(f.wsname, li, off, nb, shift, mask, _kind(f.bits), f)
            elif f.kind in ("ipv4", "ether"):
                nb = f.bits // 8
                row = FieldRow(f.wsname, li, f.offset, nb, 0, (1 << f.bits) - 1,
                               _kind(f.bits), f)
            elif f.kind == "ipv6":
                row = FieldRow(f.wsname, li, f.offset, 16, 0, 0, K_B16, f)
            else:
                continue
            out.setdefault(f.wsname, []).append(row)
    return out



# The names older callers import; each is the current graph's (module __getattr__).
_CURRENT = {
    "LAYOUTS": lambda: layers().layouts, "LAYER_NAMES": lambda: layers().names,
    "LAYER": lambda: layers().index, "N_LAYERS": lambda: len(layers().names),
    "LAYER_SIZE": lambda: layers().size, "OP_CHAIN": lambda: layers().op_chain,
    "OP_PAYLOAD": lambda: layers().op_payload, "OP_VALID": lambda: layers().op_valid,
    "MALFORMED_NAMES": lambda: layers().malformed_names,
    "MALFORMED": lambda: layers().malformed, "FIELD_ROWS": field_rows,
}


def __getattr__(name: str) -> Any:
    if name in _CURRENT:
        return _CURRENT[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
