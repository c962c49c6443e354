"""`-z` collectors fed from column chunks.

Rows fall in groups of alike frames (`rows.groups`); a collector's text for a
group (protocol stack, endpoint names, expert items) comes from the per-packet
code run on the group's first row, its counts and times from the columns. Rows
the engine handed over, malformed ones and possible MADs (QP0/QP1) are fed per
packet. Everything is applied in the order of each group's first row, so every
dictionary the collectors keep fills in the order the per-packet feed fills it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ibwire.cli.bulk.rows import B16_KEYS, Rows, groups
from ibwire.cli.stats import Stat
from ibwire.cli.stats.conv import (
    PSN_SAMPLE,
    Conversations,
    Endpoints,
    _Flow,
    _ib_addr,
    endpoint_pair,
)
from ibwire.cli.stats.expert import SEVERITIES, Expert, expert_items
from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
from ibwire.cli.stats.io_stat import IoStat
from ibwire.cli.stats.phs import Hierarchy
from ibwire.cli.stats.summary import CRC_NAMES, Summary
from ibwire.constants import LINKTYPE_ERF
from ibwire.crc import CrcStatus
from ibwire.headers.extended import SYN_NAK as NAK
from ibwire.headers.extended import syndrome_part
from ibwire.headers.opcodes import OPCODES

CRC_STATUS = (("ICRC", "infiniband.invariant.crc.status"),
              ("VCRC", "infiniband.variant.crc.status"),
              ("LPCRC", "infiniband_link.lpcrc.status"))


def supported(st: Stat) -> bool:
    if st.filter is not None:
        return False
    if isinstance(st, IoStat):
        return all(f is None for _, f in st.filters)
    return type(st) in FEEDERS


def _per_packet(rows: Rows) -> np.ndarray:
    """Rows a collector sees per packet: handed over, malformed, or perhaps a MAD."""
    to_mad_qp, from_mad_qp = rows.mad_qps()
    mad = (rows.has_layer("bth") & to_mad_qp) | (rows.has_layer("deth") & from_mad_qp)
    return rows.slow | mad


class _Groups:
    """Groups over the rows of `mask`, with their rows, counts and bytes."""

    def __init__(self, rows: Rows, keys: list[np.ndarray], mask: np.ndarray) -> None:
        self.rows = rows
        idx = np.flatnonzero(mask)
        gid, first = groups([np.asarray(k)[idx] for k in keys], len(idx))
        self.first = idx[first]
        order = np.argsort(gid, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(gid, minlength=len(first)))])
        self.members = [idx[order[bounds[g]:bounds[g + 1]]] for g in range(len(first))]

    def __len__(self) -> int:
        return len(self.first)

    def count(self, g: int) -> int:
        return len(self.members[g])

    def nbytes(self, g: int) -> int:
        return int(self.rows.length[self.members[g]].sum())


def _replay(rows: Rows, st: Stat, slow: np.ndarray, grp: _Groups | None,
            apply: Callable[[int], None]) -> None:
    """Apply groups and per-packet rows in first-row order."""
    events = [(int(i), -1) for i in np.flatnonzero(slow)]
    if grp is not None:
        events += [(int(i), g) for g, i in enumerate(grp.first)]
    for i, g in sorted(events):
        if g < 0:
            info = rows.info(i)
            st.add(info, info.pkt)            # type: ignore[arg-type]
        else:
            apply(g)


def _same(rows: Rows, grp: _Groups, fn: Callable[[Any], Any]) -> list[bool]:
    """Whether fn(first row) == fn(last row) for each group (the key covers fn)."""
    return [fn(rows.info(int(m[0]))) == fn(rows.info(int(m[-1]))) for m in grp.members]


def _split_bad(rows: Rows, slow: np.ndarray, grp: _Groups, ok: list[bool]) -> np.ndarray:
    """Rows of groups that failed the check go per packet."""
    slow = slow.copy()
    for g, good in enumerate(ok):
        if not good:
            slow[grp.members[g]] = True
    return slow


def _phs(rows: Rows, st: Hierarchy, slow: np.ndarray) -> None:
    # Stacks of frames without InfiniBand depend on bytes no column holds (TCP data).
    slow = slow | (rows.int("ibwire.ib.offset") < 0)
    fast = ~slow
    grp = _Groups(rows, [rows.linktype, rows.layer_bits(), rows.int("ibwire.payload.len") > 0],
                  fast)
    ok = _same(rows, grp, lambda info: info.stack)
    slow = _split_bad(rows, slow, grp, ok)
    stacks = {g: rows.info(int(grp.first[g])).stack for g in range(len(grp)) if ok[g]}
    _replay(rows, st, slow, _only(grp, ok),
            lambda g: st.add_stack(stacks[g], grp.count(g), grp.nbytes(g)))


def _only(grp: _Groups, ok: list[bool]) -> _Groups:
    keep = [g for g, good in enumerate(ok) if good]
    grp.first = grp.first[keep]
    grp.members = [grp.members[g] for g in keep]
    return grp


def _opcodes(rows: Rows, st: OpcodeHistogram, slow: np.ndarray) -> None:
    code = rows.int("infiniband.bth.opcode")
    grp = _Groups(rows, [code], ~slow & rows.has_layer("bth"))

    def apply(g: int) -> None:
        c = int(code[grp.first[g]])
        st.frames[c] += grp.count(g)
        st.nbytes[c] += grp.nbytes(g)
        st.labels[c] = OPCODES[c].label
    _replay(rows, st, slow, grp, apply)


def _io_stat(rows: Rows, st: IoStat, slow: np.ndarray) -> None:
    if not rows.n:
        return
    slot = np.maximum(rows.rel, 0) // st.interval_ns
    st.duration_ns = max(st.duration_ns, int(rows.rel.max()))
    length = rows.length.copy()
    for i in np.flatnonzero(slow & (rows.linktype == LINKTYPE_ERF)).tolist():
        length[i] = rows.info(i).length        # the kernels' ERF header may not be placed
    keys, inv = np.unique(slot, return_inverse=True)
    frames = np.bincount(inv.reshape(-1), minlength=len(keys))
    nbytes = np.bincount(inv.reshape(-1), weights=length, minlength=len(keys))
    for k, f, b in zip(keys.tolist(), frames.tolist(), nbytes.tolist()):
        cell = st.counts.setdefault(k, [[0, 0] for _ in st.filters])[0]
        cell[0] += f
        cell[1] += int(b)


def _summary(rows: Rows, st: Summary, slow: np.ndarray) -> None:
    if not rows.n:
        return
    if st.first_ns is None:
        st.first_ns = int(rows.ts[0])
    st.last_rel = max(st.last_rel, int(rows.rel.max()))
    fast = ~slow
    st.frames += int(fast.sum())
    st.nbytes += int(rows.length[fast].sum())
    ib = fast & (rows.int("ibwire.ib.offset") >= 0)
    st.ib += int(ib.sum())
    for name, col in CRC_STATUS:
        status = rows.int(col)[ib]
        for value, text in CRC_NAMES.items():
            got = int((status == value).sum())
            if got:
                st.crc[name][text] += got
    grp = _Groups(rows, [rows.linktype, rows.layer_bits()], ib)
    kinds = {g: _kind(rows.info(int(i))) for g, i in enumerate(grp.first)}

    def apply(g: int) -> None:
        st.kinds[kinds[g]] += grp.count(g)
    _replay(rows, st, slow, grp, apply)


def _kind(info: Any) -> str:
    from ibwire.cli.carriers import column_protocol
    return column_protocol(info.pkt, info.stack)


def _expert(rows: Rows, st: Expert, slow: np.ndarray) -> None:
    ib = ~slow & (rows.int("ibwire.ib.offset") >= 0)
    # Expert items depend on the AETH syndrome's type and, for NAKs, its code.
    aeth = rows.has_layer("aeth")
    syn = rows.int("infiniband.aeth.syndrome")
    kind = np.where(aeth, syndrome_part(syn, "syndrome_type"), -1)
    keys = [rows.int(c) for _, c in CRC_STATUS] + \
        [kind, np.where(kind == NAK, syndrome_part(syn, "error_code"), 0)]
    grp = _Groups(rows, keys, ib)
    ok = _same(rows, grp, lambda info: expert_items(info.pkt))
    slow = _split_bad(rows, slow, grp, ok)
    grp = _only(grp, ok)
    items = [expert_items(rows.info(int(i)).pkt) for i in grp.first]   # type: ignore[arg-type]
    number = rows.number

    def apply(g: int) -> None:
        for item in items[g]:
            if SEVERITIES.index(item[0]) <= st.max_level:
                st.counts[item] += grp.count(g)
                st.first.setdefault(item, int(number[grp.first[g]]))
    _replay(rows, st, slow, grp, apply)


def _mads(rows: Rows, st: MadHistogram, slow: np.ndarray) -> None:
    _replay(rows, st, slow, None, lambda g: None)


def _address_keys(rows: Rows, kind: str) -> list[np.ndarray]:
    keys = [rows.layer_bits(), rows.int("ibwire.ib.offset") >= 0]
    for name in ("ip.src", "ip.dst", "infiniband.lrh.slid", "infiniband.lrh.dlid",
                 "eth.src", "eth.dst"):
        keys.append(rows.int(name))
    for name in B16_KEYS:
        keys += rows.b16(name)
    if kind in ("udp", "qp"):
        keys += [rows.int("udp.srcport"), rows.int("udp.dstport")]
    if kind == "qp":
        keys += [rows.int("infiniband.bth.destqp"), rows.int("infiniband.deth.srcqp")]
    return keys


def _pairs(rows: Rows, st: Any, slow: np.ndarray, name: Callable[[Any], Any]) -> None:
    """Endpoints and conversations: one flow key per group (from its first row), one
    per per-packet row; each flow's rows then applied at once, in first-row order."""
    kind = st.kind
    mask = ~slow & (rows.has_layer("bth") if kind == "qp" else np.ones(rows.n, bool))
    grp = _Groups(rows, _address_keys(rows, kind), mask)
    ok = _same(rows, grp, name)
    slow = _split_bad(rows, slow, grp, ok)
    grp = _only(grp, ok)
    length, psn = rows.length.copy(), rows.int("infiniband.bth.psn")
    parts: dict[Any, list[np.ndarray]] = {}
    for g, i in enumerate(grp.first):
        key = name(rows.info(int(i)))
        if key is not None:
            parts.setdefault(key, []).append(grp.members[g])
    for i in np.flatnonzero(slow).tolist():
        info = rows.info(i)
        key = name(info)
        if key is None:
            continue
        length[i] = info.length
        bth = info.pkt.layer("bth")
        if bth is not None:
            psn[i] = bth.values["psn"]
        parts.setdefault(key, []).append(np.array([i], np.int64))
    flows = [(np.sort(np.concatenate(p)), key) for key, p in parts.items()]
    flows.sort(key=lambda f: int(f[0][0]))
    for idx, key in flows:
        if isinstance(st, Endpoints):
            _endpoint_apply(st, key, len(idx), int(length[idx].sum()))
        else:
            _flow_apply(rows, st, key, idx, int(length[idx].sum()), psn[idx])


