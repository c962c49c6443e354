"""Stepping over damage (``resync=``, ``Skipped``, ``.skipped``) and bounded memory.

The per-format damage cases with exact expectations are in test_hostile_captures.py;
here: the API, the two-in-a-row rule, the scan window, gzip and pipes, several damaged
regions, ERF timestamps out of step, and memory against the file's size.
"""

from __future__ import annotations

import gzip
import io
import struct
import time
import tracemalloc
from pathlib import Path

import pytest

from ibwire.capture import (
    CaptureError,
    ErfReader,
    PcapngReader,
    PcapngWriter,
    PcapReader,
    PcapWriter,
    Skipped,
    erf_record,
    open_capture,
    read_capture,
)
from ibwire.capture._resync import RESYNC_WINDOW

BASE_NS = 1_700_000_000_000_000_000
REC = 16 + 60  # one pcap record of _pcap()


def _pcap(n: int, nanosecond: bool = False) -> bytes:
    buf = io.BytesIO()
    with PcapWriter(buf, 1, nanosecond=nanosecond) as w:
        for i in range(n):
            w.write(bytes([i]) * 60, ts_ns=BASE_NS + i * 1000)
    return buf.getvalue()


def _damage(data: bytes, record: int, value: int = 0xFFFFFFFF) -> bytes:
    """The pcap with record `record`'s incl_len set to `value`."""
    out = bytearray(data)
    struct.pack_into("<I", out, 24 + record * REC + 8, value)
    return bytes(out)


def _read(obj, **kw) -> tuple[list[int | None], list[Skipped]]:
    """(each frame's last byte -- the packet's number here -- or None, skipped)."""
    with open_capture(obj, **kw) as cap:
        firsts = [f.data[-1] if f.data else None for f in cap]
        return firsts, cap.skipped


