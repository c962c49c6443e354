"""Broken capture files: one CaptureError with an exact message, after every good record
(or, for a broken length in the middle, the damage stepped over and listed in
``.skipped``)."""

from __future__ import annotations

import gzip
import io
import struct
from pathlib import Path

import pytest

from ibwire.capture import (
    CaptureError,
    Frame,
    PcapngWriter,
    PcapReader,
    PcapWriter,
    Skipped,
    UnknownLinkTypeError,
    check_linktype,
    erf_record,
    open_capture,
)

BASE_NS = 1_700_000_000_000_000_000


def _pcap_bytes(n: int, size: int = 60) -> bytes:
    buf = io.BytesIO()
    with PcapWriter(buf, 1, nanosecond=False) as w:
        for i in range(n):
            w.write(bytes([i]) * size, ts_ns=BASE_NS + i * 1000)
    return buf.getvalue()


def _collect(path: Path, resync: bool = True) -> tuple[list[Frame], CaptureError]:
    """Read until the error; return the frames delivered and the error."""
    frames: list[Frame] = []
    with pytest.raises(CaptureError) as info:
        with open_capture(path, resync=resync) as cap:
            for frame in cap:
                frames.append(frame)
    err = info.value
    assert err.index == len(frames)  # the index in the message = records delivered
    return frames, err


def test_pcap_truncated_mid_record_header(tmp_path):
    path = tmp_path / "cut-header.pcap"
    path.write_bytes(_pcap_bytes(3) + bytes(7))
    frames, err = _collect(path)
    assert len(frames) == 3 and err.offset == 24 + 3 * 76
    assert str(err) == (
        f"{path}: record 3 at byte offset 252: truncated record header: 7 of 16 bytes "
        "(3 records read)"
    )


def test_pcap_truncated_mid_record_body(tmp_path):
    path = tmp_path / "cut-body.pcap"
    path.write_bytes(_pcap_bytes(5)[:24 + 4 * 76 + 16 + 10])
    frames, err = _collect(path)
    assert [f.data[0] for f in frames] == [0, 1, 2, 3]
    assert str(err) == (
        f"{path}: record 4 at byte offset 328: truncated record body: 10 of 60 bytes "
        "(4 records read)"
    )


def test_pcap_corrupt_record_length_in_the_middle(tmp_path):
    data = bytearray(_pcap_bytes(40))
    # Record 17 starts at 24 + 17 * 76; incl_len is at +8 in its header.
    struct.pack_into("<I", data, 24 + 17 * 76 + 8, 0xFFFFFFFF)
    path = tmp_path / "capture.pcap"
    path.write_bytes(bytes(data))
    reason = "record length 4294967295 exceeds snaplen 262144"
    with open_capture(path) as cap:
        frames = list(cap)
        assert cap.skipped == [Skipped(index=17, offset=1316, length=76, reason=reason)]
    assert [f.data[0] for f in frames] == [i for i in range(40) if i != 17]
    assert [f.index for f in frames] == list(range(39))
    assert frames[17].offset == 1316 + 76
    # resync=False: the error, exactly as before resynchronisation existed.
    frames, err = _collect(path, resync=False)
    assert len(frames) == 17 and frames[-1].data == bytes([16]) * 60
    assert (err.index, err.offset) == (17, 1316)
    assert err.reason == reason
    assert str(err) == (
        f"{path}: record 17 at byte offset 1316: record length 4294967295 exceeds snaplen "
        "262144 (17 records read)"
    )


def test_pcap_length_over_a_huge_snaplen_hits_the_sanity_limit():
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0xFFFFFFFF, 1)
    rec = struct.pack("<IIII", 0, 0, (1 << 26) + 1, 100)
    with pytest.raises(CaptureError) as info:
        list(PcapReader(io.BytesIO(hdr + rec), name="big.pcap"))
    assert str(info.value) == (
        "big.pcap: record 0 at byte offset 24: record length 67108865 exceeds the "
        "67108864-byte sanity limit (0 records read)"
    )


def test_pcap_record_a_little_over_snaplen_is_accepted():
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    rec = struct.pack("<IIII", 0, 0, 70000, 70000) + bytes(70000)
    (frame,) = PcapReader(io.BytesIO(hdr + rec))
    assert len(frame.data) == 70000


