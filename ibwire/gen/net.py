"""Packets in flight: ports that serialise them, the link with its tap, delivery.

A `Port` owns the transmit side of one host: packet *sources* (RC requesters,
outboxes of responders and agents) offer their next packet, the port picks one
round-robin, gates it on link credits when flow control is on, holds the line for
the packet's serialisation time, then hands it to the `Net`. The net applies the
packet's fate (faults.py), records it at the tap and delivers it to the peer
port, which does the receive-side credit accounting and passes it to the host.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ibwire.gen.credits import CreditPort, blocks
from ibwire.gen.faults import Fate, Impairments, flip_bit
from ibwire.gen.pfc import ROCE_PRIORITY

if TYPE_CHECKING:
    from ibwire.gen.clock import Clock
    from ibwire.gen.pfc import PfcPort
    from ibwire.gen.tap import Tap
    from ibwire.gen.truth import Truth


@dataclass(eq=False)
class Pkt:
    """One transmission: wire bytes plus what the simulation needs to know about them."""

    src: int                    # host index (0 = A, 1 = B): also the link direction
    dst: int
    kind: str                   # req | resp | ud | mad | cnp | link | pfc
    vl: int
    data: bytes
    tx: int = 0                 # unique transmission id
    opcode: int = -1
    qp: int = -1                # BTH DestQP
    psn: int = -1
    info: Any = None            # the semantic record (RcInfo, MAD tuple, ...)
    pay_off: int = 0
    pay_len: int = 0
    icrc_off: int = 0
    corrupt: bool = False
    ce: bool = False
    mark: Callable[[bytes], bytes] | None = None   # sets CE/FECN in the bytes
    meta: dict = field(default_factory=dict)

    @property
    def nblocks(self) -> int:
        return blocks(len(self.data))


class Source(Protocol):
    def peek(self, now: int) -> Pkt | None: ...
    def take(self, now: int) -> Pkt: ...


class Outbox:
    """A FIFO source: packets become sendable at their ready time, in order."""

    def __init__(self, port: Port) -> None:
        self.port = port
        self.q: deque[tuple[int, Pkt]] = deque()
        port.sources.append(self)

    def put(self, pkt: Pkt, ready_at: int) -> None:
        if self.q and ready_at < self.q[-1][0]:
            ready_at = self.q[-1][0]        # keep FIFO order
        self.q.append((ready_at, pkt))
        self.port.kick_at(ready_at)

    def peek(self, now: int) -> Pkt | None:
        if self.q and self.q[0][0] <= now:
            return self.q[0][1]
        return None

    def take(self, now: int) -> Pkt:
        return self.q.popleft()[1]

    def __len__(self) -> int:
        return len(self.q)


class Port:
    """Transmit scheduler of one host's port."""

    def __init__(self, net: Net, index: int, rate_gbps: float,
                 credits: CreditPort | None) -> None:
        self.net = net
        self.index = index
        self.rate = rate_gbps
        self.credits = credits
        self.pfc: PfcPort | None = None       # RoCE priority flow control, when on
        self.sources: list[Source] = []
        self.link_q: deque[Pkt] = deque()
        self.busy = False
        self._rr = 0
        self._kicks: set[int] = set()
        self.receive: Callable[[Pkt], None] = lambda pkt: None

    def ser_ns(self, nbytes: int) -> int:
        return max(1, int(nbytes * 8 / self.rate))

    def kick(self) -> None:
        self.kick_at(self.net.clock.now)

    def kick_at(self, t: int) -> None:
        if t in self._kicks:
            return
        self._kicks.add(t)
        self.net.clock.at(t, self._kicked, t)

    def _kicked(self, t: int) -> None:
        self._kicks.discard(t)
        if not self.busy:
            self._next()

    def send_link(self, pkt: Pkt) -> None:
        self.link_q.append(pkt)
        self.kick()

    def _next(self) -> None:
        now = self.net.clock.now
        pkt = self.link_q.popleft() if self.link_q else self._pick(now)
        if pkt is None:
            return
        self.busy = True
        self.net.clock.after(self.ser_ns(len(pkt.data)), self._done, pkt)

    def _pick(self, now: int) -> Pkt | None:
        n = len(self.sources)
        cr = self.credits
        if self.pfc is not None and self.pfc.paused(ROCE_PRIORITY, now):
            return None
        for i in range(n):
            src = self.sources[(self._rr + i) % n]
            pkt = src.peek(now)
            if pkt is None:
                continue
            if cr is not None and cr.controlled(pkt.vl):
                nb = pkt.nblocks
                if not cr.can_send(pkt.vl, nb):
                    cr.blocked(pkt.vl, nb, now)
                    continue
                cr.on_send(pkt.vl, nb, now, pkt.tx)
            self._rr = (self._rr + i + 1) % n
            return src.take(now)
        return None

    def _done(self, pkt: Pkt) -> None:
        self.busy = False
        self.net.carry(pkt)
        self._next()


class Net:
    """The link between the two ports, with the tap in the middle."""

    def __init__(self, clock: Clock, tap: Tap, truth: Truth, faults: Impairments,
                 tap_delay_ns: int, rest_delay_ns: int) -> None:
        self.clock = clock
        self.tap = tap
        self.truth = truth
        self.faults = faults
        self.ports: list[Port] = []
        self.tap_delay = tap_delay_ns
        self.rest_delay = rest_delay_ns
        self._tx = 0

    def next_tx(self) -> int:
        self._tx += 1
        return self._tx

    def carry(self, pkt: Pkt) -> None:
        """The packet has left its port: decide its fate and move it on."""
        fate = self.faults.fate(pkt)
        if fate is None or fate.intact:
            self.clock.after(self.tap_delay, self._at_tap, pkt, None, False)
            return
        if fate.drop_before:
            self.truth.fate(pkt, fate, None, self.tap.count)
            return
        if fate.ce and pkt.mark is not None:
            pkt.data = pkt.mark(pkt.data)
            pkt.ce = True
        if fate.corrupt_bit >= 0:
            pkt.data = flip_bit(pkt.data, fate.corrupt_bit)
            pkt.corrupt = True
        self.clock.after(self.tap_delay + fate.delay_ns, self._at_tap, pkt, fate, False)
        if fate.duplicate:
            gap = self.ports[pkt.src].ser_ns(len(pkt.data))
            self.clock.after(self.tap_delay + fate.delay_ns + gap, self._at_tap, pkt,
                             fate, True)

    def _at_tap(self, pkt: Pkt, fate: Fate | None, copy: bool) -> None:
        missed = fate is not None and fate.capture_miss and not copy
        frame = None if missed else self.tap.record(pkt, self.clock.now)
        if fate is not None:
            if copy:
                self.truth.duplicate(pkt, frame)
            else:
                self.truth.fate(pkt, fate, frame, self.tap.count)
                if fate.drop_after:
                    return
        self.clock.after(self.rest_delay, self._deliver, pkt)

    def _deliver(self, pkt: Pkt) -> None:
        port = self.ports[pkt.dst]
        cr = port.credits
        if pkt.corrupt:
            # The receiver's link layer discards it (bad VCRC/ICRC): no buffer, no ABR.
            self.truth.discarded(pkt)
            return
        if port.pfc is not None and pkt.kind != "pfc":
            port.pfc.on_receive(ROCE_PRIORITY, len(pkt.data))
        if cr is not None and pkt.kind != "link" and cr.controlled(pkt.vl):
            nb = pkt.nblocks
            t = cr.on_receive(pkt.vl, nb, self.clock.now)
            self.clock.at(t, cr.drained, pkt.vl, nb)
        port.receive(pkt)
