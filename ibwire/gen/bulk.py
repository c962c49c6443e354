"""Bulk writer: millions of clean RC packets per second, templated and patched.

Each packet kind of each connection is built once with `ibwire.encode` (the
template); the writer then stamps out records by copying a template, patching its
PSN (and AETH MSN), and recomputing its CRCs: the ICRC and VCRC continue from the
CRC state of the template's fixed prefix (everything up to the PSN, which is where
every masked field lives), the RoCEv2 UDP checksum from the prefix's partial sum.
`_fill` is a Numba kernel; `_fill.py_func` is its pure-Python twin (tests compare
them, and both against `encode`).

A template is a whole capture record, record headers made by the capture writers
(`PcapWriter`, `erf_record`) with a zero timestamp, so lengths, ERF type and flags
come from there; the kernel patches only the timestamps, PSN, MSN and checksums.
Which headers a packet carries (and so where its AETH is) is the opcode's chain in
the protocol graph.

Traffic: `connections` RC QP pairs in round robin; per connection a cycle of three
messages, each of `msg_pkts` PSNs: RDMA WRITE (+ ACK), SEND (+ ACK), RDMA READ
(request + responses). PSNs and MSNs advance exactly as in the simulator's clean
runs (24-bit wrap included), so the RC analyser sees a valid conversation.
"""

from __future__ import annotations

import io
import time
import zlib
from dataclasses import asdict, dataclass
from typing import IO, Any

import numpy as np
from numba import njit

from ibwire import crc
from ibwire.capture import PcapWriter
from ibwire.capture.erf import erf_record
from ibwire.capture.pcap import FILE_HEADER_LEN, RECORD_HEADER_LEN
from ibwire.constants import (
    ERF_TYPE_IB,
    ICRC_LEN,
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LNH_IBA_GLOBAL,
    VCRC_LEN,
)
from ibwire.gen.fabric import Fabric, bth_offset, make_hosts, udp_source_port
from ibwire.gen.rcwire import (
    OP_ACK,
    OP_READ_REQ,
    SYN_ACK_UNLIMITED,
    RcInfo,
    packet_opcode,
    payload,
    rc_headers,
    read_response_opcode,
)
from ibwire.gen.tap import BASE_NS
from ibwire.graph import GRAPH
from ibwire.headers import BTH, ERF, ETHERNET, IPV4, IPV6, LRH, UDP
from ibwire.inet import ones_sum, udp_pseudo_header

CHUNK = 1 << 16


@dataclass
class BulkConfig:
    encap: str = "roce2"
    packets: int = 1_000_000
    connections: int = 4
    msg_pkts: int = 1                 # PSNs per message (1: Only opcodes)
    pmtu: int = 256
    last_len: int = 64                # payload of the last (or only) packet
    psn_start: int | None = None
    seed: int = 1
    rate_gbps: float | None = None
    host_pairs: int = 1               # connection i runs between host pair i % host_pairs


CRC32_TABLE = np.array(crc.reflected_table(crc.ICRC_POLY_REFLECTED), dtype=np.uint32)
CRC16_TABLE = np.array(crc.reflected_table(crc.VCRC_POLY_REFLECTED), dtype=np.uint32)

# Byte offsets the kernel patches, from the header layouts.
PSN_WORD = BTH.by_name["a"].offset        # AckReq byte: the ICRC continues from here
PSN_AT = BTH.by_name["psn"].offset
MSN_AT = GRAPH.extended_layout("aeth").by_name["msn"].offset
UDP_CSUM_AT = UDP.by_name["checksum"].offset
ERF_TS_AT = RECORD_HEADER_LEN + ERF.by_name["ts_raw"].offset   # within a record
LNH = LRH.offsets()["lnh"]                                       # (byte, n, shift, mask)
# The pcap record header starts with the timestamp: seconds, then the fraction
# (little-endian 32-bit words, as `PcapWriter` writes them).
PCAP_SEC_AT, PCAP_FRAC_AT = 0, 4

# Template table columns: T_OFF/T_LEN span the whole record, T_HEAD is the record
# headers' length; packet offsets (T_BTH...) count from the packet's first byte.
(T_OFF, T_LEN, T_HEAD, T_BTH, T_AETH, T_ICRC, T_NATIVE, T_UDP, T_CRC, T_VCRC,
 T_USUM) = range(11)
T_COLS = 11


