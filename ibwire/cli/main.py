"""`ibwire` entry point: argument parsing and dispatch.

    ibwire dump -r FILE [tshark flags]    packets, like tshark (also: ibwire -r FILE ...)
    ibwire stats FILE [-z SPEC ...]        statistics (a useful default set without -z)
    ibwire fields [--filter TEXT]          every field name, like tshark -G fields
    ibwire fabric FILE...                  fabric view from management traffic
    ibwire verify FILE                     check every ICRC/VCRC/LPCRC (exit 1 if bad)
    ibwire export FILE... --parquet DIR    packets and analysis tables as Parquet
    ibwire gen ...                         synthetic traffic (when ibwire.gen is installed)
    ibwire rc FILE [-T json] [-w OUT]      RC sequencing analysis (retransmissions, NAKs, RNR)
    ibwire plot FILE --qp N | --credits | --counters    plots (PNG/SVG)
    ibwire report FILE... -o report.html   one HTML page of what went wrong

Exit status: 0 ok, 1 bad input file (one line on stderr; packets before the error
are still printed), 2 bad usage (one line, then the usage line). A closed pipe
(`ibwire dump x | head -1`) ends quietly with status 0.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ibwire.cli.fields_out import UsageError
from ibwire.cli.output import Output, error, failed, silence_stdout

DECODE_AS = re.compile(r"udp\.port(==|=)(\d+)(?:-(\d+))?,(\S+)\Z")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line plus the one-line usage, exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def decode_as(spec: str) -> list[int]:
    """tshark's `-d udp.port==N[-M],infiniband` -> the UDP ports to decode as RoCEv2."""
    m = DECODE_AS.match(spec.strip())
    if not m:
        raise UsageError(f'-d: cannot parse "{spec}"; the supported form is '
                         f'udp.port==PORT[-PORT],infiniband (RoCEv2 on another UDP port)')
    op, lo, hi, proto = m.groups()
    if proto != "infiniband":
        raise UsageError(f'-d: protocol "{proto}" is not supported for udp.port; '
                         'only "infiniband" (RoCEv2)')
    if op == "=":
        error(f'warning: -d requires "==" instead of "=". Option will be treated as '
              f'"udp.port=={lo}{"-" + hi if hi else ""},infiniband"')
    first, last = int(lo), int(hi or lo)
    if not 0 < first <= last <= 65535:
        raise UsageError(f'-d: invalid UDP port range "{lo}{"-" + hi if hi else ""}"')
    return list(range(first, last + 1))


def _dump_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="capture file (or -r FILE); - for stdin")
    p.add_argument("-r", metavar="FILE", help="read packets from FILE (pcap, pcapng, ERF, .gz)")
    p.add_argument("-c", metavar="N", type=int, help="stop after reading N frames")
    p.add_argument("-Y", metavar="FILTER", help="display filter (Wireshark syntax)")
    p.add_argument("-d", metavar="udp.port==N,infiniband", action="append", default=[],
                   help="decode UDP port N (or N-M) as RoCEv2")
    p.add_argument("-w", metavar="OUT", help="write the displayed frames to OUT "
                   "(pcapng if OUT ends with .pcapng, else pcap; - for stdout)")
    p.add_argument("-F", metavar="FORMAT", help="-w format: pcap, pcapng or erf")
    p.add_argument("-x", action="store_true", help="hex and ASCII dump of each packet")
    p.add_argument("-V", action="store_true", help="full packet tree")
    p.add_argument("-O", metavar="PROTOCOLS", action="append",
                   help="tree only for these protocols (comma-separated), e.g. infiniband")
    p.add_argument("-P", action="store_true", help="print summary lines also with -V/-x/-w")
    p.add_argument("-T", metavar="FORMAT", help="output format: text, fields, json, ek")
    p.add_argument("-e", metavar="FIELD", action="append", help="field to print (-T fields)")
    p.add_argument("-E", metavar="OPTION", action="append",
                   help="-T fields option: header=y|n separator=/t|/s|C occurrence=f|l|a "
                   "aggregator=,|/s|C quote=d|s|n")
    p.add_argument("-q", action="store_true", help="no per-packet output (for -z)")
    p.add_argument("-z", metavar="STATISTICS", action="append",
                   help="statistics after the packets: io,phs io,stat,INTERVAL[,FILTER] "
                   "conv,qp endpoints,ib ib,opcodes ib,mad expert")
    p.add_argument("-t", metavar="FORMAT", default="r",
                   choices=("r", "a", "ad", "d", "dd", "e", "u", "ud"),
                   help="time column: r (relative, default), a, ad, d, dd, e, u, ud")
    p.add_argument("-n", action="store_true", help="accepted (ibwire never resolves names)")
    p.add_argument("-l", action="store_true", help="flush after each packet")
    p.add_argument("--disable-protocol", metavar="PROTO", action="append", default=[],
                   help="accepted for tshark compatibility (ignored)")
    p.add_argument("--enable-protocol", metavar="PROTO", action="append", default=[],
                   help="accepted for tshark compatibility (ignored)")
    color = p.add_mutually_exclusive_group()
    color.add_argument("--color", dest="color", action="store_true", default=None,
                       help="colour even when not on a terminal")
    color.add_argument("--no-color", dest="color", action="store_false",
                       help="never colour")


