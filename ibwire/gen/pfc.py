"""Priority Flow Control on a RoCE link (IEEE 802.1Qbb; docs/credits.md §2).

Each port, as receiver, holds an ingress buffer per priority that drains at
`drain_gbps`. When it reaches `pfc_xoff_bytes` the port sends a PFC frame with the
priority's class enabled and `pfc_quanta` (XOFF), repeats it every half pause while
still above `pfc_xon_bytes`, and sends quanta 0 (XON) once it falls below (unless
`pfc_send_xon` is off: then the last pause simply runs out). As
sender, a port receiving a PFC frame stops every enabled priority until
now + quanta x 512 bit times (a new frame replaces the deadline; quanta 0 resumes
at once). MAC Control frames themselves are never paused. Every pause a port
undergoes is logged for the ground truth, in the receiving port's clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibwire.constants import ETHERTYPE_MAC_CONTROL, MACC_OP_PFC
from ibwire.gen.fabric import ROCE_DSCP
from ibwire.headers.carriers import ETHERNET, MACC, MACC_PFC, PFC_PRIORITIES, pause_ns

PFC_DST_MAC = "01:80:c2:00:00:01"    # IEEE 802.3 MAC Control multicast
MIN_FRAME = 60                       # without FCS
ROCE_PRIORITY = ROCE_DSCP >> 3       # the 8-class DSCP-to-priority mapping


def pfc_frame(src_mac: str, prio: int, quanta: int) -> bytes:
    params: dict[str, Any] = {"enbv": 1 << prio, f"c{prio}": quanta}
    data = (ETHERNET(dst=PFC_DST_MAC, src=src_mac, type=ETHERTYPE_MAC_CONTROL).bytes() +
            MACC(opcode=MACC_OP_PFC).bytes() + MACC_PFC(**params).bytes())
    return data + bytes(MIN_FRAME - len(data))


class PfcPort:
    """PFC state of one port: its ingress buffers (receiver) and its pauses (sender)."""

    def __init__(self, mac: str, rate_gbps: float, drain_gbps: float, xoff: int, xon: int,
                 quanta: int, send_xon: bool, send: Callable[[bytes], None], now: Callable[[], int],
                 at: Callable[..., None]) -> None:
        self.mac, self.rate, self.drain = mac, rate_gbps, drain_gbps
        self.xoff, self.xon, self.quanta, self.send_xon = xoff, xon, quanta, send_xon
        self.send, self.now, self.at = send, now, at
        self.occupied = [0] * PFC_PRIORITIES
        self.drain_free_at = [0] * PFC_PRIORITIES
        self.xoff_sent = [False] * PFC_PRIORITIES
        self.paused_until = [0] * PFC_PRIORITIES
        self.open: list[dict[str, Any] | None] = [None] * PFC_PRIORITIES
        self.pauses: list[dict[str, Any]] = []
        self.frames_sent = 0

    # -- sender side -----------------------------------------------------------------
    def paused(self, prio: int, now: int) -> bool:
        return now < self.paused_until[prio]

    def on_pfc(self, enbv: int, quanta: list[int], frame_tx: int) -> None:
        now = self.now()
        for p in range(PFC_PRIORITIES):
            if not enbv >> p & 1:
                continue
            iv = self.open[p]
            if iv is not None and now >= self.paused_until[p]:
                self._close(p, self.paused_until[p], "expired", None)
                iv = None
            q = quanta[p]
            if iv is not None and q == 0:
                self._close(p, now, "xon", frame_tx)
                self.paused_until[p] = now
            elif q > 0:
                self.paused_until[p] = now + pause_ns(q, self.rate)
                if iv is None:
                    self.open[p] = {"priority": p, "start_ns": now, "start_tx": frame_tx,
                                    "quanta": q}

    def _close(self, p: int, at: int, how: str, tx: int | None) -> None:
        iv = self.open[p]
        assert iv is not None
        iv.update(end_ns=at, ended_by=how, end_tx=tx)
        self.pauses.append(iv)
        self.open[p] = None

    def close(self) -> None:
        for p in range(PFC_PRIORITIES):
            if self.open[p] is not None:
                self._close(p, self.paused_until[p], "expired", None)

    # -- receiver side ---------------------------------------------------------------
    def on_receive(self, prio: int, nbytes: int) -> None:
        now = self.now()
        self.occupied[prio] += nbytes
        start = max(now, self.drain_free_at[prio])
        self.drain_free_at[prio] = done = start + int(nbytes * 8 / self.drain)
        self.at(done, self._drained, prio, nbytes)
        if self.occupied[prio] >= self.xoff and not self.xoff_sent[prio]:
            self.xoff_sent[prio] = True
            self._send(prio, self.quanta)
            self.at(now + pause_ns(self.quanta, self.rate) // 2, self._refresh, prio)

    def _refresh(self, prio: int) -> None:
        if self.xoff_sent[prio]:
            self._send(prio, self.quanta)
            self.at(self.now() + pause_ns(self.quanta, self.rate) // 2, self._refresh, prio)

    def _drained(self, prio: int, nbytes: int) -> None:
        self.occupied[prio] -= nbytes
        if self.xoff_sent[prio] and self.occupied[prio] <= self.xon:
            self.xoff_sent[prio] = False
            if self.send_xon:
                self._send(prio, 0)

    def _send(self, prio: int, quanta: int) -> None:
        self.frames_sent += 1
        self.send(pfc_frame(self.mac, prio, quanta))
