"""RC responder: accepts requests in PSN order and answers them.

Rules (IBA Vol. 1 ch. 9, protocol-facts §7.3-7.4; behaviour matched to rxe):

* relative to the expected PSN (ePSN):
  - PSN == ePSN: execute; ePSN += PSNs consumed (a READ: all its responses);
  - PSN  > ePSN: NAK PSN sequence error with PSN = ePSN, sent once; further
    out-of-sequence packets are dropped silently until ePSN arrives;
  - PSN  < ePSN: duplicate. SEND/WRITE: ACK again with PSN ePSN-1 (C9-105, every
    duplicate, as rxe does); READ: re-executed from the saved resource, the
    responses restarting at the duplicate's PSN; atomic: the saved result is
    replayed, never re-executed;
* a packet that needs a receive WQE (SEND First/Only, WRITE with Immediate
  Last/Only) when none is posted: RNR NAK with the packet's PSN and the
  configured RNR timer; ePSN does not move (so packets behind it are out of
  sequence and draw one NAK, as in rxe captures);
* MSN += 1 when a message completes: last packet of a SEND/WRITE, receipt of a
  READ request, each atomic. Every AETH carries the current MSN;
* ACKs are coalesced: after `ack_every` AckReq packets, or `ack_delay_ns` after
  the first un-ACKed one; the ACK's PSN is ePSN-1 (everything received so far).
  READ responses and atomic ACKs carry their own AETH and PSN;
* AETH credits: the count of posted receive WQEs (table 3.6a, rounded down) or
  0x1F "unlimited" (rxe);
* congestion: a CE-marked request (RoCEv2) draws a CNP to the requester's QP, at
  most one per `cnp_gap_ns`; a FECN-marked one (native, RoCEv1) sets BECN on the
  next response.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING

from ibwire.gen.clock import Timer
from ibwire.gen.rcwire import (
    ATOMICS,
    MSG_END,
    NEEDS_RQ,
    OP_ACK,
    OP_ATOMIC_ACK,
    OP_READ_REQ,
    READ,
    SYN_ACK_UNLIMITED,
    SYN_NAK_SEQ,
    SYN_TYPE_RNR,
    RcInfo,
    make_syndrome,
    npsn,
    payload,
    psn_add,
    psn_diff,
    read_response_opcode,
    syndrome_type,
    syndrome_value,
)
from ibwire.graph import GRAPH
from ibwire.headers.extended import CREDITS, RNR_TIMER_US

if TYPE_CHECKING:
    from ibwire.gen.net import Pkt
    from ibwire.gen.qp import RcEndpoint

MSN_MASK = 0xFFFFFF
U64 = (1 << 64) - 1


class Responder:
    def __init__(self, ep: RcEndpoint, epsn: int) -> None:
        self.ep = ep
        self.ctx = ep.ctx
        self.cfg = cfg = ep.ctx.cfg
        self.clock = ep.ctx.clock
        self.truth = ep.ctx.truth
        self.start_psn = epsn
        self.epsn = epsn
        self.msn = 0
        self.nak_sent = False
        self.rq_avail = cfg.rq_depth
        self.rq_block_until = -1
        self.resources: deque[tuple[str, int, int, int]] = deque(maxlen=cfg.max_rd_atomic * 4)
        self.atomic_results: dict[int, int] = {}
        self.mem: dict[int, int] = {}
        self.ack_timer = Timer(self.clock, self._send_ack)
        self.unacked = 0
        self.becn_cause: Pkt | None = None
        self.last_cnp = -(1 << 62)
        self.rng = ep.ctx.rng(f"rnr:{ep.qpn:#x}")
        self.stats: Counter[str] = Counter()

    # -- receive ---------------------------------------------------------------------
    def on_request(self, pkt: Pkt) -> None:
        info: RcInfo = pkt.info
        self.stats["received"] += 1
        if pkt.ce:
            self._congestion(pkt)
        d = psn_diff(info.psn, self.epsn)
        if d > 0:
            self.stats["out_of_sequence"] += 1
            if not self.nak_sent:
                self.nak_sent = True
                self._nak(self.epsn, SYN_NAK_SEQ)
            return
        if d < 0:
            self.stats["duplicate"] += 1
            self._duplicate(info)
            return
        op = info.opcode
        if op in NEEDS_RQ and self._no_rq(info):
            self.stats["rnr_naks"] += 1
            self._nak(info.psn, make_syndrome(SYN_TYPE_RNR, self.cfg.rnr_timer))
            return
        self.nak_sent = False
        if op == OP_READ_REQ:
            n = npsn(READ, info.dmalen, self.cfg.pmtu)
            self.resources.append(("read", info.psn, n, info.va))
            self._complete()
            self.epsn = psn_add(self.epsn, n)
            self._flush_ack()
            self._read_responses(info.psn, info.va, info.dmalen)
        elif op in ATOMICS.values():
            orig = self.mem.get(info.va, 0)
            if op == ATOMICS["cmp_swap"]:
                new = info.swap if orig == info.cmp else orig
            else:
                new = (orig + info.swap) & U64
            self.mem[info.va] = new
            self.atomic_results[info.psn] = orig
            self.resources.append(("atomic", info.psn, 1, info.va))
            self._complete()
            self.epsn = psn_add(self.epsn, 1)
            self._flush_ack()
            self._emit(RcInfo(OP_ATOMIC_ACK, info.psn, syndrome=self._credit_syndrome(),
                              msn=self.msn, orig=orig))
        else:
            self.epsn = psn_add(self.epsn, 1)
            if op in NEEDS_RQ and self.rq_avail is not None:
                self.rq_avail -= 1
                self.clock.after(self.cfg.rq_repost_ns, self._repost)
            if op in MSG_END:
                self._complete()
            if info.ackreq:
                self._want_ack()

    def _complete(self) -> None:
        self.msn = (self.msn + 1) & MSN_MASK
        self.stats["messages"] += 1

    def _no_rq(self, info: RcInfo) -> bool:
        now = self.clock.now
        if now < self.rq_block_until:
            return True
        if self.rq_avail is not None and self.rq_avail <= 0:
            return True
        if self.cfg.rnr > 0 and self.rng.random() < self.cfg.rnr:
            # The application is late posting receives: hold for 0.3..2x the RNR timer,
            # so the first retry sometimes draws a second RNR NAK.
            hold = int(RNR_TIMER_US[self.cfg.rnr_timer] * 1000 * self.rng.uniform(0.3, 2.0))
            self.rq_block_until = now + hold
            self.truth.event("rnr_injected", direction="b2a" if self.ep.host.index == 0
                             else "a2b", destqp=self.ep.qpn, psn=info.psn, hold_ns=hold)
            return True
        return False

    def _repost(self) -> None:
        if self.rq_avail is not None:
            self.rq_avail += 1

    def _duplicate(self, info: RcInfo) -> None:
        op = info.opcode
        if op == OP_READ_REQ:
            for kind, first, n, _va in self.resources:
                if kind == "read" and 0 <= psn_diff(info.psn, first) < n:
                    self._read_responses(info.psn, info.va, info.dmalen)
                    return
            self.stats["duplicate_dropped"] += 1
        elif op in ATOMICS.values():
            orig = self.atomic_results.get(info.psn)
            if orig is None:
                self.stats["duplicate_dropped"] += 1
                return
            self._emit(RcInfo(OP_ATOMIC_ACK, info.psn, syndrome=self._credit_syndrome(),
                              msn=self.msn, orig=orig))
        else:
            self._send_ack()

    # -- transmit --------------------------------------------------------------------
    def _credit_syndrome(self) -> int:
        if self.cfg.credits == "unlimited" or self.rq_avail is None:
            return SYN_ACK_UNLIMITED
        avail = max(self.rq_avail, 0)
        code = 0
        for i, c in enumerate(CREDITS):
            if c <= avail:
                code = i
        return code

    def _want_ack(self) -> None:
        self.unacked += 1
        if self.unacked >= self.cfg.ack_every or self.cfg.ack_delay_ns <= 0:
            self._send_ack()
        elif not self.ack_timer.armed:
            self.ack_timer.arm(self.cfg.ack_delay_ns)

    def _flush_ack(self) -> None:
        # A READ response or atomic ACK acknowledges everything before it.
        self.unacked = 0
        self.ack_timer.cancel()

    def _send_ack(self) -> None:
        self._flush_ack()
        self._emit(RcInfo(OP_ACK, psn_add(self.epsn, -1), syndrome=self._credit_syndrome(),
                          msn=self.msn))

    def _nak(self, psn: int, syndrome: int) -> None:
        self._flush_ack()
        pkt = self._emit(RcInfo(OP_ACK, psn, syndrome=syndrome, msn=self.msn))
        code = syndrome_value(syndrome)
        if syndrome_type(syndrome) == SYN_TYPE_RNR:
            pkt.meta["rnr_entry"] = self.truth.rnr(pkt, code, RNR_TIMER_US[code],
                                                   request_qp=self.ep.qpn)
        else:
            self.truth.nak(pkt, code, self.msn)

    def _read_responses(self, psn: int, va: int, length: int) -> None:
        pmtu = self.cfg.pmtu
        n = npsn(READ, length, pmtu)
        for k in range(n):
            op = read_response_opcode(k, n)
            plen = min(pmtu, length - k * pmtu)
            info = RcInfo(op, psn_add(psn, k), plen=plen, poff=va + k * pmtu)
            if "aeth" in GRAPH.chain(op):
                info.syndrome, info.msn = self._credit_syndrome(), self.msn
            self._emit(info)

    def _emit(self, info: RcInfo) -> Pkt:
        if self.becn_cause is not None:
            info.becn = True
        body = payload(info.poff, info.plen) if info.plen else b""
        pkt = self.ep.make("resp", info, body)
        if self.becn_cause is not None:
            self.truth.becn_ack(pkt, self.becn_cause)
            self.becn_cause = None
        self.ep.outbox.put(pkt, self.clock.now + self.cfg.resp_delay_ns)
        self.stats["responses"] += 1
        return pkt

    def _congestion(self, pkt: Pkt) -> None:
        if self.ctx.fabric.encap.startswith("roce2"):
            if self.clock.now - self.last_cnp >= self.cfg.cnp_gap_ns:
                self.last_cnp = self.clock.now
                self.ep.send_cnp(pkt)
        elif self.becn_cause is None:
            self.becn_cause = pkt

    def describe(self) -> dict:
        return {"qpn": self.ep.qpn, "start_psn": self.start_psn, "epsn": self.epsn,
                "msn": self.msn, "rq_available": self.rq_avail,
                "stats": dict(sorted(self.stats.items()))}
