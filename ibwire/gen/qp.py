"""Queue pairs on a host: an RC endpoint (requester + responder roles), UD QPs,
and the host's receive dispatch.

An RC connection is a pair of endpoints, one per host; each endpoint's requester
talks to the peer's responder. A packet arriving at a host goes to the endpoint
named by its DestQP: requests to the responder, responses to the requester.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ibwire.gen.fabric import udp_source_port
from ibwire.gen.net import Outbox, Pkt
from ibwire.gen.rcwire import (
    ATOMICS,
    OPS,
    READ,
    Msg,
    RcInfo,
    npsn,
    rc_headers,
    transport_headers,
)
from ibwire.gen.requester import Requester
from ibwire.gen.responder import Responder
from ibwire.headers.opcodes import CNP

if TYPE_CHECKING:
    from ibwire.gen.ctx import Ctx
    from ibwire.gen.fabric import Host


class RcEndpoint:
    """One RC QP: addressing, both protocol roles and the outbox of its responses."""

    def __init__(self, ctx: Ctx, host: Host, peer: Host, qpn: int, dest_qpn: int,
                 vl: int, sl: int) -> None:
        self.ctx = ctx
        self.host, self.peer = host, peer
        self.qpn, self.dest_qpn = qpn, dest_qpn
        self.vl, self.sl = vl, sl
        self.start_psn = 0          # first PSN of this QP's requester (the peer's ePSN)
        self.port = ctx.port(host)
        self.outbox = Outbox(self.port)
        self.sport = udp_source_port(qpn, dest_qpn, ctx.cfg.udp_sport)
        self.requester: Requester | None = None
        self.responder: Responder | None = None

    def make(self, kind: str, info: RcInfo, body: bytes) -> Pkt:
        return self.ctx.packet(self.host, self.peer, kind, rc_headers(info, self.dest_qpn),
                               body, vl=self.vl, sl=self.sl, info=info, opcode=info.opcode,
                               qp=self.dest_qpn, psn=info.psn, sport=self.sport,
                               flow=self.qpn & 0xFFFFF)

    def send_cnp(self, cause: Pkt) -> None:
        """RoCEv2 CNP back to the congested sender's QP (BTH 0x81, BECN, 16 zero bytes)."""
        pkt = self.ctx.packet(
            self.host, self.peer, "cnp",
            transport_headers(CNP, becn=1, destqp=self.dest_qpn, psn=0, a=0),
            vl=self.vl, sl=self.sl, opcode=CNP, qp=self.dest_qpn, psn=0, sport=self.sport)
        self.ctx.truth.cnp(pkt, cause)
        self.outbox.put(pkt, self.ctx.now + self.ctx.cfg.resp_delay_ns)

    def on_packet(self, pkt: Pkt) -> None:
        if pkt.kind == "req":
            if self.responder is not None:
                self.responder.on_request(pkt)
        elif pkt.kind == "resp":
            if self.requester is not None:
                self.requester.on_response(pkt)
        elif pkt.kind == "cnp" and self.requester is not None:
            self.requester.stats["cnps_received"] += 1

    @property
    def finished(self) -> bool:
        return self.requester is None or self.requester.finished

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host.name, "qpn": self.qpn,
                               "dest_qpn": self.dest_qpn, "vl": self.vl, "sl": self.sl}
        if self.ctx.fabric.encap.startswith("roce2"):
            out["udp_srcport"] = self.sport
        if self.requester is not None:
            out["requester"] = self.requester.describe()
            out["messages"] = [m.describe() for m in self.requester.posted]
        if self.responder is not None:
            out["responder"] = self.responder.describe()
        return out


def make_messages(ctx: Ctx, rng: random.Random, count: int | None, packets: int | None,
                  wr_base: int) -> list[Msg]:
    """Draw a requester's work requests: operation by weight, length from `sizes`."""
    cfg = ctx.cfg
    ops = [op for op in OPS if cfg.ops.get(op, 0) > 0]
    weights = [cfg.ops[op] for op in ops]
    msgs: list[Msg] = []
    total = 0
    while (packets is not None and total < packets) or (packets is None and len(msgs) < count):
        op = rng.choices(ops, weights)[0]
        length = 8 if op in ATOMICS else rng.choice(cfg.sizes)
        if op.startswith("send") and cfg.wireshark_safe:
            tail = length % cfg.pmtu
            if length == 0 or 0 < tail <= 12:
                length += 13 - tail
        msg = Msg(wr=wr_base + len(msgs), op=op, length=length,
                  npsn=npsn(op, length, cfg.pmtu), rkey=0x1000 + rng.randrange(0xF000))
        if op == READ or op.startswith("write"):
            msg.va = 0x7F0000000000 + rng.randrange(1 << 20) * 64
        elif op in ATOMICS:
            msg.va = 0x7F1000000000 + rng.randrange(4) * 8    # a few shared counters
            msg.swap = rng.randrange(1 << 16)
            msg.cmp = rng.randrange(4) if op == "cmp_swap" else 0
        if op.endswith("_imm"):
            msg.imm = rng.randrange(1 << 32)
        if op == "send_inv":
            msg.inv_rkey = rng.randrange(1, 1 << 32)
        msgs.append(msg)
        total += msg.npsn if op != READ else 1
    return msgs


class HostStack:
    """Receive dispatch of one host: DestQP -> handler."""

    def __init__(self, ctx: Ctx, host: Host) -> None:
        self.ctx = ctx
        self.host = host
        self.handlers: dict[int, Callable[[Pkt], None]] = {}
        self.unclaimed = 0

    def bind(self, qpn: int, handler: Callable[[Pkt], None]) -> None:
        self.handlers[qpn] = handler

    def receive(self, pkt: Pkt) -> None:
        handler = self.handlers.get(pkt.qp)
        if handler is None:
            self.unclaimed += 1
            return
        handler(pkt)
