"""`ibwire fabric FILE...`: the fabric view reconstructed from management traffic.

    ibwire fabric sweep.pcap                  summary tables (rich on a terminal)
    ibwire fabric sweep.pcap --topology       ibnetdiscover-style topology file
    ibwire fabric sweep.pcap --links          iblinkinfo-style port list
    ibwire fabric perf.pcap --counters        perfquery-style counters
    ibwire fabric a.pcap b.pcap -T json       everything (docs/schemas/fabric.schema.json)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import ibwire.analysis.fabric_fields  # noqa: F401 - registers the per-packet fields
from ibwire.cli.fields_out import UsageError
from ibwire.cli.output import Output, error

USAGE = "ibwire fabric [--topology|--links|--counters|--resolve|-T json] FILE..."


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fabric", help="fabric view from management traffic (topology, SM, "
                       "links, counters)", usage=USAGE, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="capture files with SMP/SA/PMA traffic (each file's directed "
                        "routes start at the port it was captured on)")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--topology", action="store_true",
                      help="print the topology as ibnetdiscover does")
    view.add_argument("--links", action="store_true",
                      help="print every port and its peer as iblinkinfo does")
    view.add_argument("--counters", action="store_true",
                      help="print every port counter read as perfquery does")
    view.add_argument("--resolve", action="store_true",
                      help="print, per frame of the first FILE, the node and port behind "
                           "its LIDs and directed route (ibwire.lid.*, ibwire.dr.* fields), "
                           "resolved from the fabric view of all FILEs")
    p.add_argument("-T", dest="fmt", choices=["text", "json"], default="text",
                   help="output format: text (default) or json (all of the view)")
    p.add_argument("--no-color", dest="color", action="store_false", default=None,
                   help="plain text even on a terminal")
    from ibwire.scale.runner import add_options
    add_options(p)


def run(args: argparse.Namespace, out: Output) -> int:
    from ibwire.analysis import fabric_text
    from ibwire.analysis.fabric import build_fabric
    from ibwire.analysis.fabric_json import fabric_dict
    if not args.files:
        raise UsageError("no capture file given")
    from ibwire.cli import scaled
    from ibwire.scale import runner
    if runner.parallel(args):
        try:
            fab = scaled.build_fabric(args)
        except OSError as exc:      # e.g. a --scheduler that does not answer
            error(str(exc))
            return 1
    else:
        fab = build_fabric(args.files)
    if args.fmt == "json":
        out.write(json.dumps(fabric_dict(fab), indent=1) + "\n")
    elif args.topology:
        out.write(fabric_text.topology(fab))
    elif args.links:
        out.write(fabric_text.links(fab))
    elif args.counters:
        out.write(fabric_text.counters(fab))
    elif args.resolve:
        from ibwire.analysis.fabric_fields import frame_values, show
        for frame, vals in sorted(frame_values(args.files[0], fabric=fab).items()):
            out.line(f"{frame}\t" + "\t".join(f"{k}={show(v, k)}" for k, v in vals.items()))
    else:
        from ibwire.cli.fabric_tables import summary
        summary(fab, out)
    out.flush()
    for problem in fab.errors:     # after the view of what was read, like dump
        error(problem)
    return 1 if fab.errors else 0
