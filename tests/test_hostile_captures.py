"""Broken capture files, one test per kind of damage: ends mid record header / mid
record body / mid pcapng block, empty, not a capture (text, ELF, PNG, random), gzip
truncated or corrupt -- each with the exact CaptureError message, after every good
record. A corrupt record length in the middle is stepped over (pcap, pcapng and ERF
all resynchronise): exactly which packets are delivered and the exact ``Skipped``
entry, and with ``resync=False`` the exact CaptureError the readers raised before."""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from functools import cache
from pathlib import Path

import pytest
from fuzz_strategies import CAPTURE_KINDS, Seed, build_capture, packet_seeds, with_field

from ibwire.capture import CaptureError, Frame, Skipped, open_capture
from ibwire.capture.pcapng import EPB

NOT_A_CAPTURE = "not a capture file (pcap, pcapng, ERF or gzip of these): first bytes"
GZIP_CUT = "gzip data truncated or corrupt (Compressed file ended before the end-of-stream " \
    "marker was reached)"
BODY_START = {"pcap": 16, "pcapng": 8 + 20, "erf": 16}  # where the packet bytes start
FRAME_DATA_AT = {"pcap": 16, "pcapng": 8 + 20, "erf": 0}  # ERF frames keep their header


def family(kind: str) -> str:
    return kind.split("-")[0]


@cache
def capture(kind: str) -> Seed:
    """Seven generated packets (Ethernet, or native IB in ERF) in one capture."""
    encap = "ib" if kind == "erf" else "eth"
    frames = [s.data for s in packet_seeds(False) if s.encap == encap][:7]
    return build_capture(kind, frames, 247 if kind == "erf" else 1)


def packet_records(seed: Seed) -> list[tuple[int, int]]:
    """(offset, length) of the records that hold packets (pcapng: the EPBs only)."""
    if not str(seed.encap).startswith("pcapng"):
        return seed.records
    e = ">" if str(seed.encap).endswith("be") else "<"
    return [(o, n) for o, n in seed.records if struct.unpack_from(e + "I", seed.data, o)[0] == EPB]


def read(path: Path, resync: bool = True) -> tuple[list[Frame], CaptureError | None]:
    frames, _, err = read_all(path, resync)
    return frames, err


def read_all(path: Path, resync: bool = True) -> tuple[list[Frame], list[Skipped],
                                                      CaptureError | None]:
    frames: list[Frame] = []
    skipped: list[Skipped] = []
    try:
        with open_capture(path, resync=resync) as cap:
            skipped = cap.skipped
            frames.extend(cap)
    except CaptureError as err:
        return frames, skipped, err
    return frames, skipped, None


def expect_stop(path: Path, data: bytes, good: int, offset: int, reason: str,
                resync: bool = True) -> list[Frame]:
    """Write `data`, read it: `good` frames, then exactly this CaptureError."""
    path.write_bytes(data)
    frames, err = read(path, resync)
    assert err is not None, f"no error; {len(frames)} frames"
    assert str(err) == f"{path}: record {good} at byte offset {offset}: {reason} " \
        f"({good} records read)"
    assert (err.index, err.offset, len(frames)) == (good, offset, good)
    return frames


def same_packets(frames: list[Frame], seed: Seed, n: int) -> None:
    """The first n frames carry the first n packets of the seed, unchanged."""
    fam = family(str(seed.encap))
    want = [seed.data[o + FRAME_DATA_AT[fam]:o + FRAME_DATA_AT[fam] + len(f.data)]
            for (o, _), f in zip(packet_records(seed)[:n], frames)]
    assert [f.data for f in frames[:n]] == want and len(frames) >= n


# -- ends mid record -----------------------------------------------------------------
@pytest.mark.parametrize("kind", CAPTURE_KINDS)
def test_ends_mid_record_header(tmp_path: Path, kind: str):
    seed = capture(kind)
    off, _ = packet_records(seed)[4]
    reason = {"pcap": "truncated record header: 5 of 16 bytes",
              "pcapng": "truncated block header: 5 of 8 bytes",
              "erf": "truncated ERF record header: 5 of 16 bytes"}[family(kind)]
    frames = expect_stop(tmp_path / "cut.cap", seed.data[:off + 5], 4, off, reason)
    same_packets(frames, seed, 4)