@njit(cache=True)
def _fill(out, tbytes, tinfo, seq_t, seq_psn, seq_msn, seq_ts, erf, crc32t, crc16t):
    """Write one record per sequence entry into `out`; return the bytes used."""
    pos = 0
    for i in range(seq_t.shape[0]):
        t = seq_t[i]
        off, rec = int(tinfo[t, T_OFF]), int(tinfo[t, T_LEN])
        head = int(tinfo[t, T_HEAD])
        for k in range(rec):
            out[pos + k] = tbytes[off + k]
        ts = int(seq_ts[i])
        sec = ts // 1000000000
        ns = ts - sec * 1000000000
        for k in range(4):
            out[pos + PCAP_SEC_AT + k] = (sec >> (8 * k)) & 0xFF
            out[pos + PCAP_FRAC_AT + k] = (ns >> (8 * k)) & 0xFF
        if erf:
            # erf_ts_from_ns: seconds, and the fraction of 2**32 rounded to nearest
            frac = (ns * 4294967296 + 500000000) // 1000000000
            ets = (sec << 32) | frac
            for k in range(8):
                out[pos + ERF_TS_AT + k] = (ets >> (8 * k)) & 0xFF
        n = rec - head
        pos += head
        bth = int(tinfo[t, T_BTH])
        psn = int(seq_psn[i])
        out[pos + bth + PSN_AT] = (psn >> 16) & 0xFF
        out[pos + bth + PSN_AT + 1] = (psn >> 8) & 0xFF
        out[pos + bth + PSN_AT + 2] = psn & 0xFF
        aeth = int(tinfo[t, T_AETH])
        if aeth >= 0:
            msn = int(seq_msn[i])
            out[pos + aeth + MSN_AT] = (msn >> 16) & 0xFF
            out[pos + aeth + MSN_AT + 1] = (msn >> 8) & 0xFF
            out[pos + aeth + MSN_AT + 2] = msn & 0xFF
        icrc = int(tinfo[t, T_ICRC])
        c = int(tinfo[t, T_CRC]) ^ 0xFFFFFFFF
        for k in range(bth + PSN_WORD, icrc):
            c = int(crc32t[(c ^ int(out[pos + k])) & 0xFF]) ^ (c >> 8)
        c = c ^ 0xFFFFFFFF
        for k in range(4):
            out[pos + icrc + k] = (c >> (8 * k)) & 0xFF
        if tinfo[t, T_NATIVE]:
            v = int(tinfo[t, T_VCRC]) ^ 0xFFFF
            for k in range(bth + PSN_WORD, icrc + ICRC_LEN):
                v = int(crc16t[(v ^ int(out[pos + k])) & 0xFF]) ^ (v >> 8)
            v = v ^ 0xFFFF
            out[pos + icrc + ICRC_LEN] = v & 0xFF
            out[pos + icrc + ICRC_LEN + 1] = (v >> 8) & 0xFF
        udp = int(tinfo[t, T_UDP])
        if udp >= 0:
            s = int(tinfo[t, T_USUM])
            k = bth + PSN_WORD
            while k + 1 < n:
                s += (int(out[pos + k]) << 8) | int(out[pos + k + 1])
                k += 2
            if k < n:
                s += int(out[pos + k]) << 8
            while s >> 16:
                s = (s & 0xFFFF) + (s >> 16)
            s = (~s) & 0xFFFF
            if s == 0:
                s = 0xFFFF
            out[pos + udp + UDP_CSUM_AT] = (s >> 8) & 0xFF
            out[pos + udp + UDP_CSUM_AT + 1] = s & 0xFF
        pos += n
    return pos


