"""`ibwire report FILE... -o report.html`: one self-contained HTML page (plots,
tables, the headline findings) built from the analyses behind `ibwire rc`,
`ibwire credits` and `ibwire fabric -T json`."""

from __future__ import annotations

import argparse
from typing import Any

from ibwire.cli.output import Output, error, failed

USAGE = "ibwire report FILE... [-o report.html]"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="one HTML page of what went wrong in captures",
                       usage=USAGE, description=__doc__)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="capture files (pcap, pcapng, ERF, gzip); their MADs together "
                        "make the fabric view")
    p.add_argument("-o", dest="output", default="report.html", metavar="OUT",
                   help="HTML file to write (default report.html); it opens without "
                        "network access")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar on stderr")
    from ibwire.scale.runner import add_options
    add_options(p)


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.capture import CaptureError
    from ibwire.report import build_report
    from ibwire.scale import runner

    try:
        if not runner.parallel(args):
            res = build_report(list(args.files), args.output, progress=args.progress)
        else:
            from ibwire.report.scaled import read_captures
            with runner.client(args.jobs, args.scheduler) as c:
                chunk = runner.chunk_size(args)
                res = build_report(list(args.files), args.output, args.progress,
                                   lambda paths, progress: read_captures(
                                       paths, c, chunk, progress))
    except CaptureError as exc:
        return failed(str(exc))
    except OSError as exc:
        return failed(f"{args.output}: {exc.strerror or exc}")
    out.line(f"{args.output}: {len(res['findings'])} findings, {res['bytes']} bytes")
    for f in res["findings"][:5]:
        out.line(f"  {f.text}")
    for problem in res["errors"]:
        error(problem)
    return 1 if res["errors"] else 0
