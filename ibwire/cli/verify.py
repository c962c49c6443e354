"""`ibwire verify FILE`: check every ICRC, VCRC and LPCRC of a capture in bulk.

Counts each CRC's statuses (good, bad, unverified, not present: `CrcStatus`) and
lists the frame numbers (1-based, as tshark's `frame.number`) of every bad one.
Exit status 1 when any CRC is bad (or the file is broken), 0 otherwise. The
checks run in the Numba engines (`ibwire.columns`); frames the kernels hand over
are checked by the per-packet decoder, with the same results.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from ibwire.capture.frame import CaptureError
from ibwire.cli.output import Output, failed
from ibwire.crc import CrcStatus

CHECKS = (("ICRC", "infiniband.invariant.crc.status"),
          ("VCRC", "infiniband.variant.crc.status"),
          ("LPCRC", "infiniband_link.lpcrc.status"))
USAGE = "ibwire verify [options] FILE"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("verify", help="check every ICRC/VCRC/LPCRC; exit 1 if any is bad",
                       usage=USAGE, description=__doc__.splitlines()[0])
    p.add_argument("file", help="capture file (pcap, pcapng, native ERF, or a .gz of these)")
    p.add_argument("-d", metavar="udp.port==N,infiniband", action="append", default=[],
                   help="decode UDP port N (or N-M) as RoCEv2 (repeatable)")
    p.add_argument("--max-list", metavar="N", type=int, default=100,
                   help="list at most N bad frame numbers per CRC (default 100; 0 = all)")
    p.add_argument("--json", action="store_true",
                   help="print the counts and bad frame numbers as one JSON object")
    p.add_argument("--chunk", metavar="FRAMES", type=int, default=1 << 16,
                   help="frames per chunk (memory bound; default 65536)")


def verify(path: str, roce_ports: list[int] | None = None,
           chunk: int = 1 << 16) -> dict[str, Any]:
    """Counts per status and bad frame numbers for each CRC (see module doc)."""
    from ibwire.cli.reader import decode_options
    from ibwire.engines.columns import iter_chunks

    # RoCEv2 on the graph's UDP ports and those of -d, as `ibwire dump` decodes it.
    opts = decode_options(roce_ports or [])
    counts = {name: np.zeros(4, np.int64) for name, _ in CHECKS}
    bad: dict[str, list[int]] = {name: [] for name, _ in CHECKS}
    frames = 0
    names = ["frame.number"] + [col for _, col in CHECKS]
    for ch in iter_chunks(path, names, chunk=chunk, options=opts):
        number = ch.array("frame.number")[0]
        for name, col in CHECKS:
            st = ch.array(col)[0]
            counts[name] += np.bincount(st, minlength=4)[:4]
            bad[name].extend(number[st == CrcStatus.BAD].tolist())
        frames += len(ch)
    return {"frames": frames,
            "counts": {name: {s.name.lower(): int(c[s]) for s in CrcStatus}
                       for name, c in counts.items()},
            "bad": bad}


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.cli.main import decode_as

    ports = [p for spec in args.d for p in decode_as(spec)]
    try:
        result = verify(args.file, ports, max(args.chunk, 1))
    except CaptureError as exc:
        return failed(str(exc))
    except OSError as exc:
        return failed(f"{args.file}: {exc.strerror or exc}")
    any_bad = any(result["bad"].values())
    if args.json:
        out.line(json.dumps({"file": args.file, **result, "ok": not any_bad}))
        return 1 if any_bad else 0
    out.line(f"{args.file}: {result['frames']} frames")
    for name, _ in CHECKS:
        c = result["counts"][name]
        out.line(f"  {name:6s} good {c['good']:>10}  bad {c['bad']:>8}  unverified "
                 f"{c['unverified']:>8}  not present {c['not_present']:>10}")
    for name, _ in CHECKS:
        frames = result["bad"][name]
        if frames:
            shown = frames if args.max_list <= 0 else frames[:args.max_list]
            more = f" ... ({len(frames) - len(shown)} more)" if len(shown) < len(frames) else ""
            out.line(f"bad {name} in frames: {' '.join(map(str, shown))}{more}")
    out.line("FAIL: bad CRCs found" if any_bad else "OK: no bad CRC")
    return 1 if any_bad else 0
