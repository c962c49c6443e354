"""Ground truth of a sender's credits, from its true event log (docs/credits.md).

The simulator logs, per port and VL, every data packet the sender put on the link
(including those the capture misses), every flow-control packet of the peer it
received and every flow-control packet it sent. From that log, with the rules of
IBA §7.9 (12-bit counters, the gate (CL - (TBS + n)) mod 4096 <= 2048), this module
derives what a capture analysis should reconstruct:

* ``timeline``: [frame, t_ns, credits] after each captured send and each received
  FCCL, once the sender has a credit limit (the sender's own clock, capture epoch);
* ``starved``: [start_ns, end_ns, blocks] intervals where the sender lacked credits
  for the next packet it sent on the VL (ties: an FCCL lands before a send);
* ``missing_blocks``: [fc_frame, blocks] - blocks of data packets the capture lacks,
  sent since the sender's previous flow-control packet.

Written apart from the analysis kernel on purpose: tests compare the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ibwire.gen.tap import Tap

MOD = 4096
HALF = 2048


def credit_timeline(log: list[tuple[int, str, int, int | None]], tap: Tap,
                    base_ns: int) -> dict[str, Any]:
    order = sorted(range(len(log)), key=lambda i: (log[i][0], log[i][1] != "limit", i))
    events = [log[i] for i in order]
    # blocks of the next send after each event
    nxt = [-1] * len(events)
    need = -1
    for i in range(len(events) - 1, -1, -1):
        nxt[i] = need
        if events[i][1] == "send":
            need = events[i][2]
    cl: int | None = None
    tbs = 0
    timeline: list[list[int]] = []
    starved: list[list[int]] = []
    open_at: tuple[int, int] | None = None
    for (t, kind, value, tx), nn in zip(events, nxt):
        if kind == "send":
            tbs = (tbs + value) % MOD
        elif kind == "limit":
            cl = value
        if cl is None:
            continue
        d = (cl - tbs) % MOD
        frame = tap.first_frame(tx)
        if kind in ("send", "limit") and frame is not None:
            timeline.append([frame, base_ns + t, d if d <= HALF else d - MOD])
        short = nn >= 0 and (cl - (tbs + nn)) % MOD > HALF
        if short and open_at is None:
            open_at = (t, nn)
        elif not short and open_at is not None:
            if t > open_at[0]:
                starved.append([base_ns + open_at[0], base_ns + t, open_at[1]])
            open_at = None
    missing: list[list[int]] = []
    lost = 0
    for _t, kind, value, tx in log:                     # log order: FCTBS counts sends so far
        if kind == "send" and tap.first_frame(tx) is None:
            lost += value
        elif kind in ("sync", "init"):
            if lost and kind == "sync":
                missing.append([tap.first_frame(tx), lost % MOD])
            lost = 0
    return {"timeline": timeline, "starved": starved, "missing_blocks": missing}