def test_truncated_pcap_file_header(tmp_path):
    path = tmp_path / "short.pcap"
    path.write_bytes(_pcap_bytes(0)[:10])
    with pytest.raises(CaptureError) as info:
        open_capture(path)
    assert str(info.value) == f"{path}: truncated pcap file header: 10 of 24 bytes"
    assert info.value.index == 0


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(b"")
    with pytest.raises(CaptureError) as info:
        open_capture(path)
    assert str(info.value) == f"{path}: empty file"
    assert (info.value.index, info.value.offset) == (0, 0)
    with pytest.raises(CaptureError, match=r"^empty.pcap: empty file$"):
        PcapReader(io.BytesIO(b""), name="empty.pcap")


def test_empty_gzip(tmp_path):
    path = tmp_path / "empty.pcap.gz"
    path.write_bytes(gzip.compress(b""))
    with pytest.raises(CaptureError) as info:
        open_capture(path)
    assert str(info.value) == f"{path}: empty file (gzip of 0 bytes)"


def test_text_file_is_not_a_capture(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("<!DOCTYPE html>\n<html></html>\n")
    with pytest.raises(CaptureError) as info:
        open_capture(path)
    assert str(info.value) == (
        f"{path}: not a capture file (pcap, pcapng, ERF or gzip of these): "
        "first bytes 3c 21 44 4f"
    )
    gz = tmp_path / "page.html.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(CaptureError) as info:
        open_capture(gz)
    assert str(info.value) == (
        f"{gz}: not a capture file (pcap, pcapng, ERF or gzip of these): "
        "first bytes after gzip decompression 3c 21 44 4f"
    )


def test_short_unknown_file_shows_the_bytes_it_has():
    with pytest.raises(CaptureError) as info:
        open_capture(io.BytesIO(b"\x00\x01"))
    assert str(info.value) == (
        "<stream>: not a capture file (pcap, pcapng, ERF or gzip of these): first bytes 00 01"
    )


def test_truncated_gzip(tmp_path):
    raw = io.BytesIO()
    with PcapWriter(raw, 1) as w:
        for i in range(200):
            # Incompressible-ish payloads so the cut lands mid-file, not in the trailer.
            w.write(bytes((i * 7 + j * 13) % 251 for j in range(300)), ts_ns=BASE_NS + i)
    plain = raw.getvalue()
    offsets = [24 + i * 316 for i in range(200)]
    packed = gzip.compress(plain, mtime=0)
    path = tmp_path / "cut.pcap.gz"
    path.write_bytes(packed[: len(packed) // 2])
    frames, err = _collect(path)
    k = len(frames)
    assert 0 < k < 200
    assert [f.offset for f in frames] == offsets[:k]
    assert str(err) == (
        f"{path}: record {k} at byte offset {offsets[k]}: gzip data truncated or corrupt "
        "(Compressed file ended before the end-of-stream marker was reached) "
        f"({k} records read)"
    )


def test_gzip_missing_only_its_trailer_fails_after_every_record(tmp_path):
    plain = _pcap_bytes(3)
    path = tmp_path / "no-trailer.pcap.gz"
    path.write_bytes(gzip.compress(plain, mtime=0)[:-8])  # CRC32 + ISIZE gone
    frames, err = _collect(path)
    assert len(frames) == 3
    assert err.offset == len(plain)


def _pcapng(*blocks: bytes) -> bytes:
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        w.add_interface(1)
        for i in range(3):
            w.write(bytes([i]) * 60, ts_ns=BASE_NS + i)
    return buf.getvalue() + b"".join(blocks)


def test_pcapng_block_length_mismatch(tmp_path):
    good = _pcapng()
    epb_len = 32 + 60
    bad = bytearray(good[-epb_len:])
    struct.pack_into("<I", bad, epb_len - 4, 96)  # trailing length says 96, not 92
    path = tmp_path / "mismatch.pcapng"
    path.write_bytes(good + bytes(bad) + good[-epb_len:])
    reason = "Enhanced Packet Block: block length mismatch: 92 at the start, 96 at the end"
    # The last block is a resynchronisation point: it checks out and the file ends there.
    with open_capture(path) as cap:
        assert [f.offset for f in cap] == [
            len(good) - 3 * epb_len, len(good) - 2 * epb_len, len(good) - epb_len,
            len(good) + epb_len]
        assert cap.skipped == [Skipped(3, len(good), epb_len, reason)]
    frames, err = _collect(path, resync=False)
    assert len(frames) == 3
    assert str(err) == f"{path}: record 3 at byte offset {len(good)}: {reason} (3 records read)"


@pytest.mark.parametrize(
    ("total", "reason"),
    [
        (90, "Enhanced Packet Block: total length 90 is not a multiple of 4"),
        (8, "Enhanced Packet Block: total length 8 is too short"),
        ((1 << 26) + 4, "Enhanced Packet Block: total length 67108868 exceeds the "
                        "67108864-byte sanity limit"),
        (4096, "truncated Enhanced Packet Block: 92 of 4096 bytes"),
    ],
)
def test_pcapng_bad_block_lengths(tmp_path, total, reason):
    good = _pcapng()
    bad = bytearray(good[-92:])
    struct.pack_into("<I", bad, 4, total)
    path = tmp_path / "bad.pcapng"
    path.write_bytes(good + bytes(bad))
    frames, err = _collect(path)
    assert len(frames) == 3
    assert str(err) == f"{path}: record 3 at byte offset {len(good)}: {reason} (3 records read)"


def test_pcapng_truncated_block_header_and_unknown_interface(tmp_path):
    good = _pcapng()
    path = tmp_path / "cut.pcapng"
    path.write_bytes(good + b"\x06\x00\x00")
    frames, err = _collect(path)
    assert str(err) == (
        f"{path}: record 3 at byte offset {len(good)}: truncated block header: 3 of 8 bytes "
        "(3 records read)"
    )
    epb = bytearray(good[-92:])
    struct.pack_into("<I", epb, 8, 5)  # interface 5 was never described
    path.write_bytes(good + bytes(epb))
    frames, err = _collect(path)
    assert err.reason == (
        "Enhanced Packet Block: interface 5 is not defined (1 interfaces in this section)"
    )


def test_pcapng_that_does_not_start_with_a_section_header():
    with pytest.raises(CaptureError, match=r"^x: not a pcapng file: first block type 01 00 00 00$"):
        from ibwire.capture import PcapngReader

        PcapngReader(io.BytesIO(b"\x01\x00\x00\x00" + bytes(20)), name="x")


def test_native_erf_bad_rlen(tmp_path):
    good = erf_record(bytes(30), BASE_NS) + erf_record(bytes(30), BASE_NS + 1)
    bad = bytearray(erf_record(bytes(30), BASE_NS + 2))
    struct.pack_into(">H", bad, 10, 0)
    path = tmp_path / "bad.erf"
    path.write_bytes(good + bytes(bad))
    frames, err = _collect(path)
    assert len(frames) == 2
    assert str(err) == (
        f"{path}: record 2 at byte offset 92: ERF rlen 0 is shorter than the 16-byte header "
        "(2 records read)"
    )
    path.write_bytes(good + erf_record(bytes(30), BASE_NS)[:40])
    frames, err = _collect(path)
    assert err.reason == "truncated ERF record body: 24 of 30 bytes"


def test_check_linktype():
    assert check_linktype(247) == "InfiniBand"
    assert check_linktype(Frame(index=0, ts_ns=0, linktype=197, data=b"", wire_len=0)) == "ERF"
    with pytest.raises(UnknownLinkTypeError) as info:
        check_linktype(Frame(index=3, ts_ns=0, linktype=248, data=b"", wire_len=0, offset=1234))
    assert str(info.value) == "unknown link type 248 at record 3 (byte offset 1234)"
    with pytest.raises(UnknownLinkTypeError, match=r"^unknown link type 9$"):
        check_linktype(9)


def test_unknown_link_type_is_not_a_reader_error():
    buf = io.BytesIO()
    with PcapWriter(buf, 4242) as w:
        w.write(b"abc", ts_ns=5)
    (frame,) = open_capture(io.BytesIO(buf.getvalue()))
    assert (frame.linktype, frame.data, frame.ts_ns) == (4242, b"abc", 5)
