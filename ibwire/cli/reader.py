"""Frames in, (FrameInfo, Packet) out: the read-and-decode loop every command shares.

Unknown link types (decided here, documented in `ibwire dump --help`):
* pcap and ERF files hold one link type: an unknown one is fatal at record 0
  (`ibwire: unknown link type 9999 at record 0 (byte offset 24)`, exit 1);
* pcapng interfaces each have their own: records on an interface of an unknown
  link type are still listed (protocol `Unknown`, `[Malformed: ...]` info, empty
  fields) after one warning per link type on stderr, so `-T fields` lines stay
  aligned with the file's records; the exit status stays 0.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator

import ibwire
from ibwire.capture import UnknownLinkTypeError, check_linktype, open_capture
from ibwire.cli.frames import FrameInfo, frame_lengths
from ibwire.cli.output import Progress, error
from ibwire.decoder import Options
from ibwire.graph import GRAPH

OPTIONAL_DECODERS = ("ibwire.mad", "ibwire.ipoib", "ibwire.analysis.providers")
_loaded = False


def load_decoders() -> None:
    """Import the optional payload decoders (MADs, IPoIB) that register themselves."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in OPTIONAL_DECODERS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        except Exception as exc:  # noqa: BLE001 - a broken extension must not stop the CLI
            error(f"warning: {name} failed to load ({type(exc).__name__}: {exc})")


class InputError(Exception):
    """A problem with the input file: printed as `ibwire: <message>`, exit 1."""


def decode_options(roce_ports: list[int]) -> Options:
    """Decoder options: RoCEv2 on the graph's UDP ports (read when decoding) plus the
    ports of this run's `-d udp.port==N`."""
    return Options(roce_ports=GRAPH.roce_ports() | frozenset(roce_ports)) if roce_ports \
        else Options()


def _open(path: str) -> tuple[object, int]:
    if path == "-":
        return open_capture(sys.stdin.buffer), 0
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return open_capture(path), size


def _tell_skipped(path: str, skipped: list, told: int) -> int:
    for s in skipped[told:]:
        error(f"warning: {path}: skipped {s.length} damaged bytes at byte offset {s.offset} "
              f"(before record {s.index}): {s.reason}")
    return len(skipped)


def packets(path: str, options: Options, count: int | None = None,
            progress: bool = False, skip: int = 0) -> Iterator[FrameInfo]:
    """Decode every frame of a capture; CaptureError surfaces after the good ones.
    The first `skip` frames are read but neither decoded nor yielded (the bulk
    path printed them)."""
    load_decoders()
    reader, size = _open(path)
    fmt = getattr(reader, "format", "pcap")
    compressed = getattr(reader, "compressed", False)
    bar = Progress(size, progress and not compressed)
    warned: set[int] = set()
    first_ns: int | None = None
    prev_ns = 0
    number = 0
    skipped = getattr(reader, "skipped", [])   # damaged regions the reader stepped over
    told = 0
    try:
        for frame in reader:  # type: ignore[attr-defined]
            told = _tell_skipped(path, skipped, told)
            if count is not None and number >= count:
                break
            try:
                check_linktype(frame)
            except UnknownLinkTypeError as exc:
                if fmt != "pcapng":
                    raise InputError(str(exc)) from None
                if frame.linktype not in warned:
                    warned.add(frame.linktype)
                    error(f"warning: {exc}; its records are shown undecoded")
            number += 1
            if number <= skip:
                if first_ns is None:
                    first_ns = frame.ts_ns
                prev_ns = frame.ts_ns
                continue
            pkt = ibwire.decode(frame.data, frame.linktype, frame=frame, options=options)
            if first_ns is None:
                first_ns = prev_ns = frame.ts_ns
            length, cap_len = frame_lengths(pkt, len(frame.data), frame.wire_len,
                                            frame.linktype)
            info = FrameInfo(number, frame.ts_ns, frame.ts_ns - first_ns,
                             frame.ts_ns - prev_ns, length, cap_len, frame.linktype,
                             frame.interface, frame.offset, pkt=pkt)
            prev_ns = frame.ts_ns
            bar.update(frame.offset)
            yield info
        told = _tell_skipped(path, skipped, told)
        if skipped:
            # Every packet around the damage was read; the file is still a bad input.
            lost = sum(s.length for s in skipped)
            raise InputError(f"{path}: {len(skipped)} damaged region(s) ({lost} bytes) "
                             "skipped; the records around them were read")
    finally:
        _tell_skipped(path, skipped, told)   # also those found just before an error
        bar.close()
        close = getattr(reader, "close", None)
        if close is not None:
            close()
