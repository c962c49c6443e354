"""Link-level credit-based flow control for one port (protocol-facts §6.2).

Rules kept here, per data VL and per direction of the link:

* credits are 64-byte blocks; a packet needs ceil((PktLen*4 + 2) / 64) blocks
  (LRH through VCRC); every counter is 12 bits, modulo 4096;
* sender: TBS += blocks of each packet sent; CL = FCCL of the latest
  flow-control packet from the peer; a packet of n blocks may go only if
  (CL - (TBS + n)) mod 4096 <= 2048;
* receiver: ABR += blocks of each good packet received, ABR = FCTBS when the
  peer's flow-control packet arrives (resynchronises after loss); it advertises
  FCCL = (ABR + free blocks) mod 4096 with free capped at 2048;
* each port sends one flow-control packet per data VL every update period
  (Op 1 "init" first, then Op 0), carrying its TBS and its FCCL;
* VL15 is not flow controlled.

The receive buffer drains at `drain_gbps` (the receiver's processing rate); when
it drains slower than the link fills it, senders run out of credits and stall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibwire.encode import encode
from ibwire.headers.link import LINK

BLOCK = 64
MOD = 4096
HALF = 2048
MGMT_VL = 15


def blocks(nbytes: int) -> int:
    return -(-nbytes // BLOCK)


@dataclass
class VlState:
    tbs: int = 0                # sender: total blocks sent (mod 4096)
    cl: int = 0                 # sender: credit limit from the peer
    abr: int = 0                # receiver: adjusted blocks received (mod 4096)
    occupied: int = 0           # receiver: blocks held in the buffer
    drain_free_at: int = 0      # receiver: when the buffer's drain is next idle
    stall_start: int | None = None
    stall_need: int = 0
    stall_avail: int = 0
    last_fc_tx: int | None = None     # the peer's latest flow-control packet received
    stalls: list[dict] = field(default_factory=list)
    fc_sent: int = 0
    overruns: int = 0
    max_occupied: int = 0
    # sender's event log for the ground truth: (now, kind, value, tx), kind one of
    # "limit" (peer's FCCL received), "send" (blocks), "sync" (own FCTBS sent)
    log: list[tuple[int, str, int, int | None]] = field(default_factory=list)
    # receiver's state at each flow-control packet it made: (now, tx, occupied blocks)
    fc_log: list[tuple[int, int | None, int]] = field(default_factory=list)


class CreditPort:
    """Flow-control state of one port, as sender on its link and receiver of the peer."""

    def __init__(self, buffer_blocks: int, vls: tuple[int, ...], drain_gbps: float) -> None:
        if not 1 <= buffer_blocks <= 4095:
            raise ValueError("receive buffer must be 1..4095 blocks")
        self.buffer = buffer_blocks
        self.vls = vls
        self.drain_gbps = drain_gbps
        self.vl = {v: VlState() for v in vls}

    def controlled(self, vl: int) -> bool:
        return vl != MGMT_VL and vl in self.vl

    # -- sender side ------------------------------------------------------------
    def available(self, vl: int) -> int:
        s = self.vl[vl]
        d = (s.cl - s.tbs) % MOD
        return d if d <= HALF else d - MOD

    def can_send(self, vl: int, nblocks: int) -> bool:
        s = self.vl[vl]
        return (s.cl - (s.tbs + nblocks)) % MOD <= HALF

    def on_send(self, vl: int, nblocks: int, now: int, tx: int | None = None) -> None:
        s = self.vl[vl]
        s.tbs = (s.tbs + nblocks) % MOD
        s.log.append((now, "send", nblocks, tx))
        if s.stall_start is not None:
            s.stalls.append({"start_ns": s.stall_start, "end_ns": now,
                             "duration_ns": now - s.stall_start,
                             "blocks_needed": s.stall_need,
                             "credits_available": s.stall_avail,
                             "released_by_tx": s.last_fc_tx})
            s.stall_start = None

    def blocked(self, vl: int, nblocks: int, now: int) -> None:
        s = self.vl[vl]
        if s.stall_start is None:
            s.stall_start = now
            s.stall_need = nblocks
            s.stall_avail = self.available(vl)

    # -- receiver side ------------------------------------------------------------
    def on_receive(self, vl: int, nblocks: int, now: int) -> int:
        """Account a good packet; returns when its blocks leave the buffer."""
        s = self.vl[vl]
        s.abr = (s.abr + nblocks) % MOD
        s.occupied += nblocks
        s.max_occupied = max(s.max_occupied, s.occupied)
        if s.occupied > self.buffer:
            s.overruns += 1
        start = max(now, s.drain_free_at)
        s.drain_free_at = start + int(nblocks * BLOCK * 8 / self.drain_gbps)
        return s.drain_free_at

    def drained(self, vl: int, nblocks: int) -> None:
        self.vl[vl].occupied -= nblocks

    def fccl(self, vl: int) -> int:
        s = self.vl[vl]
        free = min(max(self.buffer - s.occupied, 0), HALF)
        return (s.abr + free) % MOD

    def on_fc_packet(self, vl: int, fctbs: int, fccl: int, tx: int | None = None,
                     now: int = 0) -> None:
        s = self.vl.get(vl)
        if s is None:
            return
        s.cl = fccl
        s.log.append((now, "limit", fccl, tx))
        s.abr = fctbs
        s.last_fc_tx = tx

    def fc_packet(self, vl: int, init: bool, now: int = 0, tx: int | None = None) -> bytes:
        s = self.vl[vl]
        s.fc_sent += 1
        s.log.append((now, "init" if init else "sync", s.tbs, tx))
        s.fc_log.append((now, tx, s.occupied))
        return encode(LINK(op=1 if init else 0, fctbs=s.tbs, vl=vl, fccl=self.fccl(vl)))

    def close(self, now: int) -> None:
        for s in self.vl.values():
            if s.stall_start is not None:
                s.stalls.append({"start_ns": s.stall_start, "end_ns": None,
                                 "duration_ns": now - s.stall_start,
                                 "blocks_needed": s.stall_need,
                                 "credits_available": s.stall_avail})
                s.stall_start = None
