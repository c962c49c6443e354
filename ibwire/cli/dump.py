"""`ibwire dump`: tshark's packet loop — read, decode, filter, print, write, -z.

Output per packet, as tshark: the summary line unless `-V`/`-O`/`-x` ask for more
(`-P` keeps it), the tree, the hex dump, a blank line after a tree or dump. With
`-w`, displayed frames are written and nothing is printed unless asked. `-c` counts
frames read. `-z` collectors see every frame read, whatever `-Y` displays, and print
after the packets.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ibwire.analysis.providers import provider_fields
from ibwire.capture import CaptureError, PcapngWriter, PcapWriter
from ibwire.capture.erf import ErfWriter
from ibwire.cli.bulk import run as bulk_run
from ibwire.cli.columns import columns, time_text
from ibwire.cli.fields_out import FieldsWriter, UsageError, parse_E
from ibwire.cli.filtering import PacketFilter
from ibwire.cli.frames import FrameInfo
from ibwire.cli.jsonout import JsonWriter, ek_lines
from ibwire.cli.output import Output, error
from ibwire.cli.reader import InputError, decode_options, load_decoders, packets
from ibwire.cli.stats import Stat, parse_z
from ibwire.cli.tree import hexdump, tree_lines
from ibwire.packet import Packet

FORMATS = ("text", "fields", "json", "ek")


class TextPrinter:
    def __init__(self, out: Output, args: argparse.Namespace) -> None:
        self.out = out
        self.expand = None if args.V or not args.O else \
            {p for o in args.O for p in o.split(",") if p}
        self.details = bool(args.V or self.expand)
        self.hex = bool(args.x)
        self.summary = not (self.details or self.hex) or args.P
        self.time_mode = args.t

    def packet(self, info: FrameInfo, pkt: Packet) -> None:
        out = self.out
        if self.summary:
            cols = columns(info, time_text(info, self.time_mode))
            out.line(cols.line(), cols.style)
            if self.details or self.hex:
                out.line("")
        if self.details:
            for line in tree_lines(info, pkt, self.expand):
                out.line(line)
            out.line("")
        if self.hex:
            for line in hexdump(info, pkt):
                out.line(line)
            out.line("")

    def end(self) -> None:
        pass


class FieldsPrinter:
    def __init__(self, out: Output, writer: FieldsWriter) -> None:
        self.out, self.writer = out, writer
        if writer.opts.bom:
            out.write("\ufeff")
        if writer.opts.header:
            out.line(writer.header())

    def packet(self, info: FrameInfo, pkt: Packet) -> None:
        self.out.line(self.writer.row(info, pkt))

    def end(self) -> None:
        pass


class JsonPrinter:
    def __init__(self, out: Output, fields: FieldsWriter | None, ek: bool) -> None:
        self.out, self.ek = out, ek
        self.json = JsonWriter(fields)
        self.fields = fields
        if not ek:
            out.write(self.json.start())

    def packet(self, info: FrameInfo, pkt: Packet) -> None:
        if self.ek:
            self.out.write(ek_lines(info, pkt, self.fields))
        else:
            self.out.write(self.json.packet(info, pkt))

    def end(self) -> None:
        if not self.ek:
            self.out.write(self.json.end())


class CaptureSink:
    """-w: writes displayed frames in the input's link type (pcap, pcapng or ERF)."""

    def __init__(self, path: str, fmt: str | None) -> None:
        self.path = path
        lower = path.lower()
        self.fmt = fmt or ("pcapng" if lower.endswith((".pcapng", ".pcapng.gz", ".ntar"))
                           else "erf" if lower.endswith(".erf") else "pcap")
        if self.fmt not in ("pcap", "pcapng", "erf"):
            raise UsageError(f'-F: unsupported capture format "{self.fmt}" (pcap, pcapng, erf)')
        self.writer: Any = None
        self.ifaces: dict[tuple[int, int], int] = {}
        self.nanosecond = True

    def _target(self) -> Any:
        return sys.stdout.buffer if self.path == "-" else self.path

    def write(self, info: FrameInfo, pkt: Packet) -> None:
        frame = pkt.frame
        if self.writer is None:
            if self.fmt == "pcap":
                self.writer = PcapWriter(self._target(), frame.linktype, self.nanosecond)
            elif self.fmt == "pcapng":
                self.writer = PcapngWriter(self._target())
            else:
                self.writer = ErfWriter(self._target())
        if self.fmt == "pcap" and frame.linktype != self.writer.linktype:
            raise InputError(f"-w: record {frame.index} has link type {frame.linktype}, "
                             f"the pcap being written {self.writer.linktype}; "
                             "write a .pcapng instead (or -F pcapng)")
        try:
            if self.fmt == "pcapng":
                key = (frame.interface, frame.linktype)
                if key not in self.ifaces:
                    self.ifaces[key] = self.writer.add_interface(frame.linktype)
                self.writer.write(frame, interface=self.ifaces[key])
            else:
                self.writer.write(frame)
        except ValueError as exc:    # the writer refuses the record (ERF of Ethernet, ...)
            raise InputError(f"-w {self.path}: {exc}") from None

    def close(self, default_linktype: int) -> None:
        if self.writer is None:
            # Nothing displayed: still leave a valid, empty capture.
            if self.fmt == "pcap":
                self.writer = PcapWriter(self._target(), default_linktype, self.nanosecond)
            elif self.fmt == "pcapng":
                self.writer = PcapngWriter(self._target())
            else:
                self.writer = ErfWriter(self._target())
        self.writer.close()


