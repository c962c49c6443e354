"""Extended transport headers (IBA Vol. 1 §9.3; FETH from Annex A19).

Each is a fixed-size layout; which of them follow a BTH is decided by the opcode
table (`opcodes.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ibwire.fields import (
    DEC_HEX,
    DOUBLE,
    HEX,
    UINT8,
    UINT32,
    UINT64,
    Layout,
    derived,
    overlay,
    raw,
    rsv,
    uint,
)

RDETH = Layout("rdeth", "infiniband.rdeth", "Reliable Datagram Extended Transport Header", [
    rsv("reserved", 8),
    uint("eecnxt", 24, "E2E Context"),
])

DETH = Layout("deth", "infiniband.deth", "Datagram Extended Transport Header", [
    uint("q_key", 32, "Queue Key", ftype=UINT64, base=HEX),
    rsv("reserved", 8),
    uint("srcqp", 24, "Source Queue Pair", ftype=UINT32, base=HEX),
])

XRCETH = Layout("xrceth", "infiniband.xrceth", "XRC Extended Transport Header", [
    rsv("reserved", 8),
    uint("xrcsrq", 24, "XRC Shared Receive Queue", base=HEX),
])

RETH = Layout("reth", "infiniband.reth", "RDMA Extended Transport Header", [
    uint("va", 64, "Virtual Address", base=HEX),
    uint("r_key", 32, "Remote Key", base=HEX),
    uint("dmalen", 32, "DMA Length", base=DEC_HEX),
])

# Wireshark names the address and key of an AtomicETH as the RETH's.
AtomicETH = Layout("atomiceth", "infiniband.atomiceth", "Atomic Extended Transport Header", [
    uint("va", 64, "Virtual Address", base=HEX, wsname="infiniband.reth.va"),
    uint("r_key", 32, "Remote Key", base=HEX, wsname="infiniband.reth.r_key"),
    uint("swapdt", 64, "Swap (Or Add) Data"),
    uint("cmpdt", 64, "Compare Data"),
])

SYNDROME_TYPES = {0: "ACK", 1: "RNR NAK", 2: "Reserved", 3: "NAK"}
NAK_CODES = {
    0: "PSN Sequence Error", 1: "Invalid Request", 2: "Remote Access Error",
    3: "Remote Operational Error", 4: "Invalid RD Request",
}
# AETH credit code -> receive WQEs advertised; code 31 means "no credit information".
CREDITS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
           1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)
# Minimum RNR NAK timer per code, in microseconds (code 0 is the longest).
RNR_TIMER_US = (655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
                1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
                81920, 122880, 163840, 245760, 327680, 491520)


def _syn_type(v: Mapping[str, Any]) -> int:
    return syndrome_part(v["syndrome"], "syndrome_type")


def _syn_value(v: Mapping[str, Any]) -> int:
    return syndrome_part(v["syndrome"], "credit_count")   # credit, timer or NAK code


def _credits(v: Mapping[str, Any]) -> int | None:
    code = _syn_value(v)
    return CREDITS[code] if _syn_type(v) == 0 and code < len(CREDITS) else None


def _rnr_ms(v: Mapping[str, Any]) -> float | None:
    return RNR_TIMER_US[_syn_value(v)] / 1000 if _syn_type(v) == 1 else None


AETH = Layout("aeth", "infiniband.aeth", "ACK Extended Transport Header", [
    uint("syndrome", 8, "Syndrome", ftype=UINT8),
    uint("msn", 24, "Message Sequence Number"),
    overlay("syndrome_reserved", 0, 1, "Reserved", ftype=UINT8,
            wsname="infiniband.aeth.syndrome.reserved"),
    overlay("syndrome_type", 1, 2, "Opcode", ftype=UINT8, values=SYNDROME_TYPES,
            wsname="infiniband.aeth.syndrome.opcode"),
    overlay("credit_count", 3, 5, "Credit Count", ftype=UINT8,
            wsname="infiniband.aeth.syndrome.credit_count",
            present=lambda v: _syn_type(v) == 0),
    overlay("timer", 3, 5, "Timer", ftype=UINT8, wsname="infiniband.aeth.syndrome.timer",
            present=lambda v: _syn_type(v) == 1),
    overlay("reserved_value", 3, 5, "Reserved", ftype=UINT8,
            wsname="infiniband.aeth.syndrome.reserved_value",
            present=lambda v: _syn_type(v) == 2),
    overlay("error_code", 3, 5, "Error Code", ftype=UINT8, values=NAK_CODES,
            wsname="infiniband.aeth.syndrome.error_code",
            present=lambda v: _syn_type(v) == 3),
    derived("credits", _credits, "Credits (receive WQEs advertised)", ftype=UINT32,
            present=lambda v: _syn_type(v) == 0 and _syn_value(v) < len(CREDITS)),
    derived("rnr_timer_ms", _rnr_ms, "Minimum RNR NAK timer (ms)", ftype=DOUBLE,
            present=lambda v: _syn_type(v) == 1),
])

SyndromeValue = TypeVar("SyndromeValue")   # an int or a numpy integer array
_KINDS = {name: code for code, name in SYNDROME_TYPES.items()}
SYN_ACK, SYN_RNR_NAK, SYN_NAK = _KINDS["ACK"], _KINDS["RNR NAK"], _KINDS["NAK"]


def syndrome_part(syndrome: SyndromeValue, name: str) -> SyndromeValue:
    """Overlay field `name` of the AETH (`syndrome_type`, `credit_count`, `timer`,
    `error_code`) from syndrome byte value(s) (ints or numpy arrays): the split of
    the byte is the layout's, written once."""
    _, _, shift, mask = AETH.offsets()[name]
    return (syndrome >> shift) & mask


AtomicAckETH = Layout("atomicacketh", "infiniband.atomicacketh",
                      "Atomic ACK Extended Transport Header", [
    uint("origremdt", 64, "Original Remote Data"),
])

ImmDt = Layout("immdt", "infiniband.immdt", "Immediate Data", [
    uint("data", 32, "Immediate Data", base=HEX),
])

IETH = Layout("ieth", "infiniband.ieth", "Invalidate Extended Transport Header", [
    uint("r_key", 32, "RKey", base=HEX),
])

FLUSH_SEL = {0: "Memory Range", 1: "Memory Region"}
FETH = Layout("feth", "infiniband.feth", "Flush Extended Transport Header", [
    rsv("reserved", 26),
    uint("sel", 2, "Selectivity Level", ftype=UINT8, values=FLUSH_SEL),
    uint("plt", 4, "Placement Type", ftype=UINT8, base=HEX),
])

# RoCEv2 CNPs carry 16 reserved bytes after the BTH.
CNP_PAD = Layout("cnp", "infiniband.cnp", "Congestion Notification Padding", [
    raw("reserved", 16, "Reserved", wsname=None, reserved=True),
])

ETH_LAYOUTS = {lay.name: lay for lay in (
    RDETH, DETH, XRCETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, CNP_PAD)}
