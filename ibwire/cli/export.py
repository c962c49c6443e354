"""`ibwire export FILE... --parquet DIR`: captures as a Parquet dataset (docs/export.md).

    ibwire export a.pcap b.pcap --parquet out/        packets/, rc_*, credits_*, fabric_*
    ibwire export *.pcap --parquet out/ --jobs 4      captures and RC partitions in parallel
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ibwire.cli.output import Output, error, failed


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="packets and analysis tables as Parquet (SQL-ready)",
                       usage="ibwire export FILE... --parquet DIR [options]")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="capture files, one per capture point (pcap, pcapng, ERF, .gz)")
    p.add_argument("--parquet", metavar="DIR", required=True,
                   help="output directory (created; files of the same names are replaced)")
    p.add_argument("--bucket-ms", type=float, default=1000.0, metavar="MS",
                   help="time partition width in milliseconds (default 1000)")
    p.add_argument("--no-analysis", action="store_true",
                   help="leave out the per-packet infiniband.analysis.* columns")
    from ibwire.scale.runner import add_options
    add_options(p)
    return p


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.capture import CaptureError
    from ibwire.export.run import export
    from ibwire.scale import runner

    if args.bucket_ms <= 0:
        error("--bucket-ms must be positive")
        return 2
    try:
        with runner.client(args.jobs, args.scheduler) as c:
            manifest = export(args.files, args.parquet, bucket_ns=int(args.bucket_ms * 1e6),
                              analysis=not args.no_analysis, client=c,
                              chunk=runner.chunk_size(args))
    except (CaptureError, OSError) as exc:
        return failed(str(exc))
    out.write(json.dumps(manifest, indent=1) + "\n")
    return 0
