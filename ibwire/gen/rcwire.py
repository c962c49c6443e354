"""RC vocabulary shared by the requester and responder models.

What a message is (`Msg`), how many PSNs it consumes, which opcode each of its
packets carries, and the headers that go on the wire for a transport packet
(`RcInfo` -> BTH + ETHs). PSN arithmetic is 24-bit modular (protocol-facts §7.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibwire.fields import Header
from ibwire.headers.bth import BTH
from ibwire.headers.extended import AETH, IETH, RETH, AtomicAckETH, AtomicETH, ImmDt

PSN_MOD = 1 << 24
PSN_MASK = PSN_MOD - 1


def psn_add(a: int, n: int) -> int:
    return (a + n) & PSN_MASK


def psn_diff(a: int, b: int) -> int:
    """Signed distance a - b on the 24-bit circle (negative: a is before b)."""
    return ((a - b + (1 << 23)) & PSN_MASK) - (1 << 23)


# Work-request kinds and their opcodes: (first, middle, last, only).
SEND_OPS = {
    "send": (0x00, 0x01, 0x02, 0x04),
    "send_imm": (0x00, 0x01, 0x03, 0x05),
    "send_inv": (0x00, 0x01, 0x16, 0x17),
    "write": (0x06, 0x07, 0x08, 0x0A),
    "write_imm": (0x06, 0x07, 0x09, 0x0B),
}
READ, CMP_SWAP, FETCH_ADD = "read", "cmp_swap", "fetch_add"
ATOMICS = {CMP_SWAP: 0x13, FETCH_ADD: 0x14}
OPS = tuple(SEND_OPS) + (READ, CMP_SWAP, FETCH_ADD)

OP_READ_REQ, OP_ACK, OP_ATOMIC_ACK = 0x0C, 0x11, 0x12
RESP_FIRST, RESP_MIDDLE, RESP_LAST, RESP_ONLY = 0x0D, 0x0E, 0x0F, 0x10
# Opcodes that consume a receive WQE at the responder (and so can draw an RNR NAK).
NEEDS_RQ = frozenset({0x00, 0x04, 0x05, 0x17, 0x09, 0x0B})
# Opcodes after which a message is complete at the responder (MSN += 1).
MSG_END = frozenset({0x02, 0x03, 0x04, 0x05, 0x16, 0x17, 0x08, 0x09, 0x0A, 0x0B,
                     0x0C, 0x13, 0x14})
MSG_START = frozenset({0x00, 0x04, 0x05, 0x17, 0x06, 0x0A, 0x0B, 0x0C, 0x13, 0x14})
WITH_RETH = frozenset({0x06, 0x0A, 0x0B, 0x0C})
WITH_IMM = frozenset({0x03, 0x05, 0x09, 0x0B})
WITH_IETH = frozenset({0x16, 0x17})
WITH_AETH = frozenset({RESP_FIRST, RESP_LAST, RESP_ONLY, OP_ACK, OP_ATOMIC_ACK})
RESPONSES = frozenset({RESP_FIRST, RESP_MIDDLE, RESP_LAST, RESP_ONLY, OP_ACK, OP_ATOMIC_ACK})

SYN_ACK_UNLIMITED = 0x1F
SYN_RNR = 0x20
SYN_NAK_SEQ = 0x60


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


def rc_headers(info: RcInfo, destqp: int, pkey: int = 0xFFFF) -> list[Header]:
    """BTH and extended headers, in wire order, for an RC packet."""
    op = info.opcode
    hdrs: list[Header] = [BTH(opcode=op, se=int(info.se), m=1, p_key=pkey,
                              fecn=int(info.fecn), becn=int(info.becn), destqp=destqp,
                              a=int(info.ackreq), psn=info.psn)]
    if op in WITH_RETH:
        hdrs.append(RETH(va=info.va, r_key=info.rkey, dmalen=info.dmalen))
    elif op in ATOMICS.values():
        hdrs.append(AtomicETH(va=info.va, r_key=info.rkey, swapdt=info.swap, cmpdt=info.cmp))
    if op in WITH_AETH:
        hdrs.append(AETH(syndrome=info.syndrome, msn=info.msn))
    if op == OP_ATOMIC_ACK:
        hdrs.append(AtomicAckETH(origremdt=info.orig))
    if op in WITH_IMM:
        hdrs.append(ImmDt(data=info.imm))
    elif op in WITH_IETH:
        hdrs.append(IETH(r_key=info.inv_rkey))
    return hdrs


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
