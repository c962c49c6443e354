"""RC vocabulary shared by the requester and responder models.

What a message is (`Msg`), how many PSNs it consumes, which opcode each of its
packets carries, and the headers that go on the wire for a transport packet
(`RcInfo` -> BTH + ETHs). PSN arithmetic is 24-bit modular (protocol-facts §7.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ibwire.fields import Header
from ibwire.graph import GRAPH
from ibwire.headers.bth import BTH
from ibwire.headers.extended import AETH, SYNDROME_TYPES
from ibwire.headers.opcodes import OPCODES

PSN_MOD = 1 << 24
PSN_MASK = PSN_MOD - 1


def psn_add(a: int, n: int) -> int:
    return (a + n) & PSN_MASK


def psn_diff(a: int, b: int) -> int:
    """Signed distance a - b on the 24-bit circle (negative: a is before b)."""
    return ((a - b + (1 << 23)) & PSN_MASK) - (1 << 23)


# Opcodes come from the opcode table by name (`headers.opcodes.OPCODES`); which
# extended headers an opcode carries comes from the protocol graph (`GRAPH.chain`).
def rc_opcode(name: str) -> int:
    """The RC opcode whose operation is called `name` ("RDMA Write First", ...)."""
    for op in OPCODES:
        if op.transport == "RC" and op.valid and op.name == name:
            return op.code
    raise KeyError(f"no RC opcode named {name!r}")


def _message_opcodes(message: str, last: str = "Last", only: str = "Only"
                     ) -> tuple[int, int, int, int]:
    """(first, middle, last, only) opcodes of a multi-packet message kind."""
    return (rc_opcode(f"{message} First"), rc_opcode(f"{message} Middle"),
            rc_opcode(f"{message} {last}"), rc_opcode(f"{message} {only}"))


# Work-request kinds and their opcodes: (first, middle, last, only).
SEND_OPS = {
    "send": _message_opcodes("Send"),
    "send_imm": _message_opcodes("Send", "Last with Immediate", "Only with Immediate"),
    "send_inv": _message_opcodes("Send", "Last with Invalidate", "Only with Invalidate"),
    "write": _message_opcodes("RDMA Write"),
    "write_imm": _message_opcodes("RDMA Write", "Last with Immediate", "Only with Immediate"),
}
READ, CMP_SWAP, FETCH_ADD = "read", "cmp_swap", "fetch_add"
ATOMICS = {CMP_SWAP: rc_opcode("CmpSwap"), FETCH_ADD: rc_opcode("FetchAdd")}
OPS = tuple(SEND_OPS) + (READ, CMP_SWAP, FETCH_ADD)

OP_READ_REQ = rc_opcode("RDMA Read Request")
OP_ACK, OP_ATOMIC_ACK = rc_opcode("Acknowledge"), rc_opcode("Atomic Acknowledge")
RESP_FIRST, RESP_MIDDLE, RESP_LAST, RESP_ONLY = _message_opcodes("RDMA Read Response")

# Requests the generator sends; single-packet ones both start and end a message.
_SINGLE = frozenset({OP_READ_REQ, *ATOMICS.values()})
_MULTI = frozenset(op for ops in SEND_OPS.values() for op in ops)


def _position(code: int) -> str:
    """First, Middle, Last or Only: where a packet of this opcode sits in its message."""
    words = OPCODES[code].name.split()
    return next((w for w in words if w in ("First", "Middle", "Last", "Only")), "Only")


MSG_START = frozenset(op for op in _MULTI if _position(op) in ("First", "Only")) | _SINGLE
# Opcodes after which a message is complete at the responder (MSN += 1).
MSG_END = frozenset(op for op in _MULTI if _position(op) in ("Last", "Only")) | _SINGLE
# Opcodes that consume a receive WQE at the responder (and so can draw an RNR NAK):
# the start of a SEND, and the end of an RDMA WRITE with immediate (IBA §9.7.5.1).
NEEDS_RQ = frozenset(
    op for op in _MULTI
    if (OPCODES[op].name.startswith("Send") and op in MSG_START)
    or (OPCODES[op].name.startswith("RDMA Write") and "immdt" in GRAPH.chain(op)))
RESPONSES = frozenset(op.code for op in OPCODES if op.transport == "RC" and op.is_response)

# AETH syndrome: the type and 5-bit value are the AETH layout's overlay fields.
_SYN_TYPE = AETH.offsets()["syndrome_type"]     # (byte, nbytes, shift, mask)
_SYN_VALUE = AETH.offsets()["credit_count"]     # the same bits as timer / error code
SYN_TYPE_ACK, SYN_TYPE_RNR, SYN_TYPE_NAK = (next(k for k, v in SYNDROME_TYPES.items()
                                                 if v == name)
                                            for name in ("ACK", "RNR NAK", "NAK"))


def syndrome_type(syndrome: int) -> int:
    """ACK (0), RNR NAK (1), reserved (2) or NAK (3)."""
    return (syndrome >> _SYN_TYPE[2]) & _SYN_TYPE[3]


def syndrome_value(syndrome: int) -> int:
    """Credit count, RNR timer code or NAK code."""
    return (syndrome >> _SYN_VALUE[2]) & _SYN_VALUE[3]


def make_syndrome(kind: int, value: int) -> int:
    return ((kind & _SYN_TYPE[3]) << _SYN_TYPE[2]) | ((value & _SYN_VALUE[3]) << _SYN_VALUE[2])


SYN_ACK_UNLIMITED = make_syndrome(SYN_TYPE_ACK, _SYN_VALUE[3])   # credit code 31: no credit info
SYN_RNR = make_syndrome(SYN_TYPE_RNR, 0)
SYN_NAK_SEQ = make_syndrome(SYN_TYPE_NAK, 0)                      # PSN sequence error


def npsn(op: str, length: int, pmtu: int) -> int:
    """PSNs a message consumes: one per packet; a READ as many as its responses."""
    if op in ATOMICS:
        return 1
    return max(1, -(-length // pmtu))


def packet_opcode(op: str, k: int, n: int) -> int:
    """Opcode of packet k (0-based) of an n-packet SEND/WRITE message."""
    first, middle, last, only = SEND_OPS[op]
    if n == 1:
        return only
    return first if k == 0 else last if k == n - 1 else middle


def read_response_opcode(k: int, n: int) -> int:
    if n == 1:
        return RESP_ONLY
    return RESP_FIRST if k == 0 else RESP_LAST if k == n - 1 else RESP_MIDDLE


@dataclass(eq=False)
class Msg:
    """One work request on a requester's send queue."""

    wr: int
    op: str
    length: int
    npsn: int
    va: int = 0
    rkey: int = 0
    imm: int = 0
    inv_rkey: int = 0
    swap: int = 0
    cmp: int = 0
    first_psn: int = -1
    progress: int = 0           # READ: responses accepted; others unused
    done: bool = False
    result: int | None = None   # atomic: original remote value
    started_ns: int = -1
    completed_ns: int = -1

    @property
    def last_psn(self) -> int:
        return psn_add(self.first_psn, self.npsn - 1)

    @property
    def is_read(self) -> bool:
        return self.op == READ

    @property
    def needs_response(self) -> bool:
        """READ and atomics complete only by their own responses, not by ACKs."""
        return self.op == READ or self.op in ATOMICS

    def describe(self) -> dict:
        return {"wr": self.wr, "op": self.op, "length": self.length,
                "first_psn": self.first_psn, "npsn": self.npsn}


