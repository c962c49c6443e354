"""Seeded fault injection: what happens to one packet on its way across the link.

The link is host A -- [segment 1] -- tap -- [segment 2] -- host B (and back).
Impairments act where a real network would put them relative to the tap:

* congestion marking (CE / FECN), corruption and reordering delay happen in
  segment 1, so the capture shows the marked, flipped or late packet;
* loss happens in segment 1 (`loss_before_tap` of the time: the packet never
  reaches the capture) or in segment 2 (captured, then lost);
* capture loss: delivered, but the tap misses it;
* duplication: the network delivers (and the tap sees) a second copy.

Only transport data packets (RC requests and responses, UD) are impaired; MADs,
CNPs and link flow-control packets pass untouched, so connection setup and
credit accounting stay interpretable. Every draw comes from one seeded stream in
a fixed order per packet, so a run is reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibwire.gen.config import GenConfig
    from ibwire.gen.net import Pkt

IMPAIRED_KINDS = frozenset({"req", "resp", "ud"})
DIRS = ("a2b", "b2a")


@dataclass(slots=True)
class Fate:
    drop_before: bool = False
    drop_after: bool = False
    corrupt_bit: int = -1       # bit index within the packet bytes; -1 = intact
    delay_ns: int = 0           # extra delay before the tap (reordering)
    duplicate: bool = False
    capture_miss: bool = False
    ce: bool = False

    @property
    def intact(self) -> bool:
        return not (self.drop_before or self.drop_after or self.corrupt_bit >= 0 or
                    self.delay_ns or self.duplicate or self.capture_miss or self.ce)


class Impairments:
    """Decides each data packet's fate from the configured probabilities."""

    def __init__(self, cfg: GenConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(f"{cfg.seed}:faults")
        self.loss_dirs = {"both": DIRS, "a2b": ("a2b",), "b2a": ("b2a",)}[cfg.loss_dir]

    def fate(self, pkt: Pkt) -> Fate | None:
        if pkt.kind not in IMPAIRED_KINDS:
            return None
        cfg, r = self.cfg, self.rng
        # Always draw the same number of values so one knob never shifts another's draws.
        u_loss, u_where, u_corrupt, u_bit, u_reorder, u_dup, u_cap, u_ce = (
            r.random() for _ in range(8))
        fate = Fate()
        direction = DIRS[pkt.src]
        if direction in self.loss_dirs and u_loss < cfg.loss:
            if u_where < cfg.loss_before_tap:
                fate.drop_before = True
                return fate
            fate.drop_after = True
        if u_corrupt < cfg.corrupt:
            fate.corrupt_bit = corrupt_position(pkt, u_bit)
        if u_reorder < cfg.reorder:
            fate.delay_ns = cfg.reorder_delay_ns
        if u_dup < cfg.duplicate and not fate.drop_after:
            fate.duplicate = True
        if u_cap < cfg.capture_loss:
            fate.capture_miss = True
        # Congestion marks apply to traffic towards a responder or UD receiver.
        if pkt.kind in ("req", "ud") and u_ce < cfg.ecn:
            fate.ce = True
        return fate


def corrupt_position(pkt: Pkt, u: float) -> int:
    """A bit inside the payload (else inside the ICRC): the headers stay decodable,
    and both the ICRC and (natively) the VCRC turn bad."""
    if pkt.pay_len > 0:
        start, n = pkt.pay_off, pkt.pay_len
    else:
        start, n = pkt.icrc_off, 4
    return start * 8 + min(int(u * n * 8), n * 8 - 1)


def flip_bit(data: bytes, bit: int) -> bytes:
    buf = bytearray(data)
    buf[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(buf)