@pytest.mark.parametrize("kind", CAPTURE_KINDS)
def test_ends_mid_record_body(tmp_path: Path, kind: str):
    seed = capture(kind)
    off, length = packet_records(seed)[4]
    fam = family(kind)
    cut = off + BODY_START[fam] + 10
    reason = {"pcap": f"truncated record body: 10 of {length - 16} bytes",
              "pcapng": f"truncated Enhanced Packet Block: {cut - off} of {length} bytes",
              "erf": f"truncated ERF record body: 10 of {length - 16} bytes"}[fam]
    frames = expect_stop(tmp_path / "cut.cap", seed.data[:cut], 4, off, reason)
    same_packets(frames, seed, 4)


@pytest.mark.parametrize("kind", ["pcapng-le", "pcapng-be"])
@pytest.mark.parametrize("inside", ["options", "trailer"])
def test_ends_mid_pcapng_block(tmp_path: Path, kind: str, inside: str):
    """Cut inside the block's packet data end or inside its trailing length."""
    seed = capture(kind)
    off, length = packet_records(seed)[5]
    cut = off + length - (2 if inside == "trailer" else 6)
    frames = expect_stop(tmp_path / "cut.pcapng", seed.data[:cut], 5, off,
                         f"truncated Enhanced Packet Block: {cut - off} of {length} bytes")
    same_packets(frames, seed, 5)


# -- corrupt record length in the middle ------------------------------------------------
def expect_resync(path: Path, data: bytes, seed: Seed, lost: list[int],
                  skipped: Skipped) -> list[Frame]:
    """Write `data`, read it: every packet but those `lost` (numbered as in the seed),
    unchanged and numbered in order, no error, and exactly this one Skipped entry."""
    path.write_bytes(data)
    frames, got, err = read_all(path)
    assert err is None and got == [skipped]
    fam = family(str(seed.encap))
    want = [(o, seed.data[o + FRAME_DATA_AT[fam]:o + n - (4 if fam == "pcapng" else 0)])
            for i, (o, n) in enumerate(packet_records(seed)) if i not in lost]
    assert [(f.offset, f.data) for f in frames] == [
        (o, d[:len(f.data)]) for (o, d), f in zip(want, frames)]
    assert len(frames) == len(want) and [f.index for f in frames] == list(range(len(want)))
    return frames


@pytest.mark.parametrize("kind", [k for k in CAPTURE_KINDS if k.startswith("pcap-")])
@pytest.mark.parametrize("value", [0xFFFFFFFF, 262145])
def test_pcap_corrupt_incl_len_resynchronises(tmp_path: Path, kind: str, value: int):
    """pcap has no second length, but a record header is recognisable: a time near the
    last record's, a fraction under a second, 0 < incl_len <= orig_len. Two in a row."""
    seed = capture(kind)
    off, length = seed.records[3]
    data = with_field(seed, ("pcap_record", "incl_len"), off, value)
    reason = f"record length {value} exceeds snaplen 262144"
    expect_resync(tmp_path / "bad.pcap", data, seed, [3], Skipped(3, off, length, reason))
    frames = expect_stop(tmp_path / "bad.pcap", data, 3, off, reason, resync=False)
    same_packets(frames, seed, 3)


@pytest.mark.parametrize("kind", [k for k in CAPTURE_KINDS if k.startswith("pcap-")])
def test_pcap_corrupt_incl_len_in_the_last_record_stops(tmp_path: Path, kind: str):
    """Nothing after the damage to resynchronise on: the error as before."""
    seed = capture(kind)
    off, _ = seed.records[-1]
    data = with_field(seed, ("pcap_record", "incl_len"), off, 0xFFFFFFFF)
    frames = expect_stop(tmp_path / "bad.pcap", data, 6, off,
                         "record length 4294967295 exceeds snaplen 262144")
    same_packets(frames, seed, 6)


@pytest.mark.parametrize("kind", ["pcapng-le", "pcapng-be"])
@pytest.mark.parametrize("value, reason", [
    (8, "total length 8 is too short"), (0x7F, "total length 127 is not a multiple of 4"),
    (1 << 27, "total length 134217728 exceeds the 67108864-byte sanity limit")])
