"""Helpers for the generator tests: decode a generated capture with ibwire and check
it against the IBA RC rules and its ground truth, independently of the generator's
own bookkeeping (only the truth file and the decoded bytes are used).

No tests live here; the test_gen_* modules import these functions.
"""

from __future__ import annotations

import bisect
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ibwire import decode
from ibwire.headers.extended import RNR_TIMER_US

MOD = 1 << 24
A_MAC = bytes.fromhex("02000000000a")
# Request opcodes (RC) and what they are.
SEND_OPS = {"send": (0x00, 0x01, 0x02, 0x04), "send_imm": (0x00, 0x01, 0x03, 0x05),
            "send_inv": (0x00, 0x01, 0x16, 0x17), "write": (0x06, 0x07, 0x08, 0x0A),
            "write_imm": (0x06, 0x07, 0x09, 0x0B)}
REQUESTS = frozenset({0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A,
                      0x0B, 0x0C, 0x13, 0x14, 0x16, 0x17})
READ_RESP = {0x0D: "first", 0x0E: "middle", 0x0F: "last", 0x10: "only"}


def pdiff(a: int, b: int) -> int:
    return ((a - b + (1 << 23)) % MOD) - (1 << 23)


@dataclass
class Rec:
    frame: int
    ts: int
    dir: str
    kind: str            # req | resp | ud | cnp | link | mad | other
    opcode: int = -1
    qp: int = -1
    psn: int = -1
    ackreq: bool = False
    syndrome: int = -1
    msn: int = -1
    dmalen: int = -1
    plen: int = 0
    ce: bool = False
    becn: bool = False
    icrc: int | None = None
    vcrc: int | None = None
    lpcrc: int | None = None
    fctbs: int = -1
    fccl: int = -1
    vl: int = -1
    wire_blocks: int = 0
    size: int = 0
    problems: tuple = ()


