"""Per-frame analysis fields of the credit, PFC and congestion analyses.

`credit_fields(path)` returns one int64 array per field name, indexed by frame
(0-based: frame.number - 1), ABSENT where the field does not apply to the frame —
the shape an "analysis field provider" of `ibwire dump -Y / -T fields` consumes.
The names are registered here, so `ibwire fields` lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ibwire.fields import BOOL, REGISTRY, UINT16, UINT64

if TYPE_CHECKING:
    from ibwire.analysis.link_report import LinkOptions

ABSENT = np.iinfo(np.int64).min
INT32 = "int32"          # signed: credits below zero are a sender's protocol violation
FIELDS = {
    "infiniband.analysis.credits_available":
        (INT32, "Link credits (64-byte blocks) available to the sender after this "
                  "packet; on a flow-control packet, to the peer after this update"),
    "infiniband.analysis.credit_stall":
        (UINT64, "Time (ns) this data packet's VL was starved of credits before it"),
    "infiniband.analysis.credit_uncertain":
        (BOOL, "Credit value may be off: packets missing from the capture nearby"),
    "infiniband.analysis.fctbs_missing_blocks":
        (UINT16, "Blocks the sender counted in FCTBS that the capture lacks"),
    "ibwire.pfc.pause_ns":
        (UINT64, "Pause this PAUSE/PFC frame asks for, longest enabled priority (ns)"),
    "ibwire.pfc.paused":
        (BOOL, "Frame sent on a priority its sender had been told to pause"),
    "ibwire.ecn.mark_to_cnp_ns":
        (UINT64, "On a CNP: time since the congestion mark it answers (ns)"),
}
# The registry imports this module (`FIELD_MODULES`): the analyses themselves (Numba,
# the simulator's constants) load only when `credit_fields` runs.
for _name, (_ft, _label) in FIELDS.items():
    REGISTRY.add(_name, _ft, _label)


def credit_fields(path: str, opts: LinkOptions | None = None,
                  strict: bool = True) -> dict[str, np.ndarray]:
    """Per-frame values of every field in FIELDS for the capture at `path`."""
    from ibwire.analysis.credit_input import credit_columns

    return credit_fields_of(credit_columns(path, strict), opts)


def credit_fields_of(cols: dict[str, np.ndarray], opts: LinkOptions | None = None,
                     flows: list[dict] | None = None) -> dict[str, np.ndarray]:
    """`credit_fields` of columns already read (`credit_input.credit_columns`);
    `flows`: `congestion(cols)["flows"]` if the caller has it (default options)."""
    from ibwire.analysis.congestion import congestion
    from ibwire.analysis.credit_input import TIME_COLUMN
    from ibwire.analysis.credits import Geometry, analyze_credits
    from ibwire.analysis.link_report import DEFAULT_ROCE_GBPS, LinkOptions
    from ibwire.analysis.pfc import analyze_pfc, pause_events
    from ibwire.engines.credits_kernel import EV_LIMIT, EV_SEND, EV_SYNC, UNKNOWN
    from ibwire.headers.carriers import pause_ns

    opts = opts or LinkOptions()
    n = int(cols["frame.number"].shape[0])
    out = {name: np.full(n, ABSENT, np.int64) for name in FIELDS}
    rep = analyze_credits(cols, Geometry(opts.tx_to_tap_ns, opts.tap_to_rx_ns,
                                         opts.link_gbps))
    ev = rep.events
    for et in (EV_LIMIT, EV_SEND):               # a SEND's value wins on its own frame
        m = (ev["etype"] == et) & (ev["avail"] != UNKNOWN)
        out["infiniband.analysis.credits_available"][ev["frame"][m]] = ev["avail"][m]
        out["infiniband.analysis.credit_uncertain"][ev["frame"][m]] = ev["uncertain"][m]
    sync = ev["etype"] == EV_SYNC
    miss = np.where(ev["missing"][sync] >= 0, ev["missing"][sync], ABSENT)
    out["infiniband.analysis.fctbs_missing_blocks"][ev["frame"][sync]] = miss
    stall = out["infiniband.analysis.credit_stall"]
    stall[ev["frame"][ev["etype"] == EV_SEND]] = 0
    for s in rep.stalls:
        if s["packet_frame"] is not None:
            stall[s["packet_frame"] - 1] = s["duration_ns"]
    gbps = opts.link_gbps or DEFAULT_ROCE_GBPS
    pn = out["ibwire.pfc.pause_ns"]
    for i, _src, _p, q in pause_events(cols):
        pn[i] = max(int(pn[i]), pause_ns(q, gbps))
    _paused_frames(cols, analyze_pfc(cols, gbps, opts.tap_to_rx_ns, opts.storm_ms,
                                     opts.prio_map).intervals, out["ibwire.pfc.paused"],
                   opts)
    cnp_col = out["ibwire.ecn.mark_to_cnp_ns"]
    ts = cols[TIME_COLUMN]
    for f in congestion(cols)["flows"] if flows is None else flows:
        for cnp, cause in f.get("cnp_causes", []):
            cnp_col[cnp - 1] = int(ts[cnp - 1] - ts[cause - 1])
    return out


def _paused_frames(cols: dict[str, np.ndarray], intervals: list[dict], out: np.ndarray,
                   opts: LinkOptions) -> None:
    from ibwire.analysis.credit_input import TIME_COLUMN
    from ibwire.analysis.pfc import priorities

    prio = priorities(cols, opts.prio_map)
    ts = cols[TIME_COLUMN]
    mac = cols["eth.src"]
    roce = (cols["infiniband.bth.opcode"] >= 0) & (prio >= 0)
    out[roce] = 0
    for iv in intervals:
        m = roce & (prio == iv["priority"]) & (mac != iv["port"]) & \
            (ts >= iv["start_ns"]) & (ts < iv["end_ns"])
        out[m] = 1
