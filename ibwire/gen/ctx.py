"""What every simulated agent shares: clock, configuration, fabric, link, tap, truth."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ibwire.gen.net import Pkt

if TYPE_CHECKING:
    from ibwire.fields import Header
    from ibwire.gen.clock import Clock
    from ibwire.gen.config import GenConfig
    from ibwire.gen.fabric import Fabric, Host
    from ibwire.gen.net import Net, Port
    from ibwire.gen.tap import Tap
    from ibwire.gen.truth import Truth


@dataclass
class Ctx:
    clock: Clock
    cfg: GenConfig
    fabric: Fabric
    net: Net
    tap: Tap
    truth: Truth
    rngs: dict[str, random.Random] = field(default_factory=dict)

    @property
    def now(self) -> int:
        return self.clock.now

    def rng(self, name: str) -> random.Random:
        """An independent seeded stream per purpose, so one knob does not shift another."""
        r = self.rngs.get(name)
        if r is None:
            r = self.rngs[name] = random.Random(f"{self.cfg.seed}:{name}")
        return r

    def port(self, host: Host) -> Port:
        return self.net.ports[host.index]

    def packet(self, src: Host, dst: Host, kind: str, transport: list[Header],
               payload: bytes = b"", *, vl: int = 0, sl: int = 0, info: Any = None,
               opcode: int = -1, qp: int = -1, psn: int = -1, sport: int = 0xC000,
               flow: int = 0, permissive: bool = False) -> Pkt:
        """Build the wire bytes of a transport packet and wrap them as a `Pkt`."""
        fab = self.fabric
        ect = self.cfg.ecn > 0 and kind in ("req", "ud")
        data = fab.build(src, dst, transport, payload, vl=vl, sl=sl, ect=ect, sport=sport,
                         flow=flow, permissive=permissive)
        trailer = 6 if fab.native else 4
        icrc_off = len(data) - trailer
        pay_end = icrc_off - ((-len(payload)) & 3)
        return Pkt(src=src.index, dst=dst.index, kind=kind, vl=vl, data=data,
                   tx=self.net.next_tx(), opcode=opcode, qp=qp, psn=psn, info=info,
                   pay_off=pay_end - len(payload), pay_len=len(payload), icrc_off=icrc_off,
                   mark=fab.mark_ce)