class Templates:
    """The packets of one bulk run, each built once, plus where to patch them."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.blobs: list[bytes] = []
        self.rows: list[list[int]] = []

    def add(self, data: bytes, cap: int) -> int:
        enc = self.fabric.encap
        native = self.fabric.native
        has_grh = native and self._lnh(data) == LNH_IBA_GLOBAL
        bth = bth_offset(enc, has_grh)
        icrc = len(data) - ICRC_LEN - (VCRC_LEN if native else 0)
        masked = self._masked_prefix(data, bth + PSN_WORD)
        udp = -1
        usum = 0
        if enc.startswith("roce2"):
            ip = ETHERNET.size
            udp = ip + (IPV4.size if enc == "roce2" else IPV6.size)
            seg = data[udp:]
            pseudo = udp_pseudo_header(data[ip:udp], len(seg))
            # The fixed prefix's partial sum (checksum field zero); the kernel adds the rest.
            prefix = bytearray(seg[:bth + PSN_WORD - udp])
            prefix[UDP_CSUM_AT:UDP_CSUM_AT + 2] = bytes(2)
            usum = ones_sum(pseudo) + ones_sum(bytes(prefix))
        record = erf_record(data, 0, ERF_TYPE_IB, cap) if native else data
        head = self._record_header(record) + record[:len(record) - len(data)]
        off = sum(len(b) for b in self.blobs)
        self.blobs.append(head + data)
        chain = GRAPH.chain(data[bth + BTH.by_name["opcode"].offset])
        aeth = -1
        if "aeth" in chain:
            before = chain[:chain.index("aeth")]
            aeth = bth + BTH.size + sum(GRAPH.extended_layout(h).size for h in before)
        self.rows.append([off, len(head) + len(data), len(head), bth, aeth, icrc,
                          int(native), udp, zlib.crc32(masked),
                          crc.crc16(data[:bth + PSN_WORD]) if native else 0, usum])
        return len(self.rows) - 1

    def _record_header(self, record: bytes) -> bytes:
        """The pcap record header `PcapWriter` writes for `record` (timestamp 0)."""
        buf = io.BytesIO()
        PcapWriter(buf, LINKTYPE_ERF if self.fabric.native else LINKTYPE_ETHERNET,
                   nanosecond=True).write(record, ts_ns=0)
        return buf.getvalue()[FILE_HEADER_LEN:FILE_HEADER_LEN + RECORD_HEADER_LEN]

    @staticmethod
    def _lnh(data: bytes) -> int:
        at, _, shift, mask = LNH
        return (data[at] >> shift) & mask

    def _masked_prefix(self, data: bytes, end: int) -> bytes:
        enc = self.fabric.encap
        if self.fabric.native:
            return crc.icrc_input_native(data, end, self._lnh(data) == LNH_IBA_GLOBAL)
        if enc == "roce1":
            return crc.icrc_input_roce1(data[ETHERNET.size:end])
        udp = ETHERNET.size + (IPV4.size if enc == "roce2" else IPV6.size)
        return crc.icrc_input_roce2(data[ETHERNET.size:udp], data[udp:end])

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        tb = np.frombuffer(b"".join(self.blobs), dtype=np.uint8)
        return tb, np.array(self.rows, dtype=np.int64).reshape(-1, T_COLS)


def _connection_cycle(cfg: BulkConfig, tpl: Templates, fabric: Fabric, qa: int, qb: int,
                      vl: int, pair: int = 0) -> list[tuple[int, int, int, int]]:
    """(template, psn offset, msn offset, duration) for one cycle of one connection
    between hosts 2 * pair and 2 * pair + 1."""
    a, b = fabric.hosts[2 * pair], fabric.hosts[2 * pair + 1]
    k, pmtu = cfg.msg_pkts, cfg.pmtu
    sport = udp_source_port(qa, qb)
    rate = cfg.rate_gbps or (100.0 if fabric.native else 25.0)
    out: list[tuple[int, int, int, int]] = []

    def add(src, dst, dqp, info: RcInfo, body: bytes, psn_off: int, msn_off: int) -> None:
        data = fabric.build(src, dst, rc_headers(info, dqp), body, vl=vl, sl=vl, sport=sport,
                            flow=(qa if src is a else qb) & 0xFFFFF)
        t = tpl.add(data, 0 if src is a else 1)
        out.append((t, psn_off, msn_off, int(len(data) * 8 / rate) + 20))

    length = (k - 1) * pmtu + cfg.last_len
    base = 0
    for msg, kind in enumerate(("write", "send")):
        for j in range(k):
            op = packet_opcode(kind, j, k)
            info = RcInfo(op, 0, ackreq=j == k - 1, plen=pmtu if j < k - 1 else cfg.last_len)
            if msg == 0 and j == 0:
                info.va, info.rkey, info.dmalen = 0x7F0000000000, 0x1234, length
            add(a, b, qb, info, payload(j * pmtu, info.plen), base + j, 0)
        add(b, a, qa, RcInfo(OP_ACK, 0, syndrome=SYN_ACK_UNLIMITED), b"", base + k - 1, msg + 1)
        base += k
    add(a, b, qb, RcInfo(OP_READ_REQ, 0, ackreq=True, va=0x7F0000100000, rkey=0x4321,
                         dmalen=length), b"", base, 0)
    for j in range(k):
        op = read_response_opcode(j, k)
        info = RcInfo(op, 0, plen=pmtu if j < k - 1 else cfg.last_len)
        if "aeth" in GRAPH.chain(op):
            info.syndrome = SYN_ACK_UNLIMITED
        add(b, a, qa, info, payload(j * pmtu, info.plen), base + j, 3)
    return out


def bulk_write(path_or_file: str | IO[bytes], cfg: BulkConfig,
               kernel: Any = None) -> dict[str, Any]:
    """Write `cfg.packets` records as pcap; return a ground-truth summary."""
    t0 = time.perf_counter()
    hosts = make_hosts(cfg.encap, 2 * max(1, cfg.host_pairs))
    fabric = Fabric(cfg.encap, hosts)
    rng = np.random.default_rng(cfg.seed)
    tpl = Templates(fabric)
    cycles, qps, starts = [], [], []
    for i in range(cfg.connections):
        qa, qb = (int(x) for x in rng.integers(0x11, 0xFFFF00, 2))
        start = cfg.psn_start if cfg.psn_start is not None else int(rng.integers(1 << 24))
        cycles.append(_connection_cycle(cfg, tpl, fabric, qa, qb, 0,
                                        i % max(1, cfg.host_pairs)))
        qps.append((qa, qb))
        starts.append(start)
    tbytes, tinfo = tpl.arrays()
    plen = len(cycles[0])
    pat_t = np.array([[e[0] for e in cyc] for cyc in cycles], dtype=np.int64).ravel()
    pat_psn = np.array([[e[1] for e in cyc] for cyc in cycles], dtype=np.int64).ravel()
    pat_msn = np.array([[e[2] for e in cyc] for cyc in cycles], dtype=np.int64).ravel()
    pat_dur = np.array([[e[3] for e in cyc] for cyc in cycles], dtype=np.int64).ravel()
    pat_start = np.repeat(np.array(starts, dtype=np.int64), plen)
    round_len = plen * cfg.connections
    psn_per_cycle = 3 * cfg.msg_pkts
    erf = fabric.native
    fill = kernel or _fill
    maxrec = int(tinfo[:, T_LEN].max())
    buf = np.empty(CHUNK * maxrec, dtype=np.uint8)
    opcodes = np.frombuffer(b"".join(tpl.blobs), dtype=np.uint8)[
        tinfo[:, T_OFF] + tinfo[:, T_HEAD] + tinfo[:, T_BTH] + BTH.by_name["opcode"].offset]
    counts = np.zeros(len(tinfo), dtype=np.int64)
    t_now = BASE_NS
    written = 0
    own = isinstance(path_or_file, str)
    f = open(path_or_file, "wb") if own else path_or_file  # noqa: SIM115
    try:
        PcapWriter(f, LINKTYPE_ERF if erf else LINKTYPE_ETHERNET, nanosecond=True)
        for lo in range(0, cfg.packets, CHUNK):
            idx = np.arange(lo, min(lo + CHUNK, cfg.packets), dtype=np.int64)
            rnd, j = np.divmod(idx, round_len)
            seq_t = pat_t[j]
            seq_psn = (pat_start[j] + rnd * psn_per_cycle + pat_psn[j]) & 0xFFFFFF
            seq_msn = np.where(pat_msn[j] > 0, (rnd * 3 + pat_msn[j]) & 0xFFFFFF, 0)
            seq_ts = t_now + np.cumsum(pat_dur[j])
            t_now = int(seq_ts[-1])
            n = fill(buf, tbytes, tinfo, seq_t, seq_psn, seq_msn, seq_ts, erf,
                     CRC32_TABLE, CRC16_TABLE)
            f.write(memoryview(buf)[:n])
            written += n
            counts += np.bincount(seq_t, minlength=len(tinfo))
    finally:
        if own:
            f.close()
    elapsed = time.perf_counter() - t0
    by_op: dict[str, int] = {}
    for t, cnt in enumerate(counts):
        key = f"{int(opcodes[t]):#04x}"
        by_op[key] = by_op.get(key, 0) + int(cnt)
    return {"generator": "ibwire.gen.bulk", "params": asdict(cfg), "packets": cfg.packets,
            "bytes": written + 24, "linktype": LINKTYPE_ERF if erf else LINKTYPE_ETHERNET,
            "opcode_counts": dict(sorted(by_op.items())), "connections": [
                {"qpn_a": qa, "qpn_b": qb, "start_psn": s} for (qa, qb), s in zip(qps, starts)],
            "elapsed_s": elapsed, "packets_per_s": cfg.packets / elapsed if elapsed else None}