def load(frames: list) -> list[Rec]:
    """Decode every frame of a generated capture into a flat record."""
    out = []
    for i, f in enumerate(frames, 1):
        p = decode(f.data, f.linktype)
        if p.has("erf"):
            d = "a2b" if p["erf.flags.cap"] == 0 else "b2a"
        else:
            src = p.get("eth.src")
            d = "a2b" if src in (A_MAC, "02:00:00:00:00:0a") else "b2a"
        r = Rec(i, f.ts_ns, d, "other", problems=tuple(p.problems), size=len(f.data))
        r.icrc = p.get("infiniband.invariant.crc.status")
        r.vcrc = p.get("infiniband.variant.crc.status")
        r.lpcrc = p.get("infiniband_link.lpcrc.status")
        if p.has("infiniband_link.fctbs"):
            r.kind = "link"
            r.fctbs, r.fccl = p["infiniband_link.fctbs"], p["infiniband_link.fccl"]
            r.vl = p["infiniband_link.vl"]
        elif p.has("infiniband.bth.opcode"):
            op = p["infiniband.bth.opcode"]
            r.opcode, r.qp, r.psn = op, p["infiniband.bth.destqp"], p["infiniband.bth.psn"]
            r.ackreq = bool(p["infiniband.bth.a"])
            r.syndrome = p.get("infiniband.aeth.syndrome", -1)
            r.msn = p.get("infiniband.aeth.msn", -1)
            r.dmalen = p.get("infiniband.reth.dmalen", -1)
            r.plen = len(p.payload)
            r.becn = bool(p.get("infiniband.bth.becn", 0))
            r.ce = bool(p.get("infiniband.bth.fecn", 0)) or p.get("ip.dsfield.ecn") == 3 \
                or (p.get("ipv6.tclass", 0) & 3) == 3
            r.vl = p.get("infiniband.lrh.vl", -1)
            if p.has("infiniband.lrh.pktlen"):
                r.wire_blocks = -(-(p["infiniband.lrh.pktlen"] * 4 + 2) // 64)
            if op in REQUESTS:
                r.kind = "req"
            elif 0x0D <= op <= 0x12:
                r.kind = "resp"
            elif op in (0x80, 0x81):
                r.kind = "cnp"
            elif op in (0x64, 0x65):
                r.kind = "mad" if r.qp in (0, 1) else "ud"
        out.append(r)
    return out


# -- RC rules ---------------------------------------------------------------------------
class Conn:
    """One requester as the truth describes it: direction, QPs, messages."""

    def __init__(self, side: dict, direction: str, pmtu: int) -> None:
        req = side["requester"]
        self.dir = direction
        self.dest_qp = side["dest_qpn"]
        self.qpn = side["qpn"]
        self.start = req["start_psn"]
        self.pmtu = pmtu
        self.msgs = [m for m in side["messages"] if m["first_psn"] >= 0]
        self.by_off = sorted(((m["first_psn"] - self.start) % MOD, m) for m in self.msgs)
        self.ends = sorted((o + m["npsn"] - 1) for o, m in self.by_off)
        self.starts = [o for o, _ in self.by_off]

    def off(self, psn: int) -> int:
        d = (psn - self.start) % MOD
        return d - MOD if d >= 1 << 23 else d

    def msg_at(self, psn: int) -> tuple[dict, int] | None:
        o = self.off(psn)
        i = bisect.bisect_right(self.starts, o) - 1
        if i < 0:
            return None
        m = self.by_off[i][1]
        k = o - self.starts[i]
        return (m, k) if k < m["npsn"] else None

    def completed_through(self, psn: int) -> int:
        """Messages whose last PSN is at or before `psn`."""
        return bisect.bisect_right(self.ends, self.off(psn))


def connections(truth: dict) -> list[Conn]:
    pmtu = truth["params"]["pmtu"]
    out = []
    for c in truth["connections"]:
        for side, d in (("a", "a2b"), ("b", "b2a")):
            if "requester" in c[side]:
                out.append(Conn(c[side], d, pmtu))
    return out


def expected_opcode(op: str, k: int, n: int) -> int:
    if op in SEND_OPS:
        f, m, last, only = SEND_OPS[op]
        return only if n == 1 else f if k == 0 else last if k == n - 1 else m
    return {"read": 0x0C, "cmp_swap": 0x13, "fetch_add": 0x14}[op]


def check_rc(recs: list[Rec], truth: dict, complete: bool = True) -> list[str]:
    """Violations of the RC rules in a capture. `complete`: every transmitted request
    and response crossed the tap (no loss before it, no capture loss, no reordering)."""
    errs: list[str] = []
    retx_frames = {r["frame"] for r in truth["retransmissions"] if r["frame"] is not None}
    rnr_psns = defaultdict(list)
    # Frames captured but lost after the tap: the requester never saw those NAKs.
    lost = {e["frame"] for e in truth["events"] if e["kind"] in ("loss", "corrupt")}
    # Frames the network delayed reach the tap out of their sending order.
    delayed = {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    delayed |= {e["frame"] for e in truth["events"]
                if e["kind"] == "duplicate" and e.get("original_frame") in delayed}
    for c in connections(truth):
        reqs = [r for r in recs if r.kind == "req" and r.dir == c.dir and r.qp == c.dest_qp]
        back = "b2a" if c.dir == "a2b" else "a2b"
        resps = [r for r in recs if r.kind == "resp" and r.dir == back and r.qp == c.qpn]
        # 1. request PSNs: +consumed, or a go-back restart that the truth calls one.
        expect, high = None, c.start
        for r in reqs:
            hit = c.msg_at(r.psn)
            if hit is None:
                errs.append(f"frame {r.frame}: PSN {r.psn} outside every message")
                continue
            m, k = hit
            # 5. opcode of packet k of its message (well-formed first/middle/last).
            if expected_opcode(m["op"], k, m["npsn"]) != r.opcode and m["op"] != "read":
                errs.append(f"frame {r.frame}: opcode {r.opcode:#x} is not packet {k} of "
                            f"{m['npsn']} of a {m['op']}")
            if m["op"] == "read":
                n = max(1, -(-r.dmalen // c.pmtu))
                if r.opcode != 0x0C or n != m["npsn"] - k:
                    errs.append(f"frame {r.frame}: READ for {r.dmalen} bytes at packet {k} "
                                f"of {m['npsn']}")
                consumed = m["npsn"] - k
            else:
                consumed = 1
            if complete and expect is not None and r.psn != expect:
                if pdiff(r.psn, expect) > 0:
                    errs.append(f"frame {r.frame}: PSN {r.psn} skips ahead of {expect}")
                elif r.frame not in retx_frames:
                    errs.append(f"frame {r.frame}: PSN goes back to {r.psn} (expected "
                                f"{expect}) but the truth has no retransmission there")
            is_retx = pdiff(r.psn, high) < 0
            if complete and is_retx != (r.frame in retx_frames):
                errs.append(f"frame {r.frame}: PSN {r.psn} retransmission={is_retx} but "
                            f"truth says {r.frame in retx_frames}")
            expect = (r.psn + consumed) % MOD
            if pdiff(expect, high) > 0:
                high = expect
        # 2./3. ACKs: monotone, only sent PSNs, MSN = messages completed.
        last_ack = None
        sent_high = {}
        h = c.start
        for r in reqs:
            hit = c.msg_at(r.psn)
            n = hit[0]["npsn"] - hit[1] if hit and hit[0]["op"] == "read" else 1
            e = (r.psn + n) % MOD
            if pdiff(e, h) > 0:
                h = e
            sent_high[r.frame] = h
        frames_sorted = sorted(sent_high)
        for r in resps:
            if r.opcode != 0x11:
                continue
            i = bisect.bisect_left(frames_sorted, r.frame) - 1
            h = sent_high[frames_sorted[i]] if i >= 0 else c.start
            kind = r.syndrome >> 5
            acked = r.psn if kind == 0 else (r.psn - 1) % MOD
            if complete and pdiff(acked, (h - 1) % MOD) > 0:
                errs.append(f"frame {r.frame}: acknowledges PSN {acked}, never sent")
            if c.completed_through(acked) % MOD != r.msn:
                errs.append(f"frame {r.frame}: MSN {r.msn}, but "
                            f"{c.completed_through(acked)} messages end at or before {acked}")
            if kind == 0 and r.frame not in delayed:
                if last_ack is not None and pdiff(r.psn, last_ack) < 0:
                    errs.append(f"frame {r.frame}: ACK PSN {r.psn} goes back from {last_ack}")
                last_ack = r.psn
            if kind == 1 and r.frame not in lost:
                rnr_psns[(c.dir, c.dest_qp)].append((r.ts, r.psn, r.syndrome & 0x1F))
        # 4. READ responses: runs of consecutive PSNs from a READ request's PSN.
        reads = {r.psn: r for r in reqs if r.opcode == 0x0C}
        run: list[Rec] = []
        for r in (resps if complete else []) + [Rec(0, 0, "", "end", opcode=0x10)]:
            if r.opcode not in READ_RESP:
                continue
            shape = READ_RESP[r.opcode]
            if shape in ("first", "only") and run:
                errs.append(f"frame {run[0].frame}: READ response run cut short")
                run = []
            if r.kind == "end":
                break
            run.append(r)
            if shape in ("last", "only"):
                start = run[0]
                req = reads.get(start.psn)
                if req is None:
                    errs.append(f"frame {start.frame}: READ response at PSN {start.psn} "
                                "answers no READ request")
                else:
                    n = max(1, -(-req.dmalen // c.pmtu))
                    psns = [(start.psn + i) % MOD for i in range(n)]
                    if [x.psn for x in run] != psns:
                        errs.append(f"frame {start.frame}: READ of {req.dmalen} bytes answered "
                                    f"by PSNs {[x.psn for x in run]}, expected {psns}")
                    if sum(x.plen for x in run) != req.dmalen:
                        errs.append(f"frame {start.frame}: READ responses carry "
                                    f"{sum(x.plen for x in run)} bytes, not {req.dmalen}")
                run = []
    # 6. RNR: no resend of the NAKed PSN leaves the requester (crosses the tap more
    # than one link round trip after the NAK did) before the RNR timer has run.
    params = truth["params"]
    gbps = params["rate_gbps"] or (100.0 if params["encap"].startswith("ib") else 25.0)
    for (d, qp), naks in rnr_psns.items():
        for ts, psn, code in naks:
            wait = RNR_TIMER_US[code] * 1000
            early = [r for r in recs if r.kind == "req" and r.dir == d and r.qp == qp
                     and r.psn == psn and ts + wait > r.ts >=
                     ts + params["prop_ns"] + int(r.size * 8 / gbps) + 1]   # ints: ns ~ 2^60
            for r in early:
                errs.append(f"frame {r.frame}: RNR retry {r.ts - ts} ns after the NAK, "
                            f"timer {RNR_TIMER_US[code]} us")
    return errs


def repeat_scan(recs: list[Rec], pmtu: int) -> dict[tuple, list[int]]:
    """Naive scan: request frames whose PSN was already consumed on their (dir, QP).
    READ requests consume their whole response range."""
    consumed: dict[tuple, set] = defaultdict(set)
    repeats: dict[tuple, list[int]] = defaultdict(list)
    for r in recs:
        if r.kind != "req":
            continue
        key = (r.dir, r.qp)
        n = max(1, -(-r.dmalen // pmtu)) if r.opcode == 0x0C else 1
        if r.psn in consumed[key]:
            repeats[(r.dir, r.qp, r.psn)].append(r.frame)
        consumed[key].update((r.psn + i) % MOD for i in range(n))
    return repeats


def tshark_problems(path: str) -> list[str]:
    """tshark lines that report a malformed packet or an expert error, except on link
    packets: Wireshark 4.0 calls every 6-byte link packet malformed (pinned by
    test_gen_captures.test_wireshark_mistake_six_byte_link_packets)."""
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.number",
                          "-e", "_ws.malformed", "-e", "_ws.expert.severity",
                          "-e", "_ws.expert.message", "-e", "frame.protocols"],
                         capture_output=True, text=True, check=True)
    bad = []
    for line in out.stdout.splitlines():
        cols = line.split("\t")
        if cols[4].endswith(":infiniband_link"):
            continue
        if cols[1] or "error" in cols[2].lower() or cols[2].startswith("8388608"):
            bad.append(line)
    return bad


def truth_summary(truth: dict[str, Any]) -> dict[str, int]:
    return {k: len(truth[k]) for k in ("retransmissions", "naks", "rnr_naks", "events")}