def test_pcapng_impossible_block_length_resynchronises(tmp_path: Path, kind: str, value: int,
                                                      reason: str):
    """The scan lands on the next block of a known type: the unknown block 0x0bad0005
    right after the damaged EPB goes with it (it carries no packet)."""
    seed = capture(kind)
    off, length = packet_records(seed)[3]
    unknown = 20
    data = with_field(seed, ("pcapng_block", "total_length"), off, value)
    expect_resync(tmp_path / "bad.pcapng", data, seed, [3],
                  Skipped(3, off, length + unknown, f"Enhanced Packet Block: {reason}"))
    frames = expect_stop(tmp_path / "bad.pcapng", data, 3, off,
                         f"Enhanced Packet Block: {reason}", resync=False)
    same_packets(frames, seed, 3)


@pytest.mark.parametrize("kind", ["pcapng-le", "pcapng-be"])
@pytest.mark.parametrize("end", ["leading", "trailing"])
def test_pcapng_resynchronises_after_a_corrupt_block_length(tmp_path: Path, kind: str,
                                                            end: str):
    """One length of an EPB in the middle is off by 4: the two no longer agree; the
    scan finds the blocks after it. A leading length 4 too long reads the next block's
    type (0x0bad0005) as the trailing one."""
    seed = capture(kind)
    off, length = packet_records(seed)[3]
    key = ("pcapng_block" if end == "leading" else "pcapng_trailer", "total_length")
    data = with_field(seed, key, off, length + 4)
    reason = ("Enhanced Packet Block: block length mismatch: "
              + (f"{length + 4} at the start, 195887109 at the end" if end == "leading"
                 else f"{length} at the start, {length + 4} at the end"))
    expect_resync(tmp_path / "bad.pcapng", data, seed, [3], Skipped(3, off, length + 20, reason))
    frames = expect_stop(tmp_path / "bad.pcapng", data, 3, off, reason, resync=False)
    same_packets(frames, seed, 3)


@pytest.mark.parametrize("kind", ["pcapng-le", "pcapng-be"])
def test_pcapng_captured_length_past_its_block_skips_the_block(tmp_path: Path, kind: str):
    """Both block lengths agree, so only this block is skipped, without a scan."""
    seed = capture(kind)
    off, length = packet_records(seed)[2]
    data = with_field(seed, ("pcapng_epb", "cap_len"), off, length)
    reason = (f"Enhanced Packet Block: captured length {length} exceeds the {length - 32} "
              "bytes of the block")
    expect_resync(tmp_path / "bad.pcapng", data, seed, [2], Skipped(2, off, length, reason))
    frames = expect_stop(tmp_path / "bad.pcapng", data, 2, off, reason, resync=False)
    same_packets(frames, seed, 2)


def test_erf_rlen_shorter_than_its_header_resynchronises(tmp_path: Path):
    seed = capture("erf")
    off, length = seed.records[3]
    data = with_field(seed, ("erf_record", "rlen"), off, 3)
    reason = "ERF rlen 3 is shorter than the 16-byte header"
    expect_resync(tmp_path / "bad.erf", data, seed, [3], Skipped(3, off, length, reason))
    frames = expect_stop(tmp_path / "bad.erf", data, 3, off, reason, resync=False)
    same_packets(frames, seed, 3)


def test_erf_resynchronises_after_a_corrupt_rlen(tmp_path: Path):
    """rlen 8 too long: record 3 takes in record 4's timestamp (harmless: the payload is
    cut by wlen), record 4 is read 8 bytes late, its header is garbage (rlen 2), and the
    scan lands on record 5."""
    seed = capture("erf")
    off, length = seed.records[3]
    nxt, nlen = seed.records[4]
    data = with_field(seed, ("erf_record", "rlen"), off, length + 8)
    path = tmp_path / "bad.erf"
    path.write_bytes(data)
    frames, skipped, err = read_all(path)
    assert err is None
    assert skipped == [Skipped(4, nxt + 8, nlen - 8,
                               "ERF rlen 2 is shorter than the 16-byte header")]
    keep = seed.records[:3] + seed.records[5:]
    assert [f.offset for f in frames] == [o for o, _ in seed.records[:4]] + [
        o for o, _ in seed.records[5:]]
    assert frames[3].data == data[off:off + length + 8]
    assert [f.data for f in frames[:3] + frames[4:]] == [seed.data[o:o + n] for o, n in keep]
    # Strict: the garbage header is where reading stops.
    frames = expect_stop(path, data, 4, nxt + 8, "ERF rlen 2 is shorter than the 16-byte "
                         "header", resync=False)
    same_packets(frames, seed, 3)


