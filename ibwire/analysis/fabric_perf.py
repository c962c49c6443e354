"""Port counters from Performance Management responses (IBA 16.1.3.5, 16.1.4.x) as
time series per port, with deltas and rates between reads and the counters
fabric engineers watch flagged.

A PMA answers from its port's LID (a switch's from port 0's LID) for the port in
PortSelect, so a series is keyed by (responder LID, PortSelect). A Set with a
non-zero CounterSelect clears the selected counters (IBA 16.1.3.5): the read
answering it, and the next delta, start from zero. PortCounters are saturating
counters (they stop at their maximum, they do not wrap), so a delta across a
saturated value is a lower bound and the read is flagged `saturated`.
"""

from __future__ import annotations

from typing import Any

from ibwire.analysis.fabric_mads import PERF_CLASS, SET, Exchange
from ibwire.analysis.fabric_model import CounterRead, Fabric
from ibwire.mad.names import attribute_id
from ibwire.mad.perf import PORT_COUNTERS, PORT_COUNTERS_EXT

KINDS = {attribute_id(PERF_CLASS, lay.label): (lay.name, lay.label, lay)
         for lay in (PORT_COUNTERS, PORT_COUNTERS_EXT)}
SELECT_FIELDS = ("port_select", "counter_select", "counter_select2")
# The counters that matter, and what a rise means.
WATCH = {
    "port_xmit_wait": "congestion",
    "symbol_error_counter": "cable",
    "link_error_recovery_counter": "cable",
    "link_downed_counter": "cable",
    "port_rcv_errors": "receive errors",
    "port_xmit_discards": "transmit discards",
}
ALL_PORTS = 0xFF
EXT_SPEEDS_COUNTERS = attribute_id(PERF_CLASS, "PortExtendedSpeedsCounters")


def _maxima(layout: Any) -> dict[str, int]:
    return {f.name: (1 << f.bits) - 1 for f in layout.fields
            if f.bits and not f.reserved and f.name not in SELECT_FIELDS}


MAXIMA = {attr: _maxima(lay) for attr, (_, _, lay) in KINDS.items()}
CLASS_PORT_INFO = attribute_id(PERF_CLASS, "ClassPortInfo")
# PMA ClassPortInfo capability bits (IBA 16.1.2): what a PMA counts at all.
CAP_EXT_WIDTH = 1 << 9           # PortCountersExtended unicast/multicast packet counters
CAP_XMIT_WAIT = 1 << 12          # PortCounters.PortXmitWait
CAP2_ADDL_EXT = 1 << 1           # PortCountersExtended CounterSelect2 and error counters
_EXT = [f.name for f in PORT_COUNTERS_EXT.fields]
EXT_PACKETS = _EXT[_EXT.index("port_unicast_xmit_pkts"):_EXT.index("symbol_error_counter")]
EXT_ADDL = ["counter_select2", *_EXT[_EXT.index("symbol_error_counter"):]]


def _caps(exchanges: list[Exchange]) -> dict[int | None, tuple[int, int]]:
    """(CapabilityMask, CapabilityMask2) of each PMA that answered ClassPortInfo."""
    out = {}
    for ex in exchanges:
        mad = ex.response
        if mad is not None and mad.mgmt_class == PERF_CLASS and \
                mad.attribute == CLASS_PORT_INFO and mad.status == 0:
            v = mad.values("classportinfo")
            if v is not None:
                out[mad.slid] = (v["capability_mask"], v["capability_mask2"])
    return out


def supported(kind: str, values: dict[str, int], caps: tuple[int, int] | None
              ) -> dict[str, int]:
    """Only the counters the PMA says it keeps (all of them when it was not asked):
    perfquery likewise leaves out what ClassPortInfo does not announce."""
    if caps is None:
        return values
    cap, cap2 = caps
    drop: set[str] = set()
    if kind == PORT_COUNTERS.label and not cap & CAP_XMIT_WAIT:
        drop.add("port_xmit_wait")
    if kind == PORT_COUNTERS_EXT.label:
        if not cap & CAP_EXT_WIDTH:
            drop.update(EXT_PACKETS)
        if not cap2 & CAP2_ADDL_EXT:
            drop.update(EXT_ADDL)
    return {k: v for k, v in values.items() if k not in drop}


