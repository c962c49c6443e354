"""`ibwire plot FILE`: pictures of a capture (matplotlib, PNG and SVG).

    ibwire plot FILE --qp N         PSN over time for QP N, episodes shaded, credits
    ibwire plot FILE --credits      link-level credits (ibwire.plots.credits)
    ibwire plot FILE --counters     counters (ibwire.plots.counters)

`--credits` and `--counters` call `plot_credits(path, out, fmt)` and
`plot_counters(path, out, fmt)` of their modules, imported only when asked for.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from ibwire.cli.output import Output, error, failed

_EXTERNAL = {"credits": ("ibwire.plots.credits", "plot_credits"),
             "counters": ("ibwire.plots.counters", "plot_counters")}


def _qp(text: str) -> int:
    return int(text, 0)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("plot", help="plot PSNs per QP, credits or counters (PNG/SVG)",
                       usage="ibwire plot FILE (--qp N | --credits | --counters) [options]")
    p.add_argument("file", help="capture file")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--qp", type=_qp, metavar="N",
                      help="QP number (decimal or 0x...): PSN over time and AETH credits")
    what.add_argument("--credits", action="store_true", help="link-level credits over time")
    what.add_argument("--counters", action="store_true", help="counters over time")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="output path; a .png or .svg ending is the format (else it is "
                        "added; default: FILE's name + what)")
    p.add_argument("--format", dest="formats", choices=("png", "svg", "both"),
                   help="image format (default png, or OUT's ending; both = PNG and SVG)")
    return p


def run(args: argparse.Namespace, out: Output) -> int:
    what = "credits" if args.credits else "counters" if args.counters else f"qp{args.qp:#x}"
    base = args.output or str(Path(args.file).with_suffix("")) + f".{what}"
    ending = Path(base).suffix.lower().lstrip(".")
    if args.output and ending in ("png", "svg"):
        base = str(Path(base).with_suffix(""))     # `-o p.png` writes p.png, not p.png.png
    formats = args.formats or (ending if args.output and ending in ("png", "svg") else "png")
    fmts = ("png", "svg") if formats == "both" else (formats,)
    if args.credits or args.counters:
        module, func = _EXTERNAL[what]
        try:
            fn = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError):
            error(f"plot --{what}: {module}.{func} is not available in this installation")
            return 2
        paths = [p for fmt in fmts for p in fn(str(args.file), base, fmt)]
    else:
        from ibwire.analysis.rc import analyze
        from ibwire.analysis.rc_input import rc_columns
        from ibwire.capture import CaptureError
        from ibwire.plots.rc import plot_qp

        try:
            res = analyze(rc_columns(args.file))
            paths = plot_qp(res, args.qp, base, fmts)
        except CaptureError as exc:
            return failed(str(exc))
        except ValueError as exc:
            return failed(f"plot: {exc}")
    for path in paths:
        out.line(path)
    return 0
