"""The shared real captures: counts and times against tshark, and lossless re-writing."""

from __future__ import annotations

import functools
import io
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ibwire.capture import (
    Frame,
    PcapWriter,
    open_capture,
    parse_erf_record,
    read_capture,
    write_capture,
)
from ibwire.constants import LINKTYPE_ERF

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "captures"
FILES = sorted(SHARED.glob("*/*.pcap")) if SHARED.is_dir() else []
TSHARK = shutil.which("tshark")
NO_SHARED = f"shared captures not found at {SHARED}"


def _ids(path: Path | None) -> str:
    return "none" if path is None else f"{path.parent.name}/{path.name}"


# Parametrize over [None] when the directory is absent so the skip says why.
each_capture = pytest.mark.parametrize("path", FILES or [None], ids=_ids)
# One Ethernet (RoCEv2) and one ERF (native IB) capture for the tshark write checks;
# native ERF output only for the ERF one.
SAMPLES = [
    (p, fmt)
    for p in FILES
    if p.name in ("roce-v2-rxe-cm-write-read.pcap", "perfquery.pcap")
    for fmt in ("pcap", "pcapng", "erf")
    if fmt != "erf" or p.parent.name == "mad"
]


def _need(path: Path | None, tshark: bool = False) -> Path:
    if path is None:
        pytest.skip(NO_SHARED)
    if tshark and TSHARK is None:
        pytest.skip("tshark is not installed")
    return path


def _epoch_ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int(frac.ljust(9, "0"))


def _tshark_fields(path: Path) -> list[tuple[int, int, int, int]]:
    """(frame.number, time in ns, frame.len, frame.cap_len) for every frame."""
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-T", "fields", "-e", "frame.number",
         "-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len"],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        number, epoch, wire, cap = line.split("\t")
        rows.append((int(number), _epoch_ns(epoch), int(wire), int(cap)))
    return rows


@functools.cache
def _tshark_all() -> dict[Path, list[tuple[int, int, int, int]]]:
    # One tshark per file, run in parallel once for the whole session.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(FILES, pool.map(_tshark_fields, FILES)))


@each_capture
def test_counts_times_and_lengths_match_tshark(path):
    path = _need(path, tshark=True)
    expected = _tshark_all()[path]
    frames = read_capture(path)
    assert len(frames) == len(expected) > 0
    assert [f.index + 1 for f in frames] == [row[0] for row in expected]
    assert [f.ts_ns for f in frames] == [row[1] for row in expected]
    if frames[0].linktype == LINKTYPE_ERF:
        # tshark turns the ERF header into a pseudo-header: len = wlen, cap_len = payload.
        erf = [parse_erf_record(f.data) for f in frames]
        assert [(r.wlen, len(r.payload)) for r in erf] == [row[2:] for row in expected]
        assert all(r.problems == [] for r in erf)
    else:
        assert [(f.wire_len, len(f.data)) for f in frames] == [row[2:] for row in expected]


def _manifest_counts() -> dict[str, int]:
    text = (SHARED / "mad" / "MANIFEST.md").read_text()
    return {
        name: int(count)
        for name, count in re.findall(r"^## (\S+\.pcap)\n(?:.*\n)*?- packets: (\d+)", text, re.M)
    }


def test_mad_counts_match_the_manifest():
    if not SHARED.is_dir():
        pytest.skip(NO_SHARED)
    counts = _manifest_counts()
    assert len(counts) == len(list((SHARED / "mad").glob("*.pcap")))
    for name, count in counts.items():
        frames = read_capture(SHARED / "mad" / name)
        assert len(frames) == count, name
        assert {f.linktype for f in frames} == {LINKTYPE_ERF}


@each_capture
def test_rewriting_as_pcap_is_byte_identical(path):
    path = _need(path)
    original = path.read_bytes()
    with open_capture(path) as cap:
        hdr = cap.reader
        buf = io.BytesIO()
        with PcapWriter(buf, hdr.linktype, nanosecond=hdr.nanosecond, snaplen=hdr.snaplen) as w:
            for frame in cap:
                w.write(frame)
    assert buf.getvalue() == original


def _key(frames: list[Frame]) -> list[tuple[int, int, int, bytes, int]]:
    return [(f.index, f.ts_ns, f.linktype, f.data, f.wire_len) for f in frames]


@each_capture
def test_rewriting_as_pcapng_and_gzip_keeps_every_frame(path, tmp_path):
    path = _need(path)
    frames = read_capture(path)
    for name, fmt in [("x.pcapng", "pcapng"), ("x.pcapng.gz", "pcapng"),
                      ("x.pcap", "pcap"), ("x.pcap.gz", "pcap")]:
        out = tmp_path / name
        assert write_capture(out, frames, fmt=fmt) == len(frames)
        assert _key(read_capture(out)) == _key(frames), name
    if frames[0].linktype == LINKTYPE_ERF:
        out = tmp_path / "x.erf"
        write_capture(out, frames, fmt="erf")
        assert _key(read_capture(out)) == _key(frames)


@pytest.mark.parametrize(
    ("path", "fmt"), SAMPLES or [(None, "pcap")], ids=lambda v: v if isinstance(v, str) else _ids(v)
)
def test_tshark_reads_what_we_write(path, fmt, tmp_path):
    path = _need(path, tshark=True)
    frames = read_capture(path)
    out = tmp_path / f"ours.{fmt}"
    write_capture(out, frames, fmt=fmt, nanosecond=True)
    rows = _tshark_fields(out)
    assert [row[0] for row in rows] == [f.index + 1 for f in frames]
    assert [row[1] for row in rows] == [f.ts_ns for f in frames]
    assert [row[2:] for row in rows] == [row[2:] for row in _tshark_all()[path]]
