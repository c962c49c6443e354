"""RC requester: sends work requests as PSN-numbered packets and recovers losses.

Rules (IBA Vol. 1 ch. 9, protocol-facts §7; behaviour matched to rxe):

* a message of L bytes takes max(1, ceil(L / PMTU)) PSNs; a READ request is one
  packet that consumes as many PSNs as its responses; atomics take one;
* AckReq is set on the last packet of every message (and every `ackreq_every`
  packets inside long ones);
* an ACK with PSN p acknowledges every request packet with PSN <= p; a READ
  response or atomic ACK implicitly acknowledges everything before it; an ACK
  beyond a READ/atomic still missing responses means those were lost
  ("implied NAK": retry from the first missing response PSN);
* NAK PSN sequence error p: acknowledge < p and go back to p (go-back-N); while a
  retry from PSN r is in progress (until una passes r), NAKs and implied NAKs for
  PSNs >= r are ignored: the restart already covers them; so are those for PSNs
  the next packet to send has not passed (it gets there in order);
* local ACK timeout (4.096 us * 2**timeout without progress): go back to the
  oldest unacknowledged PSN; every retry spends `retry_cnt`, progress refills it;
* RNR NAK p: acknowledge < p, wait the NAK's RNR timer (restarted by every
  further RNR NAK that arrives meanwhile), then resend from p (`rnr_retry` 7 =
  infinite);
* a restart inside a SEND/WRITE resumes with the Middle/Last opcode (no RETH);
  inside a READ it issues a new READ for the remaining bytes at PSN p;
* the cursor never moves forward: a restart point ahead of a resend in progress
  is reached in order (so request PSNs only ever step by their consumption or
  jump back).

Theory of operation: `flight` holds started messages in PSN order (completed ones
until the cursor has passed them, so a restart never skips a PSN); `cursor` is the
next PSN to put on the wire, `next_new` the first PSN not yet given to a message,
`high` the first PSN never put on the wire and `una` the oldest unacknowledged
PSN. The port asks `peek` for the next packet and `take`s it; every transmission
whose PSN is before `high` is a retransmission, reported to the ground truth with
the reason of the restart that caused it.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING

from ibwire.gen.clock import Timer
from ibwire.gen.rcwire import (
    ATOMICS,
    OP_ACK,
    OP_ATOMIC_ACK,
    OP_READ_REQ,
    READ,
    RESP_FIRST,
    RESP_LAST,
    RESP_MIDDLE,
    RESP_ONLY,
    SEND_OPS,
    SYN_TYPE_ACK,
    SYN_TYPE_NAK,
    SYN_TYPE_RNR,
    Msg,
    RcInfo,
    packet_opcode,
    payload,
    psn_add,
    psn_diff,
    syndrome_type,
    syndrome_value,
)
from ibwire.headers.extended import RNR_TIMER_US

if TYPE_CHECKING:
    from ibwire.gen.net import Pkt
    from ibwire.gen.qp import RcEndpoint

READ_RESPONSES = frozenset({RESP_FIRST, RESP_MIDDLE, RESP_LAST, RESP_ONLY})


class Requester:
    def __init__(self, ep: RcEndpoint, start_psn: int, msgs: list[Msg]) -> None:
        self.ep = ep
        self.cfg = cfg = ep.ctx.cfg
        self.clock = ep.ctx.clock
        self.truth = ep.ctx.truth
        self.start_psn = start_psn
        self.posted = list(msgs)
        self.pending: deque[Msg] = deque(msgs)
        self.flight: list[Msg] = []
        self.next_new = self.cursor = self.una = self.high = start_psn
        self.retry_reason = "none"
        self.retry_psn = -1
        self.retry_active = False
        self.retry_trigger: int | None = None
        self.retry_left = cfg.retry_cnt
        self.rnr_left = cfg.rnr_retry
        self.rnr_until: int | None = None
        self.rnr_entry: dict | None = None
        self.rnr_rx_ns = 0
        self.timer = Timer(self.clock, self._timeout)
        self.state = "RTS"
        self.active = False
        self.since_ackreq = 0
        self.attempts: Counter[int] = Counter()
        self.stats: Counter[str] = Counter()
        self.completed = 0
        self.last_credits: int | None = None
        self._cache: tuple[Msg, int, bool, int, Pkt] | None = None

    # -- state ----------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.state != "RTS" or (not self.pending and
                                       all(m.done for m in self.flight))

    def start(self) -> None:
        self.active = True
        self._changed()

    def _changed(self) -> None:
        self._cache = None
        self.ep.port.kick()

    # -- transmit -------------------------------------------------------------------
    def _plan(self, now: int) -> tuple[Msg, int, bool] | None:
        if not self.active or self.state != "RTS" or self.rnr_until is not None:
            return None
        if not self.pending and all(m.done for m in self.flight):
            return None                       # everything is acknowledged: nothing to do
        while psn_diff(self.cursor, self.next_new) < 0:
            msg = self._msg_at(self.cursor)
            if msg is None:
                # Not in any retained message (cannot normally happen): resync.
                behind = self.flight and psn_diff(self.cursor, self.una) < 0
                self.cursor = self.una if behind else self.next_new
                continue
            # Inside a READ the cursor is a restart point (first + responses received):
            # the new READ asks only for the rest. Reached in sequence, it asks for all.
            return msg, psn_diff(self.cursor, msg.first_psn), False
        if not self.pending:
            return None
        msg = self.pending[0]
        cfg = self.cfg
        if self.flight:
            if sum(not m.done for m in self.flight) >= cfg.tx_depth:
                return None
            if psn_diff(psn_add(self.next_new, msg.npsn), self.una) > cfg.max_unacked:
                return None
            # READ/atomics count as outstanding until retired in order (a completed
            # one behind an incomplete one still holds a responder resource).
            live = next((i for i, m in enumerate(self.flight) if not m.done), None)
            if msg.needs_response and live is not None and sum(
                    m.needs_response for m in self.flight[live:]) >= cfg.max_rd_atomic:
                return None
        return msg, 0, True

    def _msg_at(self, psn: int) -> Msg | None:
        for m in self.flight:
            if 0 <= psn_diff(psn, m.first_psn) < m.npsn:
                return m
        return None

    def peek(self, now: int) -> Pkt | None:
        if self._cache is not None:
            return self._cache[4]
        plan = self._plan(now)
        if plan is None:
            return None
        msg, k, new = plan
        first = self.next_new if new else msg.first_psn
        info, consume = self._info(msg, first, k)
        pkt = self.ep.make("req", info, payload(info.poff, info.plen) if info.plen else b"")
        self._cache = (msg, k, new, consume, pkt)
        return pkt

    def _info(self, msg: Msg, first: int, k: int) -> tuple[RcInfo, int]:
        cfg = self.cfg
        psn = psn_add(first, k)
        if msg.op in SEND_OPS:
            n = msg.npsn
            op = packet_opcode(msg.op, k, n)
            off = k * cfg.pmtu
            last = k == n - 1
            info = RcInfo(op, psn, ackreq=last or self.since_ackreq + 1 >= cfg.ackreq_every,
                          se=last and msg.op == "send_imm", imm=msg.imm, inv_rkey=msg.inv_rkey,
                          plen=min(cfg.pmtu, msg.length - off), poff=off)
            if k == 0 and msg.op.startswith("write"):
                info.va, info.rkey, info.dmalen = msg.va, msg.rkey, msg.length
            return info, 1
        if msg.op == READ:
            off = k * cfg.pmtu
            return RcInfo(OP_READ_REQ, psn, ackreq=True, va=msg.va + off, rkey=msg.rkey,
                          dmalen=msg.length - off), msg.npsn - k
        return RcInfo(ATOMICS[msg.op], psn, ackreq=True, va=msg.va, rkey=msg.rkey,
                      swap=msg.swap, cmp=msg.cmp), 1

    def take(self, now: int) -> Pkt:
        assert self._cache is not None
        msg, k, new, consume, pkt = self._cache
        self._cache = None
        if new:
            self.pending.popleft()
            msg.first_psn = self.next_new
            msg.started_ns = now
            self.flight.append(msg)
            self.next_new = psn_add(self.next_new, msg.npsn)
        psn = pkt.psn
        pkt.meta["npsn"] = consume          # PSNs it takes (the truth's view of the tap)
        self.cursor = psn_add(psn, consume)
        retransmission = psn_diff(psn, self.high) < 0
        if psn_diff(self.cursor, self.high) > 0:
            self.high = self.cursor
        self.since_ackreq = 0 if pkt.info.ackreq else self.since_ackreq + 1
        self.attempts[psn] += 1
        self.stats["sent"] += 1
        if retransmission:
            self.stats["retransmitted"] += 1
            self.truth.retransmit(pkt, self.retry_reason, self.retry_trigger,
                                  self.attempts[psn] - 1)
            entry = self.rnr_entry
            if entry is not None and entry["retry_tx"] is None and entry["psn"] == psn:
                entry["retry_tx"] = pkt.tx          # the first resend of the NAKed PSN
                entry["retry_wait_ns"] = now - self.rnr_rx_ns
        if not self.timer.armed and psn_diff(self.high, self.una) > 0:
            self.timer.arm(self.cfg.timeout_ns)
        self._advance()
        return pkt

    # -- receive ----------------------------------------------------------------------
    def on_response(self, pkt: Pkt) -> None:
        if self.state != "RTS":
            return
        info = pkt.info
        op = info.opcode
        if op == OP_ACK:
            kind, value = syndrome_type(info.syndrome), syndrome_value(info.syndrome)
            if kind == SYN_TYPE_ACK:
                self.last_credits = value
                self._acked(info.psn, pkt.tx)
            elif kind == SYN_TYPE_RNR:
                self._rnr(pkt, value)
            elif kind == SYN_TYPE_NAK and value == 0:
                self._acked(psn_add(info.psn, -1), pkt.tx)
                self._go_back(info.psn, "nak_seq", pkt.tx)
            else:
                self._error(f"NAK code {value}")
        elif op in READ_RESPONSES:
            self._read_response(pkt)
        elif op == OP_ATOMIC_ACK:
            self._atomic_ack(pkt)
        self._changed()

    def _acked(self, p: int, trigger: int | None) -> None:
        """Cumulative acknowledgement of every request PSN up to and including p."""
        if not self.flight or psn_diff(p, self.una) < 0 or psn_diff(p, self.high) >= 0:
            return
        for msg in self.flight:
            if msg.done:
                continue
            if msg.needs_response:
                if psn_diff(msg.last_psn, p) <= 0:
                    # Acknowledged past a READ/atomic whose responses never came.
                    self._go_back(psn_add(msg.first_psn, msg.progress), "implied_nak", trigger)
                break
            covered = psn_diff(p, msg.first_psn) + 1
            if covered >= msg.npsn:
                msg.done = True
            else:
                msg.progress = max(msg.progress, covered)
                break
        self._advance()

    def _advance(self) -> None:
        now = self.clock.now
        for msg in self.flight:
            if msg.done and msg.completed_ns < 0:
                msg.completed_ns = now
                self.completed += 1
        # Completed messages stay until the cursor has passed them: a go-back-N
        # restart resends in PSN order even what a later ACK already covered.
        while self.flight and self.flight[0].done and \
                psn_diff(self.cursor, psn_add(self.flight[0].first_psn,
                                              self.flight[0].npsn)) >= 0:
            self.flight.pop(0)
        old = self.una
        front = next((m for m in self.flight if not m.done), None)
        if front is not None:
            self.una = psn_add(front.first_psn, front.progress)
        else:
            self.una = self.next_new
        if psn_diff(self.una, old) > 0:
            self.retry_left = self.cfg.retry_cnt
            if self.retry_active and psn_diff(self.una, self.retry_psn) > 0:
                self.retry_active = False
            if self.rnr_until is None:
                if psn_diff(self.high, self.una) > 0:
                    self.timer.arm(self.cfg.timeout_ns)
                else:
                    self.timer.cancel()

    def _go_back(self, p: int, reason: str, trigger: int | None) -> None:
        if self.state != "RTS" or psn_diff(p, self.una) < 0 or psn_diff(p, self.high) >= 0:
            return
        if reason != "timeout" and self.retry_active and psn_diff(p, self.retry_psn) >= 0:
            return          # a restart from an earlier PSN is under way and covers p
        if psn_diff(p, self.cursor) > 0 or (reason != "timeout" and p == self.cursor):
            # A resend in progress behind p gets there in order; at p (its next
            # packet is p's) no retry either: rxe retries only when its next PSN is
            # past the NAK's (rxe_comp.c, "no point in retrying").
            return
        self.retry_left -= 1
        if self.retry_left < 0:
            self._error("retry_exceeded")
            return
        self.stats[f"retry_{reason}"] += 1
        self.cursor = p
        self.retry_reason, self.retry_psn, self.retry_trigger = reason, p, trigger
        self.retry_active = True
        self.timer.arm(self.cfg.timeout_ns)

    def _timeout(self) -> None:
        if self.state == "RTS" and psn_diff(self.high, self.una) > 0:
            self._go_back(self.una, "timeout", None)
            self._changed()

    def _rnr(self, pkt: Pkt, code: int) -> None:
        p = pkt.info.psn
        self._acked(psn_add(p, -1), pkt.tx)
        if psn_diff(p, self.una) < 0:
            return
        if self.rnr_until is not None:
            # Another RNR NAK while waiting (for a packet that was in flight): the
            # responder is still not ready, so the wait restarts from now.
            self.rnr_until = max(self.rnr_until, self.clock.now + RNR_TIMER_US[code] * 1000)
            self.rnr_entry = pkt.meta.get("rnr_entry")
            self.rnr_rx_ns = self.clock.now
            self.clock.at(self.rnr_until, self._rnr_over)
            return
        if self.cfg.rnr_retry != 7:
            self.rnr_left -= 1
            if self.rnr_left < 0:
                self._error("rnr_retry_exceeded")
                return
        self.stats["rnr_naks"] += 1
        if psn_diff(p, self.cursor) < 0:
            self.cursor = p
        self.retry_reason, self.retry_psn, self.retry_trigger = "rnr", p, pkt.tx
        self.retry_active = True
        self.rnr_entry = pkt.meta.get("rnr_entry")
        self.rnr_rx_ns = self.clock.now
        self.rnr_until = self.clock.now + RNR_TIMER_US[code] * 1000
        self.timer.cancel()
        self.clock.at(self.rnr_until, self._rnr_over)

    def _rnr_over(self) -> None:
        if self.rnr_until is not None and self.clock.now >= self.rnr_until:
            self.rnr_until = None
            self._changed()

    def _read_response(self, pkt: Pkt) -> None:
        q = pkt.info.psn
        msg = self._msg_at(q)
        if msg is None or not msg.is_read or msg.done:
            return
        k = psn_diff(q, msg.first_psn)
        self._acked(psn_add(msg.first_psn, -1), pkt.tx)    # implicit ACK of earlier ones
        if k == msg.progress:
            msg.progress += 1
            if msg.progress == msg.npsn:
                msg.done = True
            self._advance()
        elif k > msg.progress:
            self._go_back(psn_add(msg.first_psn, msg.progress), "implied_nak", pkt.tx)

    def _atomic_ack(self, pkt: Pkt) -> None:
        q = pkt.info.psn
        msg = self._msg_at(q)
        if msg is None or msg.op not in ATOMICS or msg.done:
            return
        self._acked(psn_add(q, -1), pkt.tx)
        msg.done = True
        msg.progress = 1
        msg.result = pkt.info.orig
        self._advance()

    def _error(self, why: str) -> None:
        self.state = "ERR"
        self.stats[f"error_{why}"] += 1
        self.timer.cancel()

    def describe(self) -> dict:
        return {"qpn": self.ep.qpn, "dest_qpn": self.ep.dest_qpn, "start_psn": self.start_psn,
                "next_psn": self.next_new, "una": self.una, "state": self.state,
                "messages_posted": len(self.posted), "messages_completed": self.completed,
                "retries_left": self.retry_left, "stats": dict(sorted(self.stats.items())),
                "last_credit_code": self.last_credits}