def test_erf_header_out_of_step_is_damage(tmp_path: Path):
    """rlen 8 too short: the next "header" is 8 bytes of payload and record 4's
    timestamp; its time (the payload) is decades off, and so is the one after it."""
    seed = capture("erf")
    off, length = seed.records[3]
    nxt, _ = seed.records[4]
    data = with_field(seed, ("erf_record", "rlen"), off, length - 8)
    path = tmp_path / "bad.erf"
    path.write_bytes(data)
    frames, skipped, err = read_all(path)
    sec = int.from_bytes(data[nxt - 4:nxt], "little")
    reason = (f"ERF timestamp {sec} s is out of step with the previous record's "
              "1700000000 s")
    assert err is None and skipped == [Skipped(4, nxt - 8, 8, reason)]
    assert [f.offset for f in frames] == [o for o, _ in seed.records]
    assert frames[3].data == data[off:off + length - 8]
    expect_stop(path, data, 4, nxt - 8, reason, resync=False)


# -- not a capture at all ------------------------------------------------------------
@pytest.mark.parametrize("name, data, message", [
    ("empty", b"", "empty file"),
    ("text", b"hello, world\n" * 5, f"{NOT_A_CAPTURE} 68 65 6c 6c"),
    ("elf", b"\x7fELF\x02\x01\x01" + bytes(57), f"{NOT_A_CAPTURE} 7f 45 4c 46"),
    ("png", b"\x89PNG\r\n\x1a\n" + bytes(40), f"{NOT_A_CAPTURE} 89 50 4e 47"),
    ("random", random.Random(7).randbytes(300), f"{NOT_A_CAPTURE} 38 b4 e6 52"),
    ("one-byte", b"\xd4", f"{NOT_A_CAPTURE} d4"),
    ("gzip-empty", gzip.compress(b"", mtime=0), "empty file (gzip of 0 bytes)"),
    ("gzip-text", gzip.compress(b"hello world", mtime=0),
     f"{NOT_A_CAPTURE} after gzip decompression 68 65 6c 6c"),
    ("pcap-header-cut", struct.pack("<IHH", 0xA1B2C3D4, 2, 4),
     "truncated pcap file header: 8 of 24 bytes"),
])
def test_not_a_capture(tmp_path: Path, name: str, data: bytes, message: str):
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(data)
    frames, err = read(path)
    assert frames == [] and err is not None
    assert str(err) == f"{path}: {message}"


def test_pcapng_section_header_cut(tmp_path: Path):
    expect_stop(tmp_path / "shb.pcapng", capture("pcapng-le").data[:10], 0, 0,
                "truncated Section Header Block: 10 of at least 28 bytes")


# -- gzip ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", CAPTURE_KINDS)
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_gzip_truncated_delivers_every_complete_record(tmp_path: Path, kind: str,
                                                       keep: float):
    seed = capture(kind)
    packed = gzip.compress(seed.data, mtime=0)
    cut = packed[:int(len(packed) * keep)]
    prefix = zlib.decompressobj(31).decompress(cut)   # what can be decompressed at all
    whole = [r for r in seed.records if r[0] + r[1] <= len(prefix)]
    good = sum(1 for r in packet_records(seed) if r in whole)
    stop = seed.records[len(whole)][0]
    frames = expect_stop(tmp_path / "cut.gz", cut, good, stop, GZIP_CUT)
    same_packets(frames, seed, good)


@pytest.mark.parametrize("kind", ["pcap-le-us", "pcapng-le", "erf"])
def test_gzip_crc_mismatch_after_every_record(tmp_path: Path, kind: str):
    seed = capture(kind)
    packed = bytearray(gzip.compress(seed.data, mtime=0))
    packed[-8] ^= 1   # the stored CRC32 (little-endian, first of the last 8 bytes)
    crc = zlib.crc32(seed.data)
    n = len(packet_records(seed))
    expect_stop(tmp_path / "crc.gz", bytes(packed), n, len(seed.data),
                f"gzip data truncated or corrupt (CRC check failed {hex(crc ^ 1)} != "
                f"{hex(crc)})")
