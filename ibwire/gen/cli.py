"""`ibwire gen`: write a simulated capture and its ground truth.

    ibwire gen rc_loss -o loss.pcap                  # a named scenario
    ibwire gen --encap ib --loss 0.02 --rnr 0.05 --seed 7 -o x.pcap
    ibwire gen --packets 10000000 --engine bulk -o big.pcap
    ibwire gen --list                                # the scenarios

The main CLI (`ibwire.cli.main`) calls `add_parser` and `run`; `main` runs it alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from ibwire.gen.config import SCENARIOS, GenConfig, scenario
from ibwire.gen.fabric import ENCAPS, UDP_SPORTS

# Above this many packets, with nothing the bulk path cannot do, `auto` uses it.
BULK_THRESHOLD = 200_000
_FAULTS = ("loss", "rnr", "corrupt", "reorder", "duplicate", "capture_loss", "ecn")


def _percent(text: str) -> float:
    return float(text[:-1]) / 100.0 if text.endswith("%") else float(text)


def _ops(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        out[name.strip()] = float(weight or 1)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", nargs="?", help="named scenario (see --list); options "
                   "given override it")
    p.add_argument("-o", "--output", metavar="OUT", help="capture file (default "
                   "<scenario>.pcap); ground truth goes to <name>.truth.json")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--encap", choices=ENCAPS, help="encapsulation of the packets")
    p.add_argument("--format", dest="fmt", choices=("pcap", "pcapng", "erf"),
                   help="capture file format (default pcap)")
    p.add_argument("--packets", type=int, metavar="N", help="about N request packets")
    p.add_argument("--messages", type=int, metavar="N", help="messages per requester")
    p.add_argument("--connections", type=int, metavar="N", help="RC connections (QP pairs)")
    p.add_argument("--bidirectional", action="store_true", default=None,
                   help="host B also runs a requester on each QP pair")
    p.add_argument("--ops", type=_ops, metavar="OP=W,...",
                   help="operation weights: send, send_imm, send_inv, write, write_imm, "
                        "read, cmp_swap, fetch_add")
    p.add_argument("--pmtu", type=int, choices=(256, 512, 1024, 2048, 4096),
                   help="path MTU in bytes (default 256)")
    p.add_argument("--ud", dest="ud_messages", type=int, metavar="N", help="UD datagrams")
    p.add_argument("--mads", action="store_true", default=None,
                   help="SMP discovery + SA PathRecord (native)")
    p.add_argument("--cm", action="store_true", default=None, help="CM connect/disconnect")
    p.add_argument("--seed", type=int, help="random seed (same seed, same bytes)")
    p.add_argument("--udp-sport", choices=UDP_SPORTS,
                   help="RoCEv2 UDP source port: flow = one per QP pair, both ways (Linux "
                        "since 5.17, the default); qp = one per QP and direction (older)")
    p.add_argument("--psn-start", type=lambda s: int(s, 0), metavar="PSN",
                   help="first PSN of every requester (e.g. 0xfffff0 to wrap)")
    g = p.add_argument_group("faults (probabilities per packet, 0..1 or N%%)")
    g.add_argument("--loss", type=_percent, help="packet lost on the wire")
    g.add_argument("--loss-dir", choices=("both", "a2b", "b2a"),
                   help="direction(s) losses happen in (default both)")
    g.add_argument("--loss-before-tap", type=_percent, metavar="SHARE",
                   help="share of losses that happen before the capture point")
    g.add_argument("--rnr", type=_percent, help="receive queue found empty (RNR NAK)")
    g.add_argument("--corrupt", type=_percent, help="bit flip (bad ICRC/VCRC)")
    g.add_argument("--reorder", type=_percent, help="packet delivered late (reordered)")
    g.add_argument("--duplicate", type=_percent, help="packet delivered twice")
    g.add_argument("--capture-loss", type=_percent, help="delivered but not captured")
    g.add_argument("--ecn", type=_percent, help="congestion marks (CE / FECN) -> CNP / BECN")
    k = p.add_argument_group("link (native InfiniBand)")
    k.add_argument("--link-credits", type=int, metavar="BLOCKS",
                   help="per-VL receive buffer in 64-byte blocks: enables credit flow "
                        "control, link packets and stalls")
    k.add_argument("--fc-period", dest="fc_period_ns", type=int, metavar="NS",
                   help="flow-control packet period in ns (default 4000)")
    k.add_argument("--drain-gbps", type=float, metavar="GBPS",
                   help="receiver buffer drain rate (default: the link rate)")
    k.add_argument("--vls", type=int, help="data VLs used (connection i on VL i %% VLS)")
    k.add_argument("--rate-gbps", type=float,
                   help="link rate (default 100 native, 25 RoCE)")
    f = p.add_argument_group("priority flow control (RoCE, 802.1Qbb)")
    f.add_argument("--pfc", action="store_true", default=None,
                   help="receivers send PFC XOFF/XON for the RoCE priority (DSCP 26 -> 3) "
                        "when their ingress buffer fills (drain rate: --drain-gbps)")
    f.add_argument("--pfc-xoff-bytes", type=int, metavar="BYTES",
                   help="ingress buffer level that sends XOFF")
    f.add_argument("--pfc-xon-bytes", type=int, metavar="BYTES",
                   help="level below which XON follows")
    f.add_argument("--pfc-quanta", type=int, metavar="Q", help="XOFF pause (512-bit times)")
    f.add_argument("--pfc-no-xon", dest="pfc_send_xon", action="store_false", default=None,
                   help="send no XON: pauses run out")
    e = p.add_argument_group("engine")
    e.add_argument("--engine", choices=("auto", "sim", "bulk"), default="auto",
                   help="sim: full simulation with faults; bulk: templated clean RC "
                        "traffic, millions of packets per second (pcap only)")
    e.add_argument("--no-truth", action="store_true", help="do not write the truth file")
    e.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `gen` subcommand to the main CLI's subparsers."""
    p = subparsers.add_parser("gen", help="generate simulated traffic with ground truth",
                              usage="ibwire gen [SCENARIO] [options] -o OUT",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def config_from(args: argparse.Namespace) -> GenConfig:
    names = ("encap", "fmt", "packets", "messages", "connections", "bidirectional", "ops",
             "pmtu", "ud_messages", "mads", "cm", "seed", "psn_start", "loss", "loss_dir",
             "loss_before_tap", "rnr", "corrupt", "reorder", "duplicate", "capture_loss",
             "ecn", "link_credits", "fc_period_ns", "drain_gbps", "vls", "rate_gbps", "pfc",
             "pfc_xoff_bytes", "pfc_xon_bytes", "pfc_quanta", "pfc_send_xon", "udp_sport")
    kw = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    if args.scenario:
        return scenario(args.scenario, **kw)
    return GenConfig(**kw)


def _use_bulk(args: argparse.Namespace, cfg: GenConfig) -> bool:
    if args.engine != "auto":
        return args.engine == "bulk"
    return (cfg.packets or 0) > BULK_THRESHOLD and not any(getattr(cfg, f) for f in _FAULTS) \
        and not (cfg.mads or cfg.cm or cfg.ud_messages or cfg.link_credits or cfg.pfc)


def run(args: argparse.Namespace) -> int:
    """Run `ibwire gen`; returns the exit status (0 ok, 2 bad usage)."""
    if args.list:
        for name, kw in SCENARIOS.items():
            print(f"{name:14} " + " ".join(f"{k}={v}" for k, v in kw.items()))
        return 0
    try:
        cfg = config_from(args)
    except (KeyError, ValueError, TypeError) as exc:
        print(f"ibwire gen: {exc}", file=sys.stderr)
        return 2
    out = args.output or f"{args.scenario or 'gen'}.{'erf' if cfg.fmt == 'erf' else cfg.fmt}"
    t0 = time.perf_counter()
    if _use_bulk(args, cfg):
        return _run_bulk(args, cfg, out)
    from ibwire.gen.sim import simulate
    try:
        result = simulate(cfg)
        tpath = result.write(out, cfg.fmt, truth=not args.no_truth)
    except ValueError as exc:
        print(f"ibwire gen: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        t = result.truth
        print(f"{out}: {len(result.frames)} frames ({cfg.encap}, {cfg.fmt}, linktype "
              f"{result.linktype}) in {time.perf_counter() - t0:.2f} s; "
              f"{len(t['retransmissions'])} retransmissions, {len(t['naks'])} NAKs, "
              f"{len(t['rnr_naks'])} RNR NAKs, {len(t['events'])} injected events"
              + (f"; truth: {tpath}" if tpath else ""))
    return 0


def _run_bulk(args: argparse.Namespace, cfg: GenConfig, out: str) -> int:
    from ibwire.gen.bulk import BulkConfig, bulk_write
    from ibwire.gen.sim import truth_path
    if cfg.fmt != "pcap":
        print("ibwire gen: the bulk engine writes pcap only", file=sys.stderr)
        return 2
    bcfg = BulkConfig(encap=cfg.encap, packets=cfg.packets or 1_000_000,
                      connections=cfg.connections, pmtu=cfg.pmtu, psn_start=cfg.psn_start,
                      seed=cfg.seed, rate_gbps=cfg.rate_gbps)
    summary = bulk_write(out, bcfg)
    if not args.no_truth:
        with open(truth_path(out), "w") as f:
            doc = {k: v for k, v in summary.items() if k not in ("elapsed_s", "packets_per_s")}
            json.dump(doc, f, indent=1)
            f.write("\n")
    if not args.quiet:
        print(f"{out}: {bcfg.packets} packets (bulk, {cfg.encap}) in "
              f"{summary['elapsed_s']:.2f} s = {summary['packets_per_s']:,.0f} packets/s")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ibwire gen", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
