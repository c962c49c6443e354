#!/usr/bin/env python3
"""Digests of everything ibwire prints, writes and rebuilds for the sample captures.

    python tools/golden_outputs.py            # compare with tests/expected/golden_outputs.json
    python tools/golden_outputs.py --write    # record the current outputs as the reference
    python tools/golden_outputs.py --dump DIR # also write each output to DIR (to diff by hand)

A refactor that must not change behaviour runs this before and after: every CLI view
(summary, -V, -x, -T json/ek/fields, every -z, rc/credits/fabric JSON, `fields`), the
re-encoded bytes of every packet and the Scapy layers' rebuild of every packet. The
test `tests/test_golden_outputs.py` runs the comparison in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PCAPS = REPO / "pcaps"
REFERENCE = REPO / "tests" / "expected" / "golden_outputs.json"

# (name, argv after the capture path's place holder "{}")
CLI_VIEWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("summary", ("dump", "-r", "{}")),
    ("tree", ("dump", "-r", "{}", "-V")),
    ("hex", ("dump", "-r", "{}", "-x")),
    ("json", ("dump", "-r", "{}", "-T", "json")),
    ("ek", ("dump", "-r", "{}", "-T", "ek")),
    ("fields", ("dump", "-r", "{}", "-T", "fields", "-E", "header=y", "-e", "frame.number",
                "-e", "frame.protocols", "-e", "infiniband.bth.opcode", "-e",
                "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome", "-e",
                "infiniband.invariant.crc.status", "-e", "infiniband.variant.crc.status",
                "-e", "udp.dstport", "-e", "ip.src", "-e", "_ws.col.Info")),
    ("analysis", ("dump", "-r", "{}", "-T", "fields", "-e", "frame.number", "-e",
                  "infiniband.analysis.retransmission", "-e", "infiniband.analysis.nak",
                  "-e", "infiniband.analysis.acked_psns", "-e", "infiniband.analysis.ack_rtt")),
    ("stats", ("stats", "{}", "-z", "io,phs", "-z", "conv,qp", "-z", "ib,opcodes", "-z",
               "ib,mad", "-z", "expert", "-z", "rc,stat")),
    ("stats_default", ("stats", "{}")),
    ("rc", ("rc", "{}", "-T", "json")),
    ("rc_text", ("rc", "{}")),
    ("credits", ("credits", "{}", "-T", "json")),
    ("fabric", ("fabric", "{}", "-T", "json")),
)
GLOBAL_VIEWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fields_list", ("fields",)),
)


def _run(argv: list[str]) -> str:
    from ibwire.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(REPO), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        rc = main(argv)
    return f"rc={rc}\n--stdout--\n{out.getvalue()}--stderr--\n{err.getvalue()}"


def _encoded(path: Path) -> str:
    import ibwire
    from ibwire.encode import encode_packet

    return "".join(encode_packet(p).hex() + "\n" for p in ibwire.read(path))


def _scapy(path: Path) -> str:
    import ibwire.dissectors  # noqa: F401 - binds the layers
    from scapy.utils import PcapReader

    rows = []
    with PcapReader(str(path)) as reader:
        for pkt in reader:
            rows.append(f"{pkt.summary()}|{bytes(pkt).hex()}|{pkt.show(dump=True)}")
    return "\n".join(rows)


def outputs() -> Iterator[tuple[str, Callable[[], str]]]:
    for cap in sorted(PCAPS.glob("*.pcap")):
        for view, argv in CLI_VIEWS:
            rel = str(cap.relative_to(REPO))      # outputs name it; checkouts differ
            args = [rel if a == "{}" else a for a in argv]
            yield f"{cap.name}:{view}", lambda args=args: _run(args)
        yield f"{cap.name}:encode", lambda cap=cap: _encoded(cap)
        yield f"{cap.name}:scapy", lambda cap=cap: _scapy(cap)
    for view, argv in GLOBAL_VIEWS:
        yield view, lambda argv=argv: _run(list(argv))


def digests(dump: Path | None = None) -> dict[str, str]:
    out = {}
    for name, make in outputs():
        text = make()
        out[name] = hashlib.sha256(text.encode()).hexdigest()
        if dump is not None:
            (dump / name.replace(":", "__")).write_text(text)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="record the reference digests")
    ap.add_argument("--dump", type=Path, help="also write every output to this folder")
    args = ap.parse_args()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    got = digests(args.dump)
    if args.write:
        REFERENCE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} digests written to {REFERENCE}")
        return 0
    want = json.loads(REFERENCE.read_text())
    bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    for k in bad:
        print(f"differs: {k}")
    print(f"{len(got) - len(bad)} of {len(got)} outputs identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("COLUMNS", "120")
    sys.exit(main())
