"""RC sequencing rules: the tables the engine (`ibwire.engines.rc_kernel`) runs on.

Everything that decides a classification lives here or in the kernel's small
functions; `docs/rc-analysis.md` states each rule with its source (IBA Vol. 1
§9.7, and where the specification leaves room, the Linux rxe driver's behaviour).

The kernel does not know which host it watches: it sees each half-connection
(requester -> responder) as two streams, requests and the responses to them, and
applies the same rules to every one.

* Opcode classes (`OPCLASS`, 256 entries, derived from `ibwire.headers.opcodes`):
  request or response, READ request, atomic request, READ response (and whether it
  carries the last PSN of the READ), ACK, atomic ACK, first/last packet of a
  message, and whether the opcode is on a reliable transport (RC/XRC) or not
  (UC: gap detection only; UD: counts only).
* AETH syndrome (§9.7.5.1.1, Table 44): bits 6..5 are the kind (0 ACK, 1 RNR NAK,
  3 NAK), bits 4..0 the credit count, RNR timer code or NAK code.
* Per-packet findings are bits of `flags` (FLAG_*), with names in `FLAG_NAMES`.
* Episode reasons (REASON_*) say what started a go-back-N restart.
"""

from __future__ import annotations

import numpy as np

from ibwire.headers.extended import CREDITS, NAK_CODES, RNR_TIMER_US
from ibwire.headers.opcodes import OPCODES

PSN_BITS = 24
PSN_MOD = 1 << PSN_BITS
PSN_HALF = 1 << (PSN_BITS - 1)

# -- opcode classes ---------------------------------------------------------------------
C_REQUEST = 1 << 0
C_RESPONSE = 1 << 1
C_READ_REQ = 1 << 2
C_ATOMIC_REQ = 1 << 3
C_READ_RESP = 1 << 4
C_ACK = 1 << 5
C_ATOMIC_ACK = 1 << 6
C_FIRST = 1 << 7          # first packet of a message (First or Only)
C_LAST = 1 << 8           # last packet of a message (Last or Only)
C_RELIABLE = 1 << 9       # RC or XRC: acknowledged, retransmitted
C_UC = 1 << 10
C_UD = 1 << 11

_READ_REQ, _ACK, _ATOMIC_ACK = 0x0C, 0x11, 0x12
_ATOMIC_REQS = (0x13, 0x14)
_FIRST_WORDS, _LAST_WORDS = (" First", " Only"), (" Last", " Only")


def _opclass(code: int) -> int:
    op = OPCODES[code]
    if not op.valid or op.transport not in ("RC", "XRC", "UC", "UD"):
        return 0
    low = code & 0x1F
    c = C_REQUEST if op.is_request else C_RESPONSE if op.is_response else 0
    c |= {"RC": C_RELIABLE, "XRC": C_RELIABLE, "UC": C_UC, "UD": C_UD}[op.transport]
    if low == _READ_REQ:
        c |= C_READ_REQ | C_FIRST | C_LAST
    elif low in _ATOMIC_REQS:
        c |= C_ATOMIC_REQ | C_FIRST | C_LAST
    elif low == _ACK:
        c |= C_ACK
    elif low == _ATOMIC_ACK:
        c |= C_ATOMIC_ACK
    elif op.is_response:
        c |= C_READ_RESP
    if op.is_request and not c & C_READ_REQ and not c & C_ATOMIC_REQ:
        if any(w in op.name for w in _FIRST_WORDS):
            c |= C_FIRST
        if any(w in op.name for w in _LAST_WORDS):
            c |= C_LAST
    if c & C_READ_RESP:
        if any(w in op.name for w in _FIRST_WORDS):
            c |= C_FIRST
        if any(w in op.name for w in _LAST_WORDS):
            c |= C_LAST
    return c


OPCLASS = np.array([_opclass(c) for c in range(256)], dtype=np.int32)

# -- AETH syndrome -----------------------------------------------------------------------
SYN_ACK, SYN_RNR, SYN_NAK = 0, 1, 3
NAK_PSN_SEQ, NAK_INVALID_REQUEST, NAK_REMOTE_ACCESS, NAK_REMOTE_OP, NAK_INVALID_RD = range(5)
NAK_KEYS = ("psn_seq_err", "invalid_request", "remote_access", "remote_operational",
            "invalid_rd")
assert len(NAK_KEYS) == len(NAK_CODES)
CREDIT_UNLIMITED = 31
CREDIT_TABLE = np.array(CREDITS + (-1,), dtype=np.int64)     # code 31: no credit info
RNR_TIMER_NS = np.array([us * 1000 for us in RNR_TIMER_US], dtype=np.int64)

# -- per-packet findings -------------------------------------------------------------------
FLAG_NAMES: dict[int, str] = {}


def _flag(bit: int, name: str) -> int:
    FLAG_NAMES[1 << bit] = name
    return 1 << bit