EPILOG = """\
Unknown link types: in pcap and ERF files (one link type per file) an unknown one
is an error at record 0 (exit 1); in pcapng, records of an interface with an
unknown link type are listed undecoded after one warning.
Exit status: 0 ok, 1 bad input file, 2 bad usage."""


# One usage line per command: the top-level usage and the one-line usage after an error.
USAGES = {
    "dump": "ibwire dump [options] [-r] FILE",
    "stats": "ibwire stats [options] FILE [-z SPEC ...]",
    "fields": "ibwire fields [--filter TEXT]",
    "credits": "ibwire credits [options] FILE",
    "fabric": "ibwire fabric [options] FILE...",
    "verify": "ibwire verify [options] FILE",
    "gen": "ibwire gen ...",
    "rc": "ibwire rc [options] FILE...",
    "plot": "ibwire plot FILE (--qp N | --credits | --counters) [options]",
    "report": "ibwire report FILE... [-o report.html]",
    "export": "ibwire export FILE... --parquet DIR [options]",
}
TOP_USAGE = "ibwire {" + ",".join(USAGES) + "} ..."


def build_parser(only: str | None = None) -> Parser:
    """The command-line parser; with `only`, just that command's sub-parser (each
    command's module loads only when it is registered, so `ibwire dump` does not
    import the simulator, the plots or the analyses)."""
    top = Parser(prog="ibwire", usage=TOP_USAGE,
                 description="InfiniBand and RoCE capture analyzer with tshark's flags.")
    from ibwire import __version__
    top.add_argument("--version", action="version", version=f"ibwire {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, add in _COMMANDS.items():
        if only is None or only == name:
            add(sub)
    return top


def _add_dump(sub: Any) -> None:
    dump = sub.add_parser("dump", help="print packets (tshark's flags)",
                          usage="ibwire dump [options] [-r] FILE", epilog=EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    _dump_args(dump)


def _add_stats(sub: Any) -> None:
    stats = sub.add_parser("stats", help="statistics of a capture",
                           usage="ibwire stats [options] FILE [-z SPEC ...]")
    stats.add_argument("file", nargs="?", help="capture file (or -r FILE); - for stdin")
    stats.add_argument("-r", metavar="FILE",
                       help="read packets from FILE (pcap, pcapng, ERF, .gz)")
    stats.add_argument("-z", metavar="STATISTICS", action="append",
                       help="statistics to print (repeatable; default: a useful set): "
                       "io,phs io,stat,INTERVAL[,FILTER] conv,TYPE endpoints,TYPE "
                       "ib,opcodes ib,mad expert")
    stats.add_argument("-c", metavar="N", type=int, help="stop after reading N frames")
    stats.add_argument("-d", metavar="udp.port==N,infiniband", action="append", default=[],
                       help="decode UDP port N (or N-M) as RoCEv2")
    stats.add_argument("-n", action="store_true",
                       help="accepted (ibwire never resolves names)")
    stats.add_argument("--no-color", dest="color", action="store_false", default=None,
                       help="never colour")
    stats.add_argument("more", nargs="*", metavar="FILE",
                       help="more captures (each analysed apart, printed in order)")
    importlib.import_module("ibwire.scale.runner").add_options(stats)


def _add_fields(sub: Any) -> None:
    fields = sub.add_parser("fields", help="list every field (like tshark -G fields)",
                            usage="ibwire fields [--filter TEXT]")
    fields.add_argument("--filter", metavar="TEXT", help="only names containing TEXT")


def _module_parser(name: str) -> Callable[[Any], None]:
    def add(sub: Any) -> None:
        importlib.import_module(f"ibwire.cli.{name}").add_parser(sub)
    return add


def _add_gen(sub: Any) -> None:
    try:
        gen = importlib.import_module("ibwire.gen.cli")
    except ImportError:
        return
    except Exception as exc:  # noqa: BLE001 - a broken extension must not stop the CLI
        error(f"warning: ibwire.gen.cli failed to load ({type(exc).__name__}: {exc})")
        return
    add = getattr(gen, "add_parser", None)
    if add is not None:
        add(sub)


# Every command's parser, in the order `ibwire --help` lists them.
_COMMANDS: dict[str, Callable[[Any], None]] = {
    "dump": _add_dump, "stats": _add_stats, "fields": _add_fields,
    "credits": _module_parser("credits"), "fabric": _module_parser("fabric"),
    "verify": _module_parser("verify"), "gen": _add_gen, "rc": _module_parser("rc"),
    "plot": _module_parser("plot"), "report": _module_parser("report"),
    "export": _module_parser("export"),
}


def _usage_line(argv: Sequence[str]) -> str:
    cmd = next((a for a in argv if a in USAGES), None)
    return "usage: " + USAGES.get(cmd or "", TOP_USAGE) + \
        f" (see ibwire {cmd + ' ' if cmd else ''}--help)"


def _normalise(argv: list[str]) -> list[str]:
    """`ibwire -r x ...` means `ibwire dump -r x ...`: tshark's flags without a command."""
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        return ["dump", *argv]
    return argv


def run(args: argparse.Namespace, out: Output) -> int:
    if args.command == "dump":
        from ibwire.cli import dump
        args.roce_ports = [p for spec in args.d for p in decode_as(spec)]
        return dump.run(args, out)
    if args.command == "stats":
        from ibwire.cli.stats.command import run as run_stats
        args.roce_ports = [p for spec in args.d for p in decode_as(spec)]
        return run_stats(args, out)
    if args.command == "fields":
        from ibwire.cli.fieldlist import run as run_fields
        return run_fields(args, out)
    if args.command == "fabric":
        return importlib.import_module("ibwire.cli.fabric").run(args, out)
    if args.command == "credits":
        from ibwire.cli.credits import run as run_credits
        return run_credits(args, out)
    if args.command == "verify":
        return importlib.import_module("ibwire.cli.verify").run(args, out)
    if args.command == "gen":
        gen = importlib.import_module("ibwire.gen.cli")
        return int(gen.run(args) or 0)
    if args.command in ("rc", "plot", "report", "export"):
        mod = importlib.import_module(f"ibwire.cli.{args.command}")
        return int(mod.run(args, out))
    raise UsageError(f"a command is required: {', '.join(USAGES)} "
                     "(or tshark's flags: ibwire -r FILE ...)")


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status."""
    argv = _normalise(list(sys.argv[1:] if argv is None else argv))
    try:
        args = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None
                            ).parse_args(argv)
        color = getattr(args, "color", None)
        out = Output(sys.stdout, color=color, flush_each=bool(getattr(args, "l", False)))
        return run(args, out)
    except UsageError as exc:
        from ibwire.cli.filtering import FilterSyntaxError
        error(str(exc))
        if not isinstance(exc, FilterSyntaxError):
            sys.stderr.write(_usage_line(argv) + "\n")
        return 2
    except BrokenPipeError:
        silence_stdout()
        return 0
    except OSError as exc:
        # Files the CLI opens itself (-w OUT, ...); capture reading errors are
        # CaptureErrors, handled where the packets are printed.
        where = f"{exc.filename}: " if exc.filename else ""
        return failed(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
