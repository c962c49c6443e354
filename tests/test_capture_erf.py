"""ERF records, ERF timestamps and native ERF files (ibwire.capture.erf)."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ibwire.capture import (
    CaptureError,
    ErfWriter,
    erf_record,
    erf_ts_from_ns,
    erf_ts_to_ns,
    open_capture,
    parse_erf_record,
    read_capture,
)
from ibwire.capture.erf import ErfReader, looks_like_erf
from ibwire.constants import LINKTYPE_ERF

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

# The ERF header of vector N1 in shared/docs/protocol-facts.md §10.2 (a padded record).
N1_HEADER = bytes.fromhex("e0ed30aef8412b48" "15" "04" "0030" "0000" "001e")
# tshark 4.0.17 frame.time_epoch of that record: 1210794488.680434100.
N1_TS_NS = 1210794488_680434100


def _tshark_times(path: Path) -> list[int]:
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-T", "fields", "-e", "frame.time_epoch"],
        capture_output=True, text=True, check=True,
    ).stdout
    times = []
    for line in out.splitlines():
        sec, _, frac = line.partition(".")
        times.append(int(sec) * 10**9 + int(frac.ljust(9, "0")))
    return times


def test_parse_sample_record_cuts_payload_by_wlen_not_rlen():
    payload = bytes(range(30))
    rec = parse_erf_record(N1_HEADER + payload + b"\xee\xee")  # 2 bytes of padding
    assert (rec.type, rec.flags, rec.cap, rec.vlen, rec.rlen, rec.lctr, rec.wlen) == (
        21, 0x04, 0, True, 48, 0, 30
    )
    assert not (rec.trunc or rec.rxe or rec.dse or rec.ext_header_present)
    assert rec.ts == 0x482B41F8AE30EDE0
    assert rec.ts_ns == N1_TS_NS
    assert rec.header_len == 16
    assert rec.payload == payload
    assert rec.problems == []


# (raw fraction, nanoseconds tshark 4.0.17 shows for it); seconds carry at 10**9.
TSHARK_ROUNDING = [
    (0x00000000, 0), (0x00000002, 0), (0x00000003, 1), (0x80000000, 500_000_000),
    (0xFFFFFFFD, 999_999_999), (0xFFFFFFFE, 1_000_000_000), (0xFFFFFFFF, 1_000_000_000),
    (0x08C23D49, 34_213_858), (0x00006EF9, 6_614),
]


@pytest.mark.parametrize(("frac", "ns"), TSHARK_ROUNDING)
def test_erf_ts_to_ns_rounds_like_tshark(frac, ns):
    assert erf_ts_to_ns((1_700_000_000 << 32) | frac) == 1_700_000_000 * 10**9 + ns


@given(st.integers(min_value=0, max_value=(1 << 32) * 10**9 - 1))
def test_erf_ts_from_ns_is_exact_inverse(ts_ns):
    assert erf_ts_to_ns(erf_ts_from_ns(ts_ns)) == ts_ns


def test_ibdump_quirk_encoding_and_overflow():
    sec = 1_700_000_000
    assert erf_ts_from_ns(sec * 10**9 + 123_456_789, ibdump_quirk=True) == (
        (sec << 32) + 123_456 * 4295
    )
    # usec * 4295 overflows 32 bits for usec >= 999993: ibdump carries into the seconds.
    late = erf_ts_from_ns(sec * 10**9 + 999_999_000, ibdump_quirk=True)
    assert late == ((sec + 1) << 32) | 0x6EF9
    assert erf_ts_to_ns(late) == (sec + 1) * 10**9 + 6_614  # what tshark shows
    assert erf_ts_to_ns(late, ibdump_quirk=True) == sec * 10**9 + 999_999_000
    early = erf_ts_from_ns(sec * 10**9 + 500_000_000, ibdump_quirk=True)
    assert erf_ts_to_ns(early) == sec * 10**9 + 500_003_807
    assert erf_ts_to_ns(early, ibdump_quirk=True) == sec * 10**9 + 500_000_000


def test_erf_record_builds_ibdump_style_record():
    rec = erf_record(b"\x01" * 30, 1_700_000_000_123_456_789, cap=1)
    assert len(rec) == 46
    assert rec[8:16] == bytes([21, 0x05]) + struct.pack(">HHH", 46, 0, 30)
    assert erf_ts_to_ns(int.from_bytes(rec[:8], "little")) == 1_700_000_000_123_456_789
    padded = erf_record(b"\x01" * 30, 0, erf_type=25, pad=True)
    assert len(padded) == 48 and padded[-2:] == b"\0\0"
    assert padded[8:16] == bytes([25, 0x04]) + struct.pack(">HHH", 48, 0, 30)
    assert parse_erf_record(padded).payload == b"\x01" * 30
    with pytest.raises(ValueError, match="does not fit an ERF record"):
        erf_record(bytes(65520), 0)


def test_extension_headers_follow_the_more_bit():
    ext1 = bytes([0x80 | 0x01]) + bytes(range(7))  # "another follows"
    ext2 = bytes([0x02]) + bytes(7)
    payload = b"\xaa" * 10
    head = struct.pack("<QBB", 5 << 32, 0x80 | 21, 4) + struct.pack(">HHH", 42, 0, 10)
    rec = parse_erf_record(head + ext1 + ext2 + payload)
    assert rec.ext_header_present and rec.type == 21
    assert rec.ext_headers == [ext1, ext2]
    assert rec.header_len == 32
    assert rec.payload == payload
    assert rec.problems == []


def test_parse_never_raises_and_reports_problems():
    short = parse_erf_record(N1_HEADER[:9])
    assert short.problems == [(0, "truncated ERF header: 9 of 16 bytes")]
    assert short.payload == b""
    # rlen says 48, only 16 + 10 bytes present; wlen 30 cannot be satisfied.
    cut = parse_erf_record(N1_HEADER + bytes(10), strict=True)   # a native ERF record
    assert cut.payload == bytes(10)
    assert cut.problems == [
        (10, "rlen 48 exceeds the 26 bytes present"),
        (14, "wlen 30 exceeds the 10 bytes of payload in the record"),
    ]
    # Inside pcap the record's length bounds it: only the missing wlen bytes count.
    assert parse_erf_record(N1_HEADER + bytes(10)).problems == [
        (14, "wlen 30 exceeds the 10 bytes of payload in the record")]
    # The extension-header chain runs off the end of the data.
    head = struct.pack("<QBB", 0, 0x80 | 21, 4) + struct.pack(">HHH", 40, 0, 0)
    chain = parse_erf_record(head + bytes([0x80]) + bytes(7) + bytes(3))
    assert chain.ext_headers == [bytes([0x80]) + bytes(7)]
    assert chain.problems[0] == (24, "truncated ERF extension header: 3 of 8 bytes")
    tiny = parse_erf_record(struct.pack("<QBB", 0, 21, 4) + struct.pack(">HHH", 8, 0, 0))
    assert tiny.problems == [(10, "rlen 8 is shorter than the 16-byte ERF header")]


def test_ethernet_erf_payload_keeps_offset_and_pad_bytes():
    frame = bytes(range(64))
    rec = struct.pack("<QBB", 0, 2, 4) + struct.pack(">HHH", 16 + 2 + 64, 0, 64)
    parsed = parse_erf_record(rec + b"\x00\x00" + frame)
    assert parsed.payload == b"\x00\x00" + frame and parsed.problems == []


def _sample_records() -> list[bytes]:
    base = 1_700_000_000 * 10**9
    return [
        erf_record(bytes(range(30)), base + 1),
        erf_record(bytes(6), base + 999_999_999, erf_type=25, cap=1),
        erf_record(bytes(range(33)), base + 10**9 + 5, pad=True),
        erf_record(b"\x42" * 290, base + 2 * 10**9 + 999_999_000, ibdump_quirk=True),
    ]


def test_native_erf_round_trip_is_byte_identical(tmp_path):
    records = _sample_records()
    buf = io.BytesIO()
    with ErfWriter(buf) as w:
        for rec in records:
            w.write(rec)
    assert buf.getvalue() == b"".join(records)
    frames = list(ErfReader(io.BytesIO(buf.getvalue())))
    assert [f.data for f in frames] == records
    assert [f.linktype for f in frames] == [LINKTYPE_ERF] * 4
    assert [f.offset for f in frames] == [0, 46, 68, 124]
    assert [f.wire_len for f in frames] == [46, 22, 49, 306]
    assert frames[0].ts_ns == 1_700_000_000_000_000_001
    again = io.BytesIO()
    with ErfWriter(again) as w:
        for f in frames:
            w.write(f)
    assert again.getvalue() == buf.getvalue()


def test_open_capture_sniffs_native_erf_and_skips_pad(tmp_path):
    records = _sample_records()
    pad = struct.pack("<QBB", 1_700_000_000 << 32, 48, 4) + struct.pack(">HHH", 24, 0, 0)
    pad += bytes(8)
    path = tmp_path / "native.erf"
    path.write_bytes(records[0] + pad + b"".join(records[1:]) + bytes(8))
    assert looks_like_erf(path.read_bytes()[:16])
    with pytest.raises(CaptureError) as err:
        read_capture(path)
    # 8 trailing zero bytes are a truncated header after 4 records.
    assert str(err.value) == (
        f"{path}: record 4 at byte offset {len(path.read_bytes()) - 8}: "
        "truncated ERF record header: 8 of 16 bytes (4 records read)"
    )
    path.write_bytes(records[0] + pad + b"".join(records[1:]))
    with open_capture(path) as cap:
        assert cap.format == "erf"
        frames = list(cap)
    assert [f.data for f in frames] == records
    assert [f.index for f in frames] == [0, 1, 2, 3]
    assert frames[1].offset == 46 + 24


def test_erf_writer_rejects_non_erf_frames():
    from ibwire.capture import Frame

    with ErfWriter(io.BytesIO()) as w, pytest.raises(ValueError, match="link type 1"):
        w.write(Frame(index=0, ts_ns=0, linktype=1, data=bytes(60), wire_len=60))


@needs_tshark
def test_tshark_reads_native_erf_with_the_same_times(tmp_path):
    path = tmp_path / "ours.erf"
    with ErfWriter(path) as w:
        for rec in _sample_records():
            w.write(rec)
        for i, frac in enumerate(f for f, _ in TSHARK_ROUNDING):
            ts = ((1_710_000_000 + i) << 32) | frac
            w.write(struct.pack("<QBB", ts, 21, 4) + struct.pack(">HHH", 46, 0, 30) + bytes(30))
    ours = [f.ts_ns for f in read_capture(path)]
    assert len(ours) == 4 + len(TSHARK_ROUNDING)
    assert _tshark_times(path) == ours


@needs_tshark
def test_erf_in_pcap_time_is_the_erf_header_time_as_in_tshark(tmp_path):
    rec = N1_HEADER + bytes(32)
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ERF)
    # The pcap record header says 1.000002 s; the ERF header says 1210794488.6804341.
    path = tmp_path / "erf-in.pcap"
    path.write_bytes(hdr + struct.pack("<IIII", 1, 2, len(rec), len(rec)) + rec)
    (frame,) = read_capture(path)
    assert frame.ts_ns == N1_TS_NS
    assert _tshark_times(path) == [N1_TS_NS]
