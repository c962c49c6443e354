"""Flat numpy tables for the bulk kernels, all derived from the registry.

Nothing here types a header offset: layer sizes and field positions come from
`Layout.offsets()` / `Layout.size`, the opcode chain from `OPCODES`, CRC tables
from `ibwire.crc`, and the bytes the ICRC masks from `ibwire.crc`'s own mask
functions applied to zeroed headers (so the kernels mask exactly what the
per-packet decoder masks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibwire import crc
from ibwire.headers import (
    BTH,
    ERF,
    ETH_LAYOUTS,
    ETHERNET,
    GRH,
    IPV4,
    IPV6,
    LINK,
    LRH,
    OPCODES,
    UDP,
    VLAN,
)
from ibwire.headers.carriers import SLL, SLL2
from ibwire.mad.header import MAD_HEADER

# Layers the placement kernel locates, in a fixed order: the row of each in the
# per-packet layer-offset matrix. ETH_LAYOUTS keeps the wire order of the chain.
LAYOUTS = (ERF, SLL, SLL2, ETHERNET, VLAN, IPV4, IPV6, UDP, LRH, GRH, BTH,
           *ETH_LAYOUTS.values(), MAD_HEADER, LINK)
LAYER_NAMES = tuple(lay.name for lay in LAYOUTS)
LAYER = {name: i for i, name in enumerate(LAYER_NAMES)}
N_LAYERS = len(LAYOUTS)
LAYER_SIZE = np.array([lay.size for lay in LAYOUTS], dtype=np.int32)

# Opcode -> extended headers: a (256, MAX_CHAIN) table of layer rows (-1 = end),
# whether a payload follows, and whether the opcode is defined.
MAX_CHAIN = max(len(op.headers) for op in OPCODES)
OP_CHAIN = np.full((256, max(MAX_CHAIN, 1)), -1, dtype=np.int32)
OP_PAYLOAD = np.zeros(256, dtype=np.uint8)
OP_VALID = np.zeros(256, dtype=np.uint8)
for _op in OPCODES:
    for _k, _name in enumerate(_op.headers):
        OP_CHAIN[_op.code, _k] = LAYER[_name]
    OP_PAYLOAD[_op.code] = _op.payload
    OP_VALID[_op.code] = _op.valid

# Malformed codes: the layer of the first problem (the decoder's `Malformed.layer`).
MALFORMED_NAMES = ("", "frame", "erf", "sll", "sll2", "eth", "vlan", "ip", "ipv6", "udp", "lrh",
                   "grh", "bth", *ETH_LAYOUTS, "payload", "icrc", "vcrc", "infiniband_link",
                   "link", "mad", "decoder", "other")
MALFORMED = {name: i for i, name in enumerate(MALFORMED_NAMES)}


def malformed_code(layer: str) -> int:
    """The code of a decoder `Malformed.layer` (MAD sub-layers count as "mad")."""
    if layer in MALFORMED:
        return MALFORMED[layer]
    return MALFORMED["mad"] if layer.startswith(("mad", "smp", "sa", "rmpp")) else \
        MALFORMED["other"]


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


def _rows() -> dict[str, list[FieldRow]]:
    out: dict[str, list[FieldRow]] = {}
    for li, lay in enumerate(LAYOUTS):
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


FIELD_ROWS = _rows()
