#!/usr/bin/env python3
"""Write the sample captures in pcaps/ with their ground truth (`ibwire gen`).

    python tools/gen_samples.py            # (re)write pcaps/*.pcap + *.truth.json
    python tools/gen_samples.py --check    # regenerate in memory, compare with the files
    python tools/gen_samples.py --search   # find seeds that show every wanted feature

Each sample is a scenario, a fixed seed and the features it must show (checked on
every run, so a generator change that loses one fails here rather than silently).
Output is deterministic: the same generator gives the same bytes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from ibwire.gen import GenResult, scenario, simulate  # noqa: E402

PCAPS = os.path.join(REPO, "pcaps")
MAX_TOTAL = 2 * 1024 * 1024


def _reasons(t: dict) -> Counter:
    return Counter(r["reason"] for r in t["retransmissions"])


def _events(t: dict) -> Counter:
    return Counter(e["kind"] + ("/" + e["where"] if "where" in e else "") for e in t["events"])


@dataclass
class Sample:
    file: str
    scenario: str
    seed: int
    overrides: dict[str, Any] = field(default_factory=dict)
    # name -> predicate over the truth document
    require: dict[str, Callable[[dict], bool]] = field(default_factory=dict)

    def config(self, seed: int | None = None):
        return scenario(self.scenario, seed=self.seed if seed is None else seed,
                        **self.overrides)

    def missing(self, truth: dict) -> list[str]:
        return [name for name, ok in self.require.items() if not ok(truth)]


def _all_rtus(t: dict) -> bool:
    return all(c["a"]["requester"]["state"] == "RTS" for c in t["connections"])


SAMPLES = [
    Sample("rc_clean_roce2.pcap", "rc_clean", 1, {}, {
        "no retransmissions": lambda t: not t["retransmissions"],
        "coalesced ACKs": lambda t: sum(v for k, v in t["opcode_counts"].items()
                                        if k.startswith("0x11")) < len(
            t["connections"][0]["a"]["messages"]),
        "READ, WRITE, SEND, atomics": lambda t: all(
            any(k.startswith(f"{op:#04x}") for k in t["opcode_counts"])
            for op in (0x0C, 0x06, 0x04, 0x13, 0x14))}),
    Sample("rc_loss_roce2.pcap", "rc_loss", 10, {}, {
        "NAK go-back-N": lambda t: _reasons(t)["nak_seq"] > 0,
        "timeout retransmission": lambda t: _reasons(t)["timeout"] > 0,
        "implied NAK (lost READ responses)": lambda t: _reasons(t)["implied_nak"] > 0,
        "loss before the tap": lambda t: _events(t)["loss/before_tap"] > 0,
        "loss after the tap": lambda t: _events(t)["loss/after_tap"] > 0,
        "all requesters done": _all_rtus}),
    Sample("rc_rnr_ib.pcap", "rc_rnr", 1, {}, {
        "RNR NAKs": lambda t: len(t["rnr_naks"]) >= 2,
        "RNR retransmissions": lambda t: _reasons(t)["rnr"] > 0,
        "a repeated RNR NAK": lambda t: len({r["psn"] for r in t["rnr_naks"]})
        < len(t["rnr_naks"])}),
    Sample("rc_corrupt_ib_grh.pcap", "rc_corrupt", 3, {}, {
        "corrupted frames": lambda t: len(t["corrupted_frames"]) >= 2,
        "retransmissions after corruption": lambda t: len(t["retransmissions"]) > 0}),
    Sample("rc_reorder_roce2.pcap", "rc_reorder", 2, {"capture_loss": 0.02}, {
        "reordering": lambda t: _events(t)["reorder"] > 0,
        "duplicates": lambda t: _events(t)["duplicate"] > 0,
        "capture loss": lambda t: _events(t)["capture_loss"] > 0}),
    Sample("rc_wrap_roce2.pcap", "rc_wrap", 2, {}, {
        "PSN wraps past 2^24": lambda t: t["connections"][0]["a"]["requester"]["next_psn"]
        < t["connections"][0]["a"]["requester"]["start_psn"],
        "retransmissions": lambda t: len(t["retransmissions"]) > 0}),
    Sample("fabric_mads_ib.pcap", "fabric_mads", 1, {}, {
        "SMP, SA and CM": lambda t: len(t["management"]) >= 10 + 3 * 2 + 2 * 2}),
    Sample("link_credits_ib.pcap", "link_credits", 1, {}, {
        "credit stalls on both VLs": lambda t: all(
            t["link"]["per_direction"]["a2b"][vl]["stalls"] for vl in ("0", "1")),
        "no receiver overruns": lambda t: all(
            v["receiver_overruns"] == 0 for d in t["link"]["per_direction"].values()
            for v in d.values())}),
    Sample("pfc_congestion_roce2.pcap", "pfc_congestion", 1,
           {"bidirectional": True, "drain_gbps": 4.0, "ecn": 0.05}, {
        "PFC pauses both ways": lambda t: all(
            d["intervals"] for d in t["pfc"]["paused"].values()),
        "pauses ended by XON": lambda t: any(
            iv["ended_by"] == "xon" for d in t["pfc"]["paused"].values()
            for iv in d["intervals"])}),
    Sample("ud_cnp_roce2.pcap", "ud_cnp", 1, {}, {
        "CNPs for RC and UD": lambda t: len({c["destqp"] for c in t["cnps"]}) >= 2,
        "ECN marks": lambda t: _events(t)["ecn_mark"] > 0}),
]


def _ibdump_ipoib() -> bytes:
    from ibwire.gen.ibdump import ipoib_fabric_capture
    return ipoib_fabric_capture()


# Captures built packet by packet (no simulation, no truth file): name -> builder.
BUILT: dict[str, Callable[[], bytes]] = {
    "ibdump_ipoib_erf.pcap": _ibdump_ipoib,    # IPoIB both modes, as ibdump writes ERF
}


def build(sample: Sample, seed: int | None = None) -> GenResult:
    return simulate(sample.config(seed))


def capture_bytes(result: GenResult) -> tuple[bytes, bytes]:
    """The capture and truth file contents, exactly as `GenResult.write` produces them."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.pcap")
        tpath = result.write(path)
        assert tpath is not None
        with open(path, "rb") as f, open(tpath, "rb") as g:
            return f.read(), g.read()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    ap.add_argument("--search", action="store_true", help="print seeds that pass, write nothing")
    ap.add_argument("--out", default=PCAPS)
    args = ap.parse_args(argv)
    if args.search:
        for s in SAMPLES:
            good = [seed for seed in range(1, 60) if not s.missing(build(s, seed).truth)]
            print(f"{s.file}: {good[:10]}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    total, status = 0, 0
    for s in SAMPLES:
        result = build(s)
        missing = s.missing(result.truth)
        if missing:
            print(f"{s.file}: seed {s.seed} lacks {missing} (try --search)", file=sys.stderr)
            status = 1
            continue
        path = os.path.join(args.out, s.file)
        if args.check:
            cap, truth = capture_bytes(result)
            with open(path, "rb") as f:
                same = f.read() == cap
            with open(path[:-5] + ".truth.json", "rb") as f:
                doc = json.load(io.BytesIO(f.read()))
            same = same and doc == json.loads(truth.replace(b'"x.pcap"',
                                                            f'"{s.file}"'.encode()))
            print(f"{s.file}: {'same' if same else 'DIFFERENT'}")
            status |= 0 if same else 1
            continue
        result.write(path)
        size = os.path.getsize(path) + os.path.getsize(path[:-5] + ".truth.json")
        total += size
        t = result.truth
        print(f"{s.file}: {len(result.frames)} frames, {size} bytes with truth; "
              f"{len(t['retransmissions'])} retransmissions, {len(t['naks'])} NAKs, "
              f"{len(t['rnr_naks'])} RNR NAKs, {len(t['events'])} events")
    for name, make in BUILT.items():
        path = os.path.join(args.out, name)
        data = make()
        if args.check:
            with open(path, "rb") as f:
                same = f.read() == data
            print(f"{name}: {'same' if same else 'DIFFERENT'}")
            status |= 0 if same else 1
            continue
        with open(path, "wb") as f:
            f.write(data)
        total += len(data)
        print(f"{name}: {len(data)} bytes")
    if not args.check and total > MAX_TOTAL:
        print(f"total {total} bytes exceeds {MAX_TOTAL}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
