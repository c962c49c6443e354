"""Assemble and run one simulated fabric; collect the capture and its ground truth.

    result = simulate(scenario("rc_loss", seed=7))
    result.write("rc_loss.pcap")          # also writes rc_loss.truth.json

Order of a run: link initialisation (flow-control init packets, when credits are
on), management (SMP discovery, SA query, CM connect) or an immediate start,
RC and UD traffic, then CM disconnect once every requester and UD sender is done.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import ibwire
from ibwire.capture import Frame
from ibwire.gen.clock import Clock
from ibwire.gen.config import GenConfig
from ibwire.gen.credit_truth import credit_timeline
from ibwire.gen.credits import CreditPort
from ibwire.gen.ctx import Ctx
from ibwire.gen.fabric import Fabric, make_hosts
from ibwire.gen.faults import DIRS, Impairments
from ibwire.gen.mgmt import Management
from ibwire.gen.net import Net, Pkt, Port
from ibwire.gen.pfc_sim import attach_pfc, on_pfc_frame, pfc_truth
from ibwire.gen.qp import HostStack, RcEndpoint, make_messages
from ibwire.gen.requester import Requester
from ibwire.gen.responder import Responder
from ibwire.gen.tap import BASE_NS, Tap
from ibwire.gen.truth import Truth
from ibwire.gen.ud import UdPair

POLL_NS = 20_000
START_NS = 1_000
MAX_SIM_NS = 600 * 10**9
TRUTH_FORMAT = "ibwire-gen-truth/1"


@dataclass
class GenResult:
    config: GenConfig
    frames: list[Frame]
    linktype: int
    truth: dict[str, Any]
    tap: Tap

    def write(self, path: str, fmt: str | None = None, truth: bool = True) -> str | None:
        """Write the capture (and `<name>.truth.json` beside it); return the truth path."""
        fmt = fmt or self.config.fmt
        self.tap.write(path, fmt)
        if not truth:
            return None
        doc = dict(self.truth)
        doc["capture"] = {**doc["capture"], "file": os.path.basename(path), "format": fmt}
        tpath = truth_path(path)
        with open(tpath, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        return tpath


def truth_path(capture_path: str) -> str:
    base = capture_path[:-3] if capture_path.endswith(".gz") else capture_path
    root, ext = os.path.splitext(base)
    return (root if ext in (".pcap", ".pcapng", ".erf", ".cap") else base) + ".truth.json"


class Simulation:
    def __init__(self, cfg: GenConfig) -> None:
        self.cfg = cfg
        self.clock = clock = Clock()
        self.hosts = hosts = make_hosts(cfg.encap)
        self.fabric = Fabric(cfg.encap, hosts)
        self.tap = Tap(self.fabric.native, link_pad=cfg.link_record_pad)
        self.truth = Truth(clock, BASE_NS)
        half = cfg.prop_ns // 2
        self.net = Net(clock, self.tap, self.truth, Impairments(cfg), half, cfg.prop_ns - half)
        self.ctx = ctx = Ctx(clock, cfg, self.fabric, self.net, self.tap, self.truth)
        self.vls = tuple(range(cfg.vls))
        for h in hosts:
            cr = None
            if cfg.link_credits:
                cr = CreditPort(cfg.link_credits, self.vls, cfg.drain_gbps or cfg.link_rate)
            self.net.ports.append(Port(self.net, h.index, cfg.link_rate, cr))
        if cfg.pfc:
            attach_pfc(self, hosts)
        self.stacks = [HostStack(ctx, h) for h in hosts]
        for port, stack in zip(self.net.ports, self.stacks):
            port.receive = lambda pkt, port=port, stack=stack: self._receive(port, stack, pkt)
        self.pairs: list[tuple[RcEndpoint, RcEndpoint]] = []
        self.requesters: list[Requester] = []
        self._build_connections()
        self.ud: list[UdPair] = []
        if cfg.ud_messages:
            rng = ctx.rng("ud-qp")
            ud = UdPair(ctx, hosts[0], hosts[1], rng.randrange(0x100, 0xFFFF00),
                        rng.randrange(0x100, 0xFFFF00), cfg.ud_messages)
            self.stacks[1].bind(ud.dst_qpn, ud.on_packet)
            self.stacks[0].bind(ud.src_qpn, lambda pkt: None)     # CNPs for the sender
            self.ud.append(ud)
        self.mgmt = Management(ctx, hosts, self.pairs, self._ready, self._closed)
        for agent, stack in zip(self.mgmt.agents, self.stacks):
            stack.bind(0, agent.on_packet)
            stack.bind(1, agent.on_packet)
        self.finished = False
        self.closing = False

    # -- set-up ------------------------------------------------------------------------
    def _build_connections(self) -> None:
        cfg, ctx = self.cfg, self.ctx
        a, b = self.hosts
        rng = ctx.rng("traffic")
        n_req = cfg.connections * (2 if cfg.bidirectional else 1)
        per_pkts = None if cfg.packets is None else max(1, -(-cfg.packets // n_req))
        for i in range(cfg.connections):
            qa, qb = rng.randrange(0x11, 0xFFFF00), rng.randrange(0x11, 0xFFFF00)
            vl = self.vls[i % len(self.vls)]
            ea = RcEndpoint(ctx, a, b, qa, qb, vl, vl)
            eb = RcEndpoint(ctx, b, a, qb, qa, vl, vl)
            for ep in (ea, eb):
                ep.start_psn = cfg.psn_start if cfg.psn_start is not None else \
                    rng.randrange(1 << 24)
            roles = [(ea, eb)] + ([(eb, ea)] if cfg.bidirectional else [])
            for req_ep, resp_ep in roles:
                msgs = make_messages(ctx, rng, cfg.messages, per_pkts,
                                     wr_base=len(self.requesters) * 100000)
                req_ep.requester = Requester(req_ep, req_ep.start_psn, msgs)
                resp_ep.responder = Responder(resp_ep, req_ep.start_psn)
                req_ep.port.sources.append(req_ep.requester)
                self.requesters.append(req_ep.requester)
            self.stacks[0].bind(qa, ea.on_packet)
            self.stacks[1].bind(qb, eb.on_packet)
            self.pairs.append((ea, eb))

    # -- link layer ----------------------------------------------------------------------
    def _receive(self, port: Port, stack: HostStack, pkt: Pkt) -> None:
        if pkt.kind == "pfc":
            on_pfc_frame(port, pkt)
            return
        if pkt.kind == "link":
            d = pkt.data
            if port.credits is not None:
                port.credits.on_fc_packet(d[2] >> 4, ((d[0] & 0xF) << 8) | d[1],
                                          ((d[2] & 0xF) << 8) | d[3], pkt.tx, self.clock.now)
                port.kick()
            return
        stack.receive(pkt)

    def _fc_tick(self, init: bool) -> None:
        for port in self.net.ports:
            cr = port.credits
            if cr is None:
                continue
            for vl in self.vls:
                tx = self.net.next_tx()
                data = cr.fc_packet(vl, init, self.clock.now, tx)
                port.send_link(Pkt(src=port.index, dst=1 - port.index, kind="link", vl=vl,
                                   data=data, tx=tx))
        if not self.finished:
            self.clock.after(self.cfg.fc_period_ns, self._fc_tick, False)

    # -- phases ----------------------------------------------------------------------------
    def _ready(self) -> None:
        for r in self.requesters:
            r.start()
        for ud in self.ud:
            ud.start()
        self.clock.after(POLL_NS, self._poll)

    def _poll(self) -> None:
        done = all(r.finished for r in self.requesters) and all(u.finished for u in self.ud)
        if done and not self.closing:
            self.closing = True
            self.mgmt.close()
        elif not done and self.clock.now < MAX_SIM_NS:
            self.clock.after(POLL_NS, self._poll)
        elif not done:
            self._closed()

    def _closed(self) -> None:
        # Let packets already on the wire arrive, then stop (stale timers stay unrun).
        self.finished = True
        self.clock.stop_at = self.clock.now + 4 * self.cfg.prop_ns + 10_000

    def run(self) -> GenResult:
        if self.cfg.link_credits:
            self.clock.at(0, self._fc_tick, True)
        self.clock.at(START_NS, self.mgmt.start)
        self.clock.run(until=MAX_SIM_NS + 10**9)
        for port in self.net.ports:
            if port.credits is not None:
                port.credits.close(self.clock.now)
            if port.pfc is not None:
                port.pfc.close()
        return GenResult(self.cfg, self.tap.frames, self.tap.linktype, self._truth(), self.tap)

    # -- ground truth ----------------------------------------------------------------------
    def _truth(self) -> dict[str, Any]:
        tap, cfg = self.tap, self.cfg
        doc: dict[str, Any] = {
            "format": TRUTH_FORMAT,
            "generator": {"name": "ibwire.gen", "version": ibwire.__version__},
            "scenario": cfg.name, "seed": cfg.seed, "params": cfg.to_json(),
            "capture": {
                "file": None, "format": cfg.fmt, "linktype": tap.linktype,
                "frames": tap.count, "frame_numbering": "1-based, as tshark frame.number",
                "first_ts_ns": tap.frames[0].ts_ns if tap.frames else None,
                "last_ts_ns": tap.frames[-1].ts_ns if tap.frames else None,
                "erf_capture_interface": {"0": "a2b (A->B)", "1": "b2a (B->A)"}
                if self.fabric.native else None,
                "link_record_padding": len(tap.link_pad) if cfg.link_credits else None,
            },
            "fabric": self.fabric.describe(),
            "directions": {"a2b": "A->B", "b2a": "B->A"},
            "psn_arithmetic": "24-bit modular",
            "connections": [{"index": i, "a": ea.describe(), "b": eb.describe(),
                             "cm_comm_ids": list(self.mgmt.comm_ids[i])
                             if i < len(self.mgmt.comm_ids) else None}
                            for i, (ea, eb) in enumerate(self.pairs)],
            "ud": [u.describe() for u in self.ud],
            "management": [{"frame": tap.first_frame(m["tx"]),
                            **{k: v for k, v in m.items() if k != "tx"}}
                           for m in self.mgmt.log],
            "opcode_counts": tap.opcode_counts(),
            "frame_kinds": dict(sorted(tap.kinds.items())),
        }
        doc.update(self.truth.resolve(tap))
        doc["link"] = self._link_truth()
        if cfg.pfc:
            doc["pfc"] = pfc_truth(self)
        doc["sim"] = {"end_ns": self.clock.now, "events_run": self.clock.events_run,
                      "unclaimed_packets": sum(s.unclaimed for s in self.stacks)}
        return doc

    def _link_truth(self) -> dict[str, Any] | None:
        if not self.cfg.link_credits:
            return None
        out: dict[str, Any] = {"buffer_blocks": self.cfg.link_credits,
                               "block_bytes": 64, "fc_period_ns": self.cfg.fc_period_ns,
                               "drain_gbps": self.cfg.drain_gbps or self.cfg.link_rate,
                               "link_gbps": self.cfg.link_rate, "per_direction": {}}
        for port in self.net.ports:
            cr, peer = port.credits, self.net.ports[1 - port.index].credits
            assert cr is not None and peer is not None
            per_vl = {}
            for vl, s in cr.vl.items():
                stalls = []
                for st in s.stalls:
                    st = dict(st)
                    st["start_ts_ns"] = BASE_NS + st["start_ns"]
                    st["end_ts_ns"] = None if st["end_ns"] is None else BASE_NS + st["end_ns"]
                    st["released_by_frame"] = self.tap.first_frame(st.pop("released_by_tx",
                                                                          None))
                    stalls.append(st)
                rx = peer.vl[vl]
                per_vl[str(vl)] = {"stalls": stalls, "fc_packets_sent_by_sender": s.fc_sent,
                                   "final_tbs": s.tbs, "receiver_overruns": rx.overruns,
                                   "receiver_max_occupied_blocks": rx.max_occupied,
                                   **credit_timeline(s.log, self.tap, BASE_NS),
                                   "receiver_at_updates": [
                                       [self.tap.first_frame(tx), BASE_NS + t, occ]
                                       for t, tx, occ in rx.fc_log]}
            out["per_direction"][DIRS[port.index]] = per_vl
        return out


def simulate(cfg: GenConfig) -> GenResult:
    """Run the simulation for `cfg` and return the frames and the ground truth."""
    return Simulation(cfg).run()
