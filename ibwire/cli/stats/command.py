"""`ibwire stats FILE [-z SPEC ...]`: statistics without the packet lines.

Without -z it prints a default set: capture summary, protocol hierarchy, opcodes,
MADs (when there are any), QP conversations and expert items.
"""

from __future__ import annotations

import argparse

from ibwire.analysis.providers import add_expert_items, expert_only
from ibwire.capture import CaptureError
from ibwire.cli.bulk import run as bulk_run
from ibwire.cli.fields_out import UsageError
from ibwire.cli.output import Output, error
from ibwire.cli.reader import InputError, decode_options, load_decoders, packets
from ibwire.cli.stats import Stat, parse_z
from ibwire.cli.stats.conv import Conversations
from ibwire.cli.stats.expert import Expert
from ibwire.cli.stats.histograms import MadHistogram, OpcodeHistogram
from ibwire.cli.stats.phs import Hierarchy
from ibwire.cli.stats.summary import Summary


def default_set(source: str) -> list[Stat]:
    return [Summary(source=source), Hierarchy(), OpcodeHistogram(), MadHistogram(),
            Conversations("qp"), Expert()]


def run(args: argparse.Namespace, out: Output) -> int:
    path = args.r or args.file
    if not path:
        raise UsageError("no capture file given (FILE or -r FILE)")
    from ibwire.cli import scaled
    if scaled.wanted(args):
        return scaled.stats(args, out)
    load_decoders()
    stats = [parse_z(z) for z in args.z] if args.z else default_set(path)
    rc = 0
    failure = ""
    experts = [st for st in stats if isinstance(st, Expert)]
    add_fields, expert_rows = expert_only(path, [], bool(experts))
    options = decode_options(args.roce_ports)
    try:
        skip, rest = 0, True
        if bulk_run.eligible(args, out, stats, None, None, False):
            done = bulk_run.run(path, options, args.c, None, stats, out)
            skip, rest = done.frames, not done.done
            add_expert_items(experts, expert_rows, done.frames)
        for info in packets(path, options, args.c, progress=True, skip=skip) if rest else ():
            assert info.pkt is not None
            if add_fields is not None:
                add_fields(info.number - 1, info.pkt)
            for st in stats:
                st.feed(info, info.pkt)
    except (CaptureError, InputError) as exc:
        rc, failure = 1, str(exc)
    except KeyboardInterrupt:
        rc = 130             # Ctrl-C: report what was read so far
    for st in stats:
        if not args.z and isinstance(st, MadHistogram) and not st.counts:
            continue
        lines = st.lines()
        if not args.z and isinstance(st, Expert) and not lines:
            lines = ["", "Expert Information: no items"]
        for line in lines:
            out.line(line, "bold" if line == st.title or line.startswith(st.title + ":")
                     else None)
    out.flush()
    if failure:
        error(failure)
    return rc