F_RETX = _flag(0, "retransmission")          # request PSN already sent (or its hole refilled)
F_GAP = _flag(1, "psn_gap")                  # PSNs skipped before this request: lost before tap
F_LATE = _flag(2, "out_of_sequence")         # a skipped PSN arriving late without a retry cause
F_DUP = _flag(3, "duplicate")                # responder had already accepted this PSN
F_RESP_OOS = _flag(4, "responder_out_of_sequence")   # beyond the responder's expected PSN
F_NAK = _flag(5, "nak")
F_RNR = _flag(6, "rnr")
F_IMPLIED = _flag(7, "implied_nak")          # response PSN jump: READ/atomic responses missing
F_EPISODE = _flag(8, "go_back_n")            # first packet resent by a go-back-N restart
F_DUP_ACK = _flag(9, "duplicate_ack")        # ACK that acknowledges nothing new
F_BAD_ICRC = _flag(10, "bad_icrc")           # receiver drops it: recovery must follow
F_LOST_AFTER = _flag(11, "lost_after_capture")  # captured, but the responder never got it
F_MSG_END = _flag(12, "message_end")
F_RESP_GAP = _flag(13, "read_response_gap")
F_RNR_RETRY = _flag(14, "rnr_retry")         # first resend of a PSN an RNR NAK refused
F_UC_GAP = _flag(15, "uc_gap")               # UC: PSNs missing, the message is dropped
F_RETRY_START = _flag(16, "retry_start")     # NAK/implied NAK that starts a go-back-N retry
F_COPY = _flag(17, "network_duplicate")      # repeat sooner than any retry cause could act
# A resend only by a retry cause naming an earlier PSN the tap never saw resent: it is
# that run (its first packets lost before the tap), or a late or duplicated earlier copy.
F_AMBIGUOUS = _flag(18, "ambiguous")

# -- episode reasons ------------------------------------------------------------------------
REASON_NONE, REASON_NAK_SEQ, REASON_TIMEOUT, REASON_IMPLIED, REASON_RNR = range(5)
REASON_NAMES = ("none", "nak_seq", "timeout", "implied_nak", "rnr")

# -- per half-connection counters (columns of the kernel's `counts`) -------------------------
COUNT_NAMES = (
    "packets", "requests", "responses", "bytes", "messages", "retransmitted_packets",
    "retransmitted_bytes", "go_back_n", "rnr_retries", "nak_psn_seq_err",
    "nak_invalid_request", "nak_remote_access", "nak_remote_operational", "nak_invalid_rd",
    "rnr_naks", "duplicate_requests", "lost_before_capture", "lost_after_capture",
    "implied_naks", "timeouts", "out_of_sequence", "bad_icrc", "acks", "duplicate_acks",
    "read_response_gaps", "uc_gaps", "network_duplicates",
)
COUNT = {name: i for i, name in enumerate(COUNT_NAMES)}
K_NAK0 = COUNT["nak_psn_seq_err"]

# The kernel indexes counts by these; they are module constants so Numba folds them.
(K_PACKETS, K_REQUESTS, K_RESPONSES, K_BYTES, K_MESSAGES, K_RETX, K_RETX_BYTES, K_GBN,
 K_RNR_RETRIES, _N0, _N1, _N2, _N3, _N4, K_RNR, K_DUP, K_LOST_BEFORE, K_LOST_AFTER,
 K_IMPLIED, K_TIMEOUTS, K_LATE, K_BAD_ICRC, K_ACKS, K_DUP_ACKS, K_RESP_GAPS,
 K_UC_GAPS, K_COPIES) = range(len(COUNT_NAMES))

READ_FIFO = 16      # outstanding READ/atomic requests tracked per half-connection
GAP_RING = 32       # recent request PSN holes remembered per half-connection
# The shortest local ACK timeout IBA allows: 4.096 us * 2**1 (the 5-bit QP attribute is
# 1..31; 0 means no timer). A requester's timer covers its oldest outstanding packet, so
# a timeout resend of a PSN comes at least this long after the PSN's first transmission.
MIN_ACK_TIMEOUT_NS = 4096 * 2
# The longest a requester is taken to need to act on a NAK or an implied NAK it got: it
# restarts as the cause arrives (hardware in microseconds, Linux rxe measured up to
# ~0.3 ms). A restart later than this after the cause left the tap was a timeout: the
# cause never arrived, or came while a retry covering it was under way (IBA 9.7.5.1.3).
MAX_REACTION_NS = 1_000_000
# The latest an RNR NAK's retry is taken to come once its timer ran out: Linux rxe
# waits whole jiffies (at least one) and a kernel timer may fire a jiffy late, two
# jiffies at HZ=100 (rxe captures: retries 5-11 ms after NAKs asking under 1 ms). A
# restart past the refused PSN later than that is a timer's: the RNR NAK never
# reached the requester, and its retry (at the refused PSN) is still to come.
RNR_LATE_NS = 20_000_000


def psn_diff(a: int, b: int) -> int:
    """a - b in 24-bit serial arithmetic: negative when a is before b (§9.7.1)."""
    return ((a - b + PSN_HALF) & (PSN_MOD - 1)) - PSN_HALF


def flag_names(flags: int) -> list[str]:
    return [name for bit, name in FLAG_NAMES.items() if flags & bit]
