"""The chunked/parallel paths of the analysing commands (`--jobs`, `--scheduler`, and
several capture points at once); the work itself is in `ibwire.scale`."""

from __future__ import annotations

import argparse
import json
from functools import partial

from ibwire.cli.output import Output, error, failed
from ibwire.scale import runner


def wanted(args: argparse.Namespace) -> bool:
    """Whether this command line takes the chunked path."""
    return runner.parallel(args) or bool(getattr(args, "more", None))


def _paths(args: argparse.Namespace) -> list[str]:
    first = getattr(args, "r", None) or args.file
    return [first, *(args.more or [])]


def rc(args: argparse.Namespace, out: Output) -> int:
    from ibwire.capture import CaptureError
    from ibwire.cli.rc import text
    if args.w:
        error("-w is not available with --jobs/--scheduler or several captures")
        return 2
    try:
        with runner.client(args.jobs, args.scheduler) as c:
            doc = runner.rc_document(_paths(args), c, runner.chunk_size(args))
    except CaptureError as exc:     # an OSError goes to main's handler, as without --jobs
        return failed(str(exc))
    if args.fmt == "json":
        out.write(json.dumps(doc, indent=1) + "\n")
        return 0
    text(doc, out, args.episodes)
    for p in doc.get("points_compared", []):
        out.line(f"{p['requester']['endpoint']}:{p['requester']['qp']} -> "
                 f"{p['responder']['endpoint']}:{p['responder']['qp']}  {p['upstream']} -> "
                 f"{p['downstream']}: {p['lost_between']} of {p['requests_upstream']} "
                 "request PSNs lost between the points")
    return 0


def stats(args: argparse.Namespace, out: Output) -> int:
    argv: list[str] = [x for z in args.z or [] for x in ("-z", z)]
    argv += [x for d in args.d or [] for x in ("-d", d)]
    if args.c:
        argv += ["-c", str(args.c)]
    paths = _paths(args)
    with runner.client(args.jobs, args.scheduler) as c:
        texts = runner.per_capture(partial(runner.stats_text, argv=tuple(argv)), paths, c)
    for path, body in zip(paths, texts):
        if len(paths) > 1:
            out.line(f"# {path}")
        out.write(body)
    return 0


def credit_columns(args: argparse.Namespace) -> dict:
    """`ibwire credits`' columns, chunked on the workers (`ibwire.scale.credits`)."""
    from ibwire.scale.credits import credit_columns as chunked
    with runner.client(args.jobs, args.scheduler) as c:
        return chunked(args.file, c, runner.chunk_size(args))


def build_fabric(args: argparse.Namespace) -> object:
    """`ibwire fabric`'s view, the MAD frames found on the workers (`ibwire.scale.fabric`)."""
    from ibwire.scale.fabric import build_fabric as chunked
    with runner.client(args.jobs, args.scheduler) as c:
        return chunked(args.files, c, runner.chunk_size(args))
