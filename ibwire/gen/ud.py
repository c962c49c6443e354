"""UD traffic: SEND Only (with and without Immediate) datagrams, and their CNPs.

A UD sender on host A posts `ud_messages` datagrams (at most one PMTU each) at a
fixed pace; UD has no acknowledgements, so a lost datagram is simply gone. The
receiver answers congestion-marked (IP ECN CE) datagrams on RoCEv2 with a CNP to
the sender's QP (DETH SrcQP), at most one per `cnp_gap_ns`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ibwire.gen.net import Outbox, Pkt
from ibwire.gen.rcwire import payload, transport_headers
from ibwire.headers.opcodes import CNP, UD_SEND_ONLY, UD_SEND_ONLY_IMM

if TYPE_CHECKING:
    from ibwire.gen.ctx import Ctx
    from ibwire.gen.fabric import Host

UD_QKEY = 0x11111111
UD_GAP_NS = 1_500


class UdPair:
    def __init__(self, ctx: Ctx, sender: Host, receiver: Host, src_qpn: int,
                 dst_qpn: int, count: int) -> None:
        self.ctx = ctx
        self.sender, self.receiver = sender, receiver
        self.src_qpn, self.dst_qpn = src_qpn, dst_qpn
        self.count = count
        self.out = Outbox(ctx.port(sender))
        self.cnp_out = Outbox(ctx.port(receiver))
        self.rng = ctx.rng("ud")
        self.psn = self.rng.randrange(1 << 24)
        self.sent = 0
        self.received = 0
        self.last_cnp = -(1 << 62)
        self.done_at: int | None = None

    def start(self) -> None:
        cfg, now = self.ctx.cfg, self.ctx.now
        low = 16 if cfg.wireshark_safe else 0
        sizes = [s for s in cfg.sizes if low <= s <= cfg.pmtu] or [min(64, cfg.pmtu)]
        for i in range(self.count):
            imm = self.rng.random() < 0.25
            n = self.rng.choice(sizes)
            op = UD_SEND_ONLY_IMM if imm else UD_SEND_ONLY
            psn = (self.psn + i) & 0xFFFFFF
            values = {"deth": {"q_key": UD_QKEY, "srcqp": self.src_qpn}}
            if imm:
                values["immdt"] = {"data": self.rng.randrange(1 << 32)}
            hdrs = transport_headers(op, values, m=1, destqp=self.dst_qpn, psn=psn)
            pkt = self.ctx.packet(self.sender, self.receiver, "ud", hdrs,
                                  payload(i * 31, n), vl=0, opcode=op, qp=self.dst_qpn,
                                  psn=psn, sport=0xC000 | (self.src_qpn & 0x3FFF))
            self.out.put(pkt, now + i * UD_GAP_NS)
        self.sent = self.count
        self.done_at = now + self.count * UD_GAP_NS

    @property
    def finished(self) -> bool:
        return self.done_at is not None and self.ctx.now >= self.done_at and not self.out

    def on_packet(self, pkt: Pkt) -> None:
        self.received += 1
        if pkt.ce and self.ctx.fabric.encap.startswith("roce2"):
            now = self.ctx.now
            if now - self.last_cnp >= self.ctx.cfg.cnp_gap_ns:
                self.last_cnp = now
                cnp = self.ctx.packet(
                    self.receiver, self.sender, "cnp",
                    transport_headers(CNP, becn=1, destqp=self.src_qpn, psn=0),
                    opcode=CNP, qp=self.src_qpn, psn=0,
                    sport=0xC000 | (self.dst_qpn & 0x3FFF))
                self.ctx.truth.cnp(cnp, pkt)
                self.cnp_out.put(cnp, now + self.ctx.cfg.resp_delay_ns)

    def describe(self) -> dict:
        return {"sender": self.sender.name, "src_qpn": self.src_qpn,
                "dest_qpn": self.dst_qpn, "q_key": UD_QKEY, "start_psn": self.psn,
                "sent": self.sent, "received": self.received}