def make_printer(args: argparse.Namespace, out: Output) -> Any:
    fmt = args.T or "text"
    if fmt not in FORMATS:
        raise UsageError(f'-T: invalid output format "{fmt}" (one of {", ".join(FORMATS)})')
    fields = None
    if args.e:
        fields = FieldsWriter(args.e, parse_E(args.E or []))
        if fields.unknown:
            error("warning: unknown field(s), printed empty: " + ", ".join(fields.unknown))
    elif fmt == "fields":
        raise UsageError("-T fields was specified, but no fields were specified with -e")
    elif args.E:
        parse_E(args.E)
    if fmt == "fields":
        assert fields is not None
        return FieldsPrinter(out, fields)
    if fmt in ("json", "ek"):
        return JsonPrinter(out, fields, fmt == "ek")
    if args.e:
        raise UsageError("-e requires -T fields, -T json or -T ek")
    return TextPrinter(out, args)


def run(args: argparse.Namespace, out: Output) -> int:
    """The dump loop; returns the exit status (CaptureError -> 1 after the good part)."""
    path = args.r or args.file
    if not path:
        raise UsageError("no capture file given (-r FILE or FILE)")
    load_decoders()         # their fields must be known before -e, -Y and -z are read
    stats: list[Stat] = [parse_z(z) for z in args.z or []]
    filt = PacketFilter(args.Y) if args.Y else None
    # Whole-capture analyses whose fields the command line names (infiniband.analysis.*).
    add_fields = provider_fields(path, [args.Y or "", *(args.e or [])],
                                 expert=any(z.startswith("expert") for z in args.z or []))
    options = decode_options(args.roce_ports)
    sink = CaptureSink(args.w, args.F) if args.w else None
    quiet = args.q or (sink is not None and not (args.P or args.V or args.O or args.x
                                                  or args.T))
    if sink is not None and sink.path == "-":
        quiet = True
    printer = None if quiet else make_printer(args, out)
    progress = not out.is_tty or quiet
    rc = 0
    failure = ""
    prev_disp: int | None = None
    linktype = 1
    try:
        skip, rest = 0, True
        # analysis fields (and their expert items) are added per packet: no bulk then
        if add_fields is None and \
                bulk_run.eligible(args, out, stats, printer, filt, sink is not None):
            done = bulk_run.run(path, options, args.c, printer, stats, out, filt)
            skip, rest = done.frames, not done.done
            if done.frames:
                prev_disp, linktype = done.last_ts, done.linktype
        for info in packets(path, options, args.c, progress=progress, skip=skip) if rest else ():
            pkt = info.pkt
            assert pkt is not None
            if add_fields is not None:
                add_fields(info.number - 1, pkt)
            linktype = info.linktype
            for st in stats:
                st.feed(info, pkt)
            if filt is not None and not filt.matches(info, pkt):
                continue
            info.delta_disp_ns = 0 if prev_disp is None else info.ts_ns - prev_disp
            prev_disp = info.ts_ns
            if printer is not None:
                printer.packet(info, pkt)
            if sink is not None:
                sink.write(info, pkt)
    except (CaptureError, InputError) as exc:
        rc = 1
        failure = str(exc)
    except KeyboardInterrupt:
        # Ctrl-C stops the reading, not the report: what was read is still summed up.
        rc, failure = 130, ""
    if printer is not None:
        printer.end()
    if sink is not None:
        sink.close(linktype)
    for st in stats:
        for line in st.lines():
            out.line(line)
    out.flush()
    if failure:
        error(failure)
    return rc
