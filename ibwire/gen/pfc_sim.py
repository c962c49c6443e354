"""Hooks that put PFC (`ibwire.gen.pfc`) into a simulation, and its ground truth."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ibwire.gen.faults import DIRS
from ibwire.gen.net import Pkt, Port
from ibwire.gen.pfc import PfcPort
from ibwire.gen.tap import BASE_NS
from ibwire.headers.carriers import ETHERNET, MACC, MACC_PFC, PFC_PRIORITIES

if TYPE_CHECKING:
    from ibwire.gen.fabric import Host
    from ibwire.gen.sim import Simulation

PFC_AT = ETHERNET.size + MACC.size


def attach_pfc(sim: Simulation, hosts: list[Host]) -> None:
    cfg, clock, net = sim.cfg, sim.clock, sim.net
    for port, host in zip(net.ports, hosts):
        def send(data: bytes, port: Port = port) -> None:
            port.send_link(Pkt(src=port.index, dst=1 - port.index, kind="pfc", vl=0,
                               data=data, tx=net.next_tx()))
        port.pfc = PfcPort(host.mac, cfg.link_rate, cfg.drain_gbps or cfg.link_rate,
                           cfg.pfc_xoff_bytes, cfg.pfc_xon_bytes, cfg.pfc_quanta, cfg.pfc_send_xon,
                           send,
                           lambda: clock.now, clock.at)


def on_pfc_frame(port: Port, pkt: Pkt) -> None:
    """The port receives a PFC frame: pause (or resume) its priorities."""
    if port.pfc is None:
        return
    v = MACC_PFC.unpack(pkt.data, PFC_AT)
    port.pfc.on_pfc(v["enbv"], [v[f"c{i}"] for i in range(PFC_PRIORITIES)], pkt.tx)
    for p in range(PFC_PRIORITIES):
        if v["enbv"] >> p & 1:
            port.kick_at(max(port.pfc.paused_until[p], port.net.clock.now))


def pfc_truth(sim: Simulation) -> dict[str, Any]:
    """Every pause each port underwent (its own clock, capture epoch), with frames."""
    cfg, tap = sim.cfg, sim.tap
    out: dict[str, Any] = {"link_gbps": cfg.link_rate, "quanta": cfg.pfc_quanta,
                           "xoff_bytes": cfg.pfc_xoff_bytes, "xon_bytes": cfg.pfc_xon_bytes,
                           "drain_gbps": cfg.drain_gbps or cfg.link_rate,
                           "pause_time": "quanta x 512 bit times, whole ns (int)",
                           "paused": {}}
    for port, host in zip(sim.net.ports, sim.hosts):
        assert port.pfc is not None
        peer = sim.net.ports[1 - port.index].pfc
        assert peer is not None
        out["paused"][DIRS[port.index]] = {
            "port_mac": host.mac, "pause_sender_mac": peer.mac,
            "pfc_frames_sent_by_peer": peer.frames_sent,
            "intervals": [{"priority": iv["priority"], "start_ns": BASE_NS + iv["start_ns"],
                           "end_ns": BASE_NS + iv["end_ns"], "ended_by": iv["ended_by"],
                           "start_frame": tap.first_frame(iv["start_tx"]),
                           "end_frame": tap.first_frame(iv["end_tx"])}
                          for iv in port.pfc.pauses]}
    return out
