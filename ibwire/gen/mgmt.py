"""Management traffic: SMP discovery, SA PathRecord query, CM connect/disconnect.

Host A is the subnet manager (LID 1) and the active side of every connection.
The choreography, when enabled:

1. (native, `mads`) A discovers B with directed-route SMPs on VL15/QP0:
   Get NodeInfo, Get PortInfo, Set PortInfo (assigns LID 2), Get NodeDescription;
   then B asks the SA (at A) for a PathRecord to A over QP1;
2. (`cm`) per connection: REQ (A's QPN and starting PSN), REP (B's), RTU; A's
   requester starts when it sends the RTU, B's when the RTU arrives;
3. when every requester and UD sender is done: DREQ/DREP per connection.

MADs are UD SEND Only packets (BTH 0x64 + DETH) and are never impaired.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ibwire.constants import QP_SMI
from ibwire.gen import mads
from ibwire.gen.net import Outbox, Pkt
from ibwire.gen.rcwire import transport_headers
from ibwire.headers.opcodes import UD_SEND_ONLY

if TYPE_CHECKING:
    from ibwire.gen.ctx import Ctx
    from ibwire.gen.fabric import Host
    from ibwire.gen.qp import RcEndpoint

MAD_DELAY_NS = 2_000          # agent turnaround
Reply = Callable[[bytes], bytes]


class MadAgent:
    """QP0 and QP1 of one host."""

    def __init__(self, ctx: Ctx, host: Host, peer: Host, mgmt: Management) -> None:
        self.ctx, self.host, self.peer, self.mgmt = ctx, host, peer, mgmt
        self.outbox = Outbox(ctx.port(host))
        rng = ctx.rng(f"mad:{host.name}")
        self.psn = {0: rng.randrange(1 << 24), 1: rng.randrange(1 << 24)}

    def send(self, qp: int, mad: bytes) -> Pkt:
        smp = qp == QP_SMI
        native = self.ctx.fabric.native
        psn = self.psn[qp]
        self.psn[qp] = (psn + 1) & 0xFFFFFF
        hdrs = transport_headers(UD_SEND_ONLY, {"deth": {"q_key": 0 if smp else mads.GSI_QKEY,
                                                         "srcqp": qp}},
                                 m=1, destqp=qp, psn=psn)
        pkt = self.ctx.packet(self.host, self.peer, "mad", hdrs, mad,
                              vl=15 if smp and native else 0, permissive=smp and native,
                              info=mad, opcode=UD_SEND_ONLY, qp=qp, psn=psn)
        self.outbox.put(pkt, self.ctx.now + MAD_DELAY_NS)
        cls, method, attr, tid = mads.describe(mad)
        self.mgmt.log.append({"tx": pkt.tx, "from": self.host.name, "qp": qp,
                              "class": cls, "method": method, "attribute": attr,
                              "tid": f"{tid:#018x}"})
        return pkt

    def on_packet(self, pkt: Pkt) -> None:
        self.mgmt.arrived(self, pkt.info)


class Management:
    def __init__(self, ctx: Ctx, hosts: list[Host], endpoints: list[tuple[RcEndpoint,
                 RcEndpoint]], on_ready: Callable[[], None],
                 on_closed: Callable[[], None]) -> None:
        self.ctx = ctx
        self.a, self.b = hosts[0], hosts[1]
        self.agents = [MadAgent(ctx, self.a, self.b, self), MadAgent(ctx, self.b, self.a, self)]
        self.pairs = endpoints
        self.on_ready, self.on_closed = on_ready, on_closed
        self.rng = ctx.rng("mgmt")
        self._expect: dict[tuple[int, int], Callable[[bytes], None]] = {}
        self._answer: dict[tuple[int, int], Reply] = {}
        self.comm_ids: list[tuple[int, int]] = []
        self.log: list[dict] = []

    # -- plumbing --------------------------------------------------------------------
    def _tid(self) -> int:
        return self.rng.randrange(1, 1 << 63)

    def exchange(self, src: int, mad: bytes, reply: Reply | None,
                 then: Callable[[bytes], None]) -> None:
        """src sends `mad`; the peer answers with reply(mad) (if given); `then` runs
        with whatever arrives at the other end last."""
        _, _, _, tid = mads.describe(mad)
        dst = 1 - src
        if reply is None:
            self._expect[(dst, tid)] = then
        else:
            self._answer[(dst, tid)] = reply
            self._expect[(src, tid)] = then
        self.agents[src].send(mads.mad_qp(mad), mad)

    def arrived(self, agent: MadAgent, mad: bytes) -> None:
        me = agent.host.index
        _, _, _, tid = mads.describe(mad)
        answer = self._answer.pop((me, tid), None)
        if answer is not None:
            agent.send(mads.mad_qp(mad), answer(mad))
            return
        then = self._expect.pop((me, tid), None)
        if then is not None:
            then(mad)

    # -- 1. discovery --------------------------------------------------------------------
    def start(self) -> None:
        cfg = self.ctx.cfg
        if cfg.mads:
            self._discover()
        else:
            self._connect(0)

    def _discover(self) -> None:
        a, b, cfg = self.a, self.b, self.ctx.cfg
        vls = {1: 1, 2: 2}.get(cfg.vls, 3 if cfg.vls <= 4 else 4)
        steps = [
            (mads.GET, mads.NODE_INFO, 0, {}, mads.node_info(b.guid, b.guid)),
            (mads.GET, mads.PORT_INFO, 1, {}, mads.port_info(0, 0, cfg.pmtu, False, vls)),
            (mads.SET, mads.PORT_INFO, 1, mads.port_info(b.lid, a.lid, cfg.pmtu, False, vls),
             mads.port_info(b.lid, a.lid, cfg.pmtu, False, vls)),
            (mads.GET, mads.NODE_DESCRIPTION, 0, {},
             mads.node_description(f"ibwire-gen host {b.name}")),
        ]

        def step(i: int) -> None:
            if i == len(steps):
                self._path_query()
                return
            method, attr, mod, data, answer = steps[i]
            req = mads.smp_dr(method, self._tid(), attr, data, attr_mod=mod)
            self.exchange(0, req, lambda m, answer=answer, attr=attr, mod=mod:
                          mads.smp_dr(mads.GET_RESP, mads.describe(m)[3], attr, answer,
                                      attr_mod=mod, returning=True,
                                      return_path=b"\x00\x01"),
                          lambda _m: step(i + 1))

        step(0)

    def _path_query(self) -> None:
        a, b, cfg = self.a, self.b, self.ctx.cfg
        rate = mads.RATE_100G if cfg.link_rate >= 100 else mads.RATE_25G
        query = mads.path_query(self._tid(), b.gid, a.gid)
        self.exchange(1, query,
                      lambda m: mads.path_answer(mads.describe(m)[3], b.gid, a.gid, b.lid,
                                                 a.lid, mtu=cfg.pmtu, rate=rate),
                      lambda _m: self._connect(0))

    # -- 2. connections --------------------------------------------------------------
    def _connect(self, i: int) -> None:
        cfg = self.ctx.cfg
        if not cfg.cm or i == len(self.pairs):
            self.on_ready()
            return
        ea, eb = self.pairs[i]
        ca, cb = self.rng.randrange(1, 1 << 32), self.rng.randrange(1, 1 << 32)
        self.comm_ids.append((ca, cb))
        a, b = self.a, self.b
        tid = self._tid()
        rate = mads.RATE_100G if cfg.link_rate >= 100 else mads.RATE_25G
        req = mads.cm_req(tid, ca, a.guid, ea.qpn, ea.start_psn, pmtu=cfg.pmtu,
                          local_lid=a.lid if cfg.native else 0,
                          remote_lid=b.lid if cfg.native else 0, local_gid=a.gid,
                          remote_gid=b.gid, timeout=cfg.timeout, retry_cnt=cfg.retry_cnt,
                          rnr_retry=cfg.rnr_retry, rate=rate, sl=ea.sl)

        def got_rep(_m: bytes) -> None:
            rtu = mads.cm_simple(mads.CM_RTU, tid, ca, cb)
            self.exchange(0, rtu, None, lambda _r: self._rtu_arrived(eb, i))
            if ea.requester is not None:
                # A sends only after its RTU is on the wire (the RTU leaves after the
                # agent's turnaround).
                self.ctx.clock.after(MAD_DELAY_NS + 1, ea.requester.start)

        self.exchange(0, req, lambda m: mads.cm_rep(
            tid, cb, ca, b.guid, eb.qpn, eb.start_psn, rnr_retry=cfg.rnr_retry), got_rep)

    def _rtu_arrived(self, eb: RcEndpoint, i: int) -> None:
        if eb.requester is not None:
            eb.requester.start()
        self._connect(i + 1)

    # -- 3. teardown -------------------------------------------------------------------
    def close(self, i: int = 0) -> None:
        if not self.ctx.cfg.cm or i == len(self.pairs):
            self.on_closed()
            return
        ea, eb = self.pairs[i]
        ca, cb = self.comm_ids[i]
        tid = self._tid()
        dreq = mads.cm_simple(mads.CM_DREQ, tid, ca, cb, remote_qpn=eb.qpn)
        self.exchange(0, dreq, lambda m: mads.cm_simple(mads.CM_DREP, tid, cb, ca),
                      lambda _m: self.close(i + 1))