class _Pipe:
    """A stream with nothing but read(): no seek, no tell, no fileno."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._f.read(min(n, 7) if n > 0 else n)  # short reads, like a pipe


# -- the API -----------------------------------------------------------------------------
def test_skipped_is_listed_and_resync_false_raises_as_before(tmp_path: Path):
    path = tmp_path / "bad.pcap"
    path.write_bytes(_damage(_pcap(10), 4))
    reason = "record length 4294967295 exceeds snaplen 262144"
    with open_capture(path) as cap:
        assert cap.skipped == []  # nothing read yet
        firsts = [f.data[-1] for f in cap]
        assert cap.skipped is cap.reader.skipped
        assert cap.skipped == [Skipped(index=4, offset=24 + 4 * REC, length=REC, reason=reason)]
    assert firsts == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    with pytest.raises(CaptureError) as info, open_capture(path, resync=False) as cap:
        list(cap)
    assert str(info.value) == (f"{path}: record 4 at byte offset {24 + 4 * REC}: {reason} "
                               "(4 records read)")
    # read_capture returns a bare list, with nowhere to say what it skipped: strict.
    with pytest.raises(CaptureError):
        read_capture(path)


@pytest.mark.parametrize("reader", [PcapReader, PcapngReader, ErfReader])
def test_readers_take_resync(reader):
    data = {PcapReader: _pcap(2), ErfReader: erf_record(bytes(8), BASE_NS)}.get(reader)
    if data is None:
        buf = io.BytesIO()
        with PcapngWriter(buf) as w:
            w.add_interface(1)
        data = buf.getvalue()
    r = reader(io.BytesIO(data), resync=False)
    assert (r.resync, r.skipped) == (False, [])
    list(r)
    assert reader(io.BytesIO(data)).resync is True


def test_several_damaged_regions_each_get_an_entry():
    data = _damage(_damage(_pcap(20), 3), 11, 300000)
    firsts, skipped = _read(io.BytesIO(data))
    assert firsts == [i for i in range(20) if i not in (3, 11)]
    assert skipped == [
        Skipped(3, 24 + 3 * REC, REC, "record length 4294967295 exceeds snaplen 262144"),
        Skipped(10, 24 + 11 * REC, REC, "record length 300000 exceeds snaplen 262144")]


def test_resync_works_on_gzip_and_pipes(tmp_path: Path):
    data = _damage(_pcap(10, nanosecond=True), 6)
    want = ([0, 1, 2, 3, 4, 5, 7, 8, 9],
            [Skipped(6, 24 + 6 * REC, REC, "record length 4294967295 exceeds snaplen 262144")])
    path = tmp_path / "bad.pcap.gz"
    path.write_bytes(gzip.compress(data, mtime=0))
    assert _read(path) == want
    assert _read(_Pipe(data)) == want
    assert _read(_Pipe(gzip.compress(data, mtime=0))) == want


# -- the two-in-a-row rule and the window ------------------------------------------------
def test_a_lone_record_look_alike_is_not_a_resynchronisation_point():
    """Inside the damaged region, a valid-looking header whose successor is garbage."""
    good = _pcap(3)
    fake = struct.pack("<IIII", 1_700_000_000, 5, 20, 20) + b"\xff" * 20 + b"\xee" * 30
    bad = struct.pack("<IIII", 0, 0, 0xFFFFFFFF, 60) + fake
    data = good + bad + _pcap(6)[24 + 3 * REC:]
    firsts, skipped = _read(io.BytesIO(data))
    assert firsts == [0, 1, 2, 3, 4, 5]
    assert skipped == [Skipped(3, len(good), len(bad),
                               "record length 4294967295 exceeds snaplen 262144")]


@pytest.mark.parametrize("gap, resyncs", [(RESYNC_WINDOW - 200, True),
                                          (RESYNC_WINDOW + 10, False)])
def test_the_scan_looks_one_mib_ahead(gap: int, resyncs: bool):
    good = _pcap(3)
    bad = struct.pack("<IIII", 0, 0, 0xFFFFFFFF, 60) + b"\xaa" * (gap - 16)
    data = good + bad + _pcap(6)[24 + 3 * REC:]
    reason = "record length 4294967295 exceeds snaplen 262144"
    if resyncs:
        assert _read(io.BytesIO(data)) == ([0, 1, 2, 3, 4, 5], [Skipped(3, len(good), gap,
                                                                         reason)])
    else:
        with pytest.raises(CaptureError, match=f"record 3 at byte offset {len(good)}: "
                                               f"{reason}"):
            _read(io.BytesIO(data))


@pytest.mark.parametrize("garbage", [b"\x06\x00\x00\x00", bytes(4), b"\x00\x00\x06\x00"])
def test_a_scan_through_a_mib_of_look_alikes_is_quick(garbage: bytes):
    """Every offset passes the pre-filter (for pcapng's EPB type), none the check."""
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        w.add_interface(1)
        w.write(bytes(60), ts_ns=BASE_NS)
    data = buf.getvalue() + struct.pack("<II", 6, 7) + garbage * (RESYNC_WINDOW // 4)
    t0 = time.perf_counter()
    with pytest.raises(CaptureError, match="total length 7 is too short"):
        _read(io.BytesIO(data))
    assert time.perf_counter() - t0 < 2.0


# -- pcap: what it can and cannot tell ---------------------------------------------------
def test_pcap_zeroed_region_reads_as_empty_records_then_resynchronises():
    """Zeros are a valid empty record (ts 0) every 16 bytes, as in Wireshark; the record
    cut by the zeros then has a garbage length, and the scan (whose time reference is
    the last record with data) finds the records after it."""
    data = bytearray(_pcap(10))
    start = 24 + 4 * REC
    data[start:start + 100] = bytes(100)  # records 4 and 5 partly
    firsts, skipped = _read(io.BytesIO(bytes(data)))
    empty = 100 // 16
    assert firsts == [0, 1, 2, 3] + [None] * empty + [6, 7, 8, 9]
    garbage = int.from_bytes(bytes([5]) * 4, "little")  # packet 5's bytes as incl_len
    assert skipped == [Skipped(4 + empty, start + 16 * empty, 2 * REC - 16 * empty,
                               f"record length {garbage} exceeds snaplen 262144")]


# -- ERF timestamps ----------------------------------------------------------------------
def _erf(n: int, base: int = BASE_NS) -> bytes:
    return b"".join(erf_record(bytes([i]) * 40, base + i * 1000) for i in range(n))


def test_erf_files_put_end_to_end_read_whole():
    """A jump of years (either way) is fine when the record after it follows on."""
    data = _erf(3) + _erf(3, BASE_NS - 10 * 365 * 86_400 * 10**9) + _erf(2, BASE_NS)
    with open_capture(io.BytesIO(data)) as cap:
        assert len(list(cap)) == 8 and cap.skipped == []


def test_erf_record_out_of_step_with_both_neighbours_is_skipped():
    bad = erf_record(bytes([9]) * 40, BASE_NS + 400 * 86_400 * 10**9)
    data = _erf(3) + bad + _erf(5)[3 * 56:]
    firsts, skipped = _read(io.BytesIO(data))
    reason = (f"ERF timestamp {(BASE_NS // 10**9) + 400 * 86_400} s is out of step with "
              f"the previous record's {BASE_NS // 10**9} s")
    assert firsts == [0, 1, 2, 3, 4] and skipped == [Skipped(3, 3 * 56, 56, reason)]
    with pytest.raises(CaptureError, match=f"record 3 at byte offset 168: {reason}"):
        _read(io.BytesIO(data), resync=False)


def test_erf_type_0_is_damage():
    bad = bytearray(erf_record(bytes(40), BASE_NS + 3000))
    bad[8] = 0
    data = _erf(3) + bytes(bad) + _erf(5)[4 * 56:]
    firsts, skipped = _read(io.BytesIO(data))
    assert firsts == [0, 1, 2, 4] and skipped == [
        Skipped(3, 168, 56, "ERF type 0 (legacy) is not a record this reader knows")]


# -- pcapng: a new section ---------------------------------------------------------------
def test_pcapng_resynchronises_on_a_section_header_of_the_other_byte_order():
    le = io.BytesIO()
    with PcapngWriter(le) as w:
        w.add_interface(1)
        for i in range(3):
            w.write(bytes([i]) * 60, ts_ns=BASE_NS + i)
    # A big-endian section: SHB, IDB, two EPBs.
    be = [struct.pack(">IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack(">I", 28),
          struct.pack(">IIHHII", 1, 20, 1, 0, 0, 20)]
    for i in (7, 8):
        body = struct.pack(">5I", 0, 0, i, 60, 60) + bytes([i]) * 60
        be.append(struct.pack(">II", 6, 12 + len(body)) + body + struct.pack(">I", 12 + len(body)))
    data = bytearray(le.getvalue())
    struct.pack_into("<I", data, len(data) - 4, 1)  # the last LE EPB's trailer
    firsts, skipped = _read(io.BytesIO(bytes(data) + b"".join(be)))
    assert firsts == [0, 1, 7, 8]
    assert skipped == [Skipped(2, len(data) - 92, 92, "Enhanced Packet Block: block length "
                               "mismatch: 92 at the start, 1 at the end")]


# -- memory: what the file holds, not what a length claims -------------------------------
def _pcap_64mib() -> bytes:
    """104 bytes: snaplen and the one record's incl_len at 64 MiB - 4."""
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0xFFFFFFFF, 1)
    return head + struct.pack("<IIII", 1_700_000_000, 0, (1 << 26) - 4, 60) + bytes(64)


def _pcapng_64mib() -> bytes:
    """About 1.5 KB: twelve EPBs, the fourth with a block length of 64 MiB - 4."""
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        w.add_interface(1)
        for i in range(12):
            w.write(bytes([i]) * 90, ts_ns=BASE_NS + i)
    data = bytearray(buf.getvalue())
    struct.pack_into("<I", data, 28 + 20 + 3 * 124 + 4, (1 << 26) - 4)
    return bytes(data)


@pytest.mark.parametrize("make", [_pcap_64mib, _pcapng_64mib])
@pytest.mark.parametrize("how", ["file", "gzip", "pipe"])
def test_a_64_mib_length_costs_the_file_not_64_mib(tmp_path: Path, make, how: str):
    """Measured: about 73 KB for a file (one 64 KiB chunk), 130 KB for gzip (its own
    buffers add 64 KB), a few KB for a pipe; 67 MB before reads were chunked."""
    data = make()
    if how == "pipe":
        obj: object = _Pipe(data)
    else:
        obj = tmp_path / "x.cap"
        obj.write_bytes(gzip.compress(data, mtime=0) if how == "gzip" else data)
    tracemalloc.start()
    try:
        _read(obj)
    except CaptureError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < len(data) + 200_000, peak