def apply_perf(fab: Fabric, exchanges: list[Exchange]) -> None:
    opaque = 0
    fab.pma_caps = _caps(exchanges)
    for ex in exchanges:
        mad = ex.any
        if mad.mgmt_class == PERF_CLASS and mad.attribute == EXT_SPEEDS_COUNTERS and \
                ex.response is not None:
            opaque += 1
        if mad.mgmt_class != PERF_CLASS or mad.attribute not in KINDS:
            continue
        layer, kind, _ = KINDS[mad.attribute]
        req = ex.request
        is_reset = req is not None and req.method == SET
        src = ex.response if ex.response is not None and ex.response.status == 0 else None
        if src is None and not is_reset:
            continue
        v = (src or req).values(layer)  # type: ignore[union-attr]
        if v is None:
            continue
        counters = {k: val for k, val in v.items()
                    if k in MAXIMA[mad.attribute]} if src is not None else {}
        lid = src.slid if src is not None else (req.dlid if req is not None else None)
        mask = ((v["counter_select2"] << 16) | v["counter_select"]) if is_reset else 0
        caps = fab.pma_caps.get(lid)
        read = CounterRead((src or mad).ts, (src or mad).frame, lid, v["port_select"], kind,
                           supported(kind, counters, caps), reset=is_reset and mask != 0,
                           reset_mask=mask, selects=supported(
                               kind, {k: v[k] for k in SELECT_FIELDS if k in v}, caps))
        fab.counters.setdefault((lid, v["port_select"]), []).append(read)
    for reads in fab.counters.values():
        reads.sort(key=lambda r: (r.ts, r.frame))
    if opaque:
        fab.missing.append(f"{opaque} PortExtendedSpeedsCounters read(s) not decoded (the "
                           "layout depends on the port's FEC mode, which the MAD does not "
                           "carry)")


def series(reads: list[CounterRead]) -> list[dict[str, Any]]:
    """Each read with `delta` and `rate` (per second) against the previous read of the
    same kind. A reset read has no delta: the next one counts from its values (from
    zero when only the resetting Set was captured)."""
    out: list[dict[str, Any]] = []
    last: dict[str, CounterRead] = {}
    for r in reads:
        entry: dict[str, Any] = {"ts": r.ts, "frame": r.frame, "kind": r.kind,
                                 "values": dict(r.values), "reset": r.reset}
        maxima = next(MAXIMA[a] for a, k in KINDS.items() if k[1] == r.kind)
        entry["saturated"] = sorted(k for k, v in r.values.items() if v == maxima.get(k))
        prev = last.get(r.kind)
        if r.reset:
            last[r.kind] = r if r.values else CounterRead(
                r.ts, r.frame, r.lid, r.port, r.kind, dict.fromkeys(maxima, 0))
        elif r.values:
            if prev is not None:
                dt = r.ts - prev.ts
                delta = {k: v - prev.values[k] for k, v in r.values.items()
                         if k in prev.values}
                entry["delta"] = delta
                entry["rate"] = {k: d / dt for k, d in delta.items()} if dt > 0 else None
            last[r.kind] = r
        out.append(entry)
    return out


STRENGTH = {"nonzero": 0, "rising": 1, "saturated": 2}


def flags(reads: list[CounterRead]) -> list[dict[str, Any]]:
    """What the watched counters say, one entry per counter: `rising` between two
    reads (first frame it rose, total rise), `nonzero` when no two reads compare
    (counted since the last reset), `saturated` at the maximum."""
    found: dict[str, dict[str, Any]] = {}
    for entry in series(reads):
        for name, meaning in WATCH.items():
            if name not in entry["values"]:
                continue
            delta = (entry.get("delta") or {}).get(name)
            how = None
            if name in entry["saturated"]:
                how = "saturated"
            elif delta is not None and delta > 0:
                how = "rising"
            elif delta is None and not entry["reset"] and entry["values"][name] > 0:
                how = "nonzero"
            if how is None:
                continue
            old = found.get(name)
            if old is None or STRENGTH[how] > STRENGTH[old["how"]]:
                found[name] = {"counter": name, "meaning": meaning, "how": how,
                               "frame": entry["frame"], "value": entry["values"][name],
                               "rise": 0}
            if how == "rising":
                found[name]["rise"] += delta
                found[name]["value"] = entry["values"][name]
    return [found[n] for n in WATCH if n in found]