def _endpoint_apply(st: Endpoints, pair: tuple[str, str], frames: int, nbytes: int) -> None:
    for addr, i in ((pair[0], 0), (pair[1], 2)):
        row = st.table.setdefault(addr, [0, 0, 0, 0])
        row[i] += frames
        row[i + 1] += nbytes


def _flow_apply(rows: Rows, st: Conversations, key: Any, idx: np.ndarray, nbytes: int,
                psn: np.ndarray) -> None:
    fl = st.flows.get(key)
    if fl is None:
        fl = st.flows[key] = _Flow(len(st.flows), int(rows.rel[idx[0]]))
    fl.frames += len(idx)
    fl.nbytes += nbytes
    fl.end = int(rows.rel[idx[-1]])
    if st.kind == "qp" and len(fl.psns) < PSN_SAMPLE:
        _, at = np.unique(psn, return_index=True)
        for v in psn[np.sort(at)].tolist():
            if len(fl.psns) >= PSN_SAMPLE:
                break
            fl.psns.add(v)


def _flow_name(kind: str) -> Callable[[Any], Any]:
    if kind != "qp":
        return lambda info: endpoint_pair(kind, info.pkt)

    def qp_key(info: Any) -> Any:
        pkt = info.pkt
        bth, ends = pkt.layer("bth"), _ib_addr(pkt)
        if bth is None or ends is None:
            return None
        deth = pkt.layer("deth")
        return (ends[0], ends[1], bth.values["destqp"],
                deth.values["srcqp"] if deth is not None else None)
    return qp_key


def _conv(rows: Rows, st: Any, slow: np.ndarray) -> None:
    _pairs(rows, st, slow, _flow_name(st.kind))


FEEDERS: dict[type, Callable[[Rows, Any, np.ndarray], None]] = {
    Hierarchy: _phs, OpcodeHistogram: _opcodes, IoStat: _io_stat, Summary: _summary,
    Expert: _expert, MadHistogram: _mads, Endpoints: _conv, Conversations: _conv,
}
COLUMNS = ["infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
           "infiniband.deth.srcqp", "infiniband.aeth.syndrome", "ip.src", "ip.dst",
           "infiniband.lrh.slid", "infiniband.lrh.dlid", "eth.src", "eth.dst", "udp.srcport",
           "udp.dstport", *B16_KEYS, *(c for _, c in CRC_STATUS)]


def feed(rows: Rows, stats: list[Stat]) -> None:
    slow = _per_packet(rows)
    for st in stats:
        FEEDERS[type(st)](rows, st, slow)


__all__ = ["COLUMNS", "CrcStatus", "feed", "supported"]