@dataclass(slots=True)
class RcInfo:
    """The meaning of one RC transport packet (what the headers will say)."""

    opcode: int
    psn: int
    ackreq: bool = False
    se: bool = False
    syndrome: int = -1
    msn: int = 0
    va: int = 0
    rkey: int = 0
    dmalen: int = 0
    swap: int = 0
    cmp: int = 0
    orig: int = 0
    imm: int = 0
    inv_rkey: int = 0
    plen: int = 0               # payload bytes
    poff: int = 0               # payload offset within the message (pattern position)
    fecn: bool = False
    becn: bool = False
    extra: dict = field(default_factory=dict)


# Extended header layout name -> its values for an RC packet. A header the graph puts
# in a chain that is not listed here goes on the wire with its layout's defaults.
_ETH_VALUES: dict[str, Callable[[RcInfo], dict[str, Any]]] = {
    "reth": lambda i: {"va": i.va, "r_key": i.rkey, "dmalen": i.dmalen},
    "atomiceth": lambda i: {"va": i.va, "r_key": i.rkey, "swapdt": i.swap, "cmpdt": i.cmp},
    "aeth": lambda i: {"syndrome": i.syndrome, "msn": i.msn},
    "atomicacketh": lambda i: {"origremdt": i.orig},
    "immdt": lambda i: {"data": i.imm},
    "ieth": lambda i: {"r_key": i.inv_rkey},
}


def transport_headers(opcode: int, values: Mapping[str, Mapping[str, Any]] | None = None,
                      **bth: Any) -> list[Header]:
    """BTH (`bth` values) and the opcode's extended-header chain from the protocol graph,
    in wire order, each filled from `values[<layout name>]` (else its defaults)."""
    values = values or {}
    return [BTH(opcode=opcode, **bth)] + [GRAPH.extended_layout(name)(**values.get(name, {}))
                                          for name in GRAPH.chain(opcode)]


def rc_headers(info: RcInfo, destqp: int, pkey: int = 0xFFFF) -> list[Header]:
    """BTH and extended headers, in wire order, for an RC packet."""
    op = info.opcode
    values = {name: _ETH_VALUES[name](info) for name in GRAPH.chain(op) if name in _ETH_VALUES}
    return transport_headers(op, values, se=int(info.se), m=1, p_key=pkey,
                             fecn=int(info.fecn), becn=int(info.becn), destqp=destqp,
                             a=int(info.ackreq), psn=info.psn)


# Payload bytes: printable text so no payload heuristic (RPC-over-RDMA, SMB Direct,
# NVMe-oF, iSER...) mistakes a generated payload for its protocol.
_PATTERN = (b"ibwire simulated RDMA payload; "
            b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789. ") * 160


def payload(offset: int, n: int) -> bytes:
    """n pattern bytes as seen at byte `offset` of a message or memory region."""
    start = offset % 97
    if n <= len(_PATTERN) - start:
        return _PATTERN[start:start + n]
    reps = -(-(start + n) // len(_PATTERN))
    return (_PATTERN * reps)[start:start + n]
