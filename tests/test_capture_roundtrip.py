"""Write -> read round trips for pcap, pcapng, native ERF and their gzip forms."""

from __future__ import annotations

import gzip
import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibwire.capture import (
    ErfWriter,
    Frame,
    PcapngWriter,
    PcapReader,
    PcapWriter,
    erf_record,
    open_capture,
    parse_erf_record,
    read_capture,
    write_capture,
)
from ibwire.constants import LINKTYPE_ERF, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND, LINKTYPE_IPOIB

BASE_NS = 1_700_000_000_123_456_789


def _frames(linktype: int = LINKTYPE_ETHERNET, n: int = 5) -> list[Frame]:
    return [
        Frame(
            index=i,
            ts_ns=BASE_NS + i * 1_000_000_007,
            linktype=linktype,
            data=bytes((i + j) & 0xFF for j in range(40 + 7 * i)),
            wire_len=40 + 7 * i + (4 if i == 2 else 0),  # record 2 was snapped
        )
        for i in range(n)
    ]


def _key(frames: list[Frame]) -> list[tuple[int, int, int, bytes, int, int]]:
    return [(f.index, f.ts_ns, f.linktype, f.data, f.wire_len, f.interface) for f in frames]


def _pcap(frames: list[Frame], **kw: object) -> bytes:
    buf = io.BytesIO()
    with PcapWriter(buf, frames[0].linktype, **kw) as w:  # type: ignore[arg-type]
        for f in frames:
            w.write(f)
    return buf.getvalue()


@pytest.mark.parametrize("nanosecond", [True, False])
def test_pcap_round_trip(nanosecond):
    frames = _frames()
    data = _pcap(frames, nanosecond=nanosecond)
    assert data[:4] == (b"\x4d\x3c\xb2\xa1" if nanosecond else b"\xd4\xc3\xb2\xa1")
    back = read_capture(io.BytesIO(data))
    unit = 1 if nanosecond else 1000
    expected = [Frame(f.index, f.ts_ns // unit * unit, f.linktype, f.data, f.wire_len)
                for f in frames]
    assert _key(back) == _key(expected)
    offsets = [24]
    for f in frames[:-1]:
        offsets.append(offsets[-1] + 16 + len(f.data))
    assert [f.offset for f in back] == offsets
    assert _pcap(back, nanosecond=nanosecond) == data  # byte-identical re-write


@pytest.mark.parametrize(("magic", "unit"), [(0xA1B2C3D4, 1000), (0xA1B23C4D, 1)])
def test_pcap_big_endian_file(magic, unit):
    # Crafted by hand, as a big-endian host's libpcap writes it.
    recs = [(1_700_000_000, 999_999, b"\x01\x02\x03"), (1_700_000_001, 5, b"\xff" * 10)]
    blob = struct.pack(">IHHiIII", magic, 2, 4, 0, 0, 65535, LINKTYPE_INFINIBAND)
    for sec, frac, payload in recs:
        blob += struct.pack(">IIII", sec, frac, len(payload), len(payload) + 1) + payload
    reader = PcapReader(io.BytesIO(blob))
    assert (reader.byteorder, reader.snaplen, reader.linktype) == (">", 65535, 247)
    frames = list(reader)
    assert [(f.ts_ns, f.data, f.wire_len, f.linktype) for f in frames] == [
        (1_700_000_000 * 10**9 + 999_999 * unit, b"\x01\x02\x03", 4, 247),
        (1_700_000_001 * 10**9 + 5 * unit, b"\xff" * 10, 11, 247),
    ]
    # Our writer produces the same bytes when asked for big-endian.
    again = _pcap(frames, nanosecond=unit == 1, snaplen=65535, byteorder="big")
    assert again == blob


def test_pcap_linktype_fcs_bits_are_masked():
    # FCS-length-present flag (bit 28) with 2 x 16-bit words of FCS (bits 29-31 = 2).
    network = 0x10000000 | (2 << 29) | LINKTYPE_ETHERNET
    blob = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, network)
    reader = PcapReader(io.BytesIO(blob))
    assert (reader.linktype, reader.fcs_len) == (1, 4)
    assert PcapReader(io.BytesIO(_pcap(_frames()))).fcs_len is None


def test_pcap_writer_checks_its_input():
    with PcapWriter(io.BytesIO(), 1, snaplen=100) as w:
        with pytest.raises(ValueError, match="exceeds snaplen 100"):
            w.write(bytes(101))
        with pytest.raises(ValueError, match="link type 197, this pcap file 1"):
            w.write(Frame(0, 0, 197, b"", 0))
        with pytest.raises(ValueError, match="does not fit a pcap record"):
            w.write(b"", ts_ns=-1)


def _pcapng_multi() -> tuple[bytes, list[Frame]]:
    buf = io.BytesIO()
    eth = _frames(LINKTYPE_ETHERNET, 3)
    erf = [Frame(i, BASE_NS + i, LINKTYPE_ERF, erf_record(bytes(30), BASE_NS + i), 46, 1)
           for i in range(2)]
    ib = _frames(LINKTYPE_INFINIBAND, 2)
    with PcapngWriter(buf) as w:
        assert w.add_interface(LINKTYPE_ETHERNET, name="eth0") == 0
        assert w.add_interface(LINKTYPE_ERF, tsresol_ns=False) == 1
        assert w.add_interface(LINKTYPE_INFINIBAND, tsresol=0x80 | 20) == 2  # 2**-20 s
        w.write(eth[0])
        w.write(erf[0])
        w.write(ib[0], interface=2)
        w.write(eth[1])
        w.write(erf[1])
        w.write(ib[1], interface=2)
        w.write(eth[2])
    return buf.getvalue(), [eth[0], erf[0], ib[0], eth[1], erf[1], ib[1], eth[2]]


def test_pcapng_multi_interface_round_trip():
    data, written = _pcapng_multi()
    with open_capture(io.BytesIO(data)) as cap:
        assert cap.format == "pcapng"
        back = list(cap)
        ifaces = cap.reader.interfaces
    assert [(i.linktype, i.units_per_second, i.name) for i in ifaces] == [
        (1, 10**9, "eth0"), (197, 10**6, None), (247, 2**20, None)
    ]
    assert [f.index for f in back] == list(range(7))
    assert [(f.linktype, f.interface) for f in back] == [
        (1, 0), (197, 1), (247, 2), (1, 0), (197, 1), (247, 2), (1, 0)
    ]
    assert [f.data for f in back] == [f.data for f in written]
    assert [f.wire_len for f in back] == [f.wire_len for f in written]
    # ns interface exact; us interface truncated; 2**-20 s truncated to a tick (953.7 ns).
    for w, b in zip(written, back):
        if w.linktype == LINKTYPE_ERF:
            assert b.ts_ns == w.ts_ns // 1000 * 1000
        elif w.linktype == LINKTYPE_INFINIBAND:
            assert 0 <= w.ts_ns - b.ts_ns < 954
            tick = -(-b.ts_ns * 2**20 // 10**9)  # ceil: the tick b.ts_ns came from
            assert tick * 10**9 // 2**20 == b.ts_ns
        else:
            assert b.ts_ns == w.ts_ns
    assert back[2].ts_ns != written[2].ts_ns  # the coarse resolution really truncated
    # Re-writing with the same interfaces is byte-identical.
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        w.add_interface(LINKTYPE_ETHERNET, name="eth0")
        w.add_interface(LINKTYPE_ERF, tsresol_ns=False)
        w.add_interface(LINKTYPE_INFINIBAND, tsresol=0x80 | 20)
        for f in back:
            w.write(f)
    assert buf.getvalue() == data


def test_pcapng_writer_checks_interfaces():
    with PcapngWriter(io.BytesIO()) as w:
        with pytest.raises(ValueError, match="interface 0 was not added"):
            w.write(b"x")
        w.add_interface(LINKTYPE_ETHERNET)
        with pytest.raises(ValueError, match="link type 247, interface 0 1"):
            w.write(Frame(0, 0, LINKTYPE_INFINIBAND, b"", 0))


def test_native_erf_round_trip():
    records = [erf_record(bytes([i]) * (20 + i), BASE_NS + i * 999, erf_type=21 + 4 * (i % 2),
                          cap=i % 4, pad=bool(i % 3)) for i in range(6)]
    buf = io.BytesIO()
    with ErfWriter(buf) as w:
        for r in records:
            w.write(r)
    back = read_capture(io.BytesIO(buf.getvalue()))
    assert [f.data for f in back] == records
    assert [f.ts_ns for f in back] == [BASE_NS + i * 999 for i in range(6)]
    assert [parse_erf_record(f.data).payload for f in back] == [
        bytes([i]) * (20 + i) for i in range(6)
    ]


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "erf"])
def test_gzip_round_trip_matches_plain(tmp_path, fmt):
    if fmt == "erf":
        frames = [Frame(i, BASE_NS + i, LINKTYPE_ERF, erf_record(bytes(30 + i), BASE_NS + i),
                        46 + i) for i in range(4)]
    else:
        frames = _frames()
    plain = tmp_path / f"x.{fmt}"
    packed = tmp_path / f"x.{fmt}.gz"
    assert write_capture(plain, frames, fmt=fmt) == len(frames)
    assert write_capture(packed, frames, fmt=fmt) == len(frames)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    with open_capture(packed) as cap:
        assert (cap.format, cap.compressed) == (fmt, True)
        from_gz = list(cap)
    assert _key(from_gz) == _key(read_capture(plain)) == _key(frames)
    assert [f.offset for f in from_gz] == [f.offset for f in read_capture(plain)]
    # Same frames, same bytes: the gzip header carries no time or name.
    again = tmp_path / f"y.{fmt}.gz"
    write_capture(again, from_gz, fmt=fmt)
    assert again.read_bytes() == packed.read_bytes()


def test_write_capture_pcap_needs_one_linktype(tmp_path):
    mixed = _frames() + [Frame(5, BASE_NS, LINKTYPE_IPOIB, b"x", 1)]
    with pytest.raises(ValueError, match="link type 242, this pcap file 1"):
        write_capture(tmp_path / "m.pcap", mixed)
    with pytest.raises(ValueError, match="explicit linktype"):
        write_capture(tmp_path / "e.pcap", [])
    assert write_capture(tmp_path / "e.pcap", [], linktype=LINKTYPE_INFINIBAND) == 0
    with open_capture(tmp_path / "e.pcap") as cap:
        assert cap.reader.linktype == 247 and list(cap) == []
    n = write_capture(tmp_path / "m.pcapng", mixed, fmt="pcapng")
    assert n == 6
    assert [(f.linktype, f.interface) for f in read_capture(tmp_path / "m.pcapng")] == (
        [(1, 0)] * 5 + [(242, 1)]
    )


class _Trickle:
    """A pipe-like stream: no seek, short reads, and a count of bytes handed out."""

    def __init__(self, data: bytes) -> None:
        self._data, self.consumed = data, 0

    def read(self, n: int = -1) -> bytes:
        n = 7 if n < 0 else min(n, 7)
        out = self._data[self.consumed:self.consumed + n]
        self.consumed += len(out)
        return out


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "erf"])
def test_readers_stream_record_by_record(tmp_path, fmt):
    if fmt == "erf":
        frames = [Frame(i, BASE_NS, LINKTYPE_ERF, erf_record(bytes(1000), BASE_NS), 1016)
                  for i in range(300)]
    else:
        frames = [Frame(i, BASE_NS + i, 1, bytes(1000), 1000) for i in range(300)]
    path = tmp_path / f"big.{fmt}"
    write_capture(path, frames, fmt=fmt)
    stream = _Trickle(path.read_bytes())
    cap = open_capture(stream)
    first = next(cap)
    assert first.index == 0
    # Only the file header and the first record (plus a peek) were read, not 300 KB.
    assert stream.consumed < 1200
    rest = list(cap)
    assert len(rest) == 299 and stream.consumed == len(path.read_bytes())


# --- Hypothesis: random frames written then read back are equal -------------------------

_TS = st.integers(min_value=0, max_value=(1 << 32) * 10**9 - 1)
_DATA = st.binary(max_size=300)
# ERF (197) frames are excluded: in pcap their time comes from the ERF header.
_LT = st.sampled_from([1, 101, 113, 242, 247, 276, 4242])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_DATA, _TS), max_size=8), _LT)
def test_property_pcap_ns(items, linktype):
    frames = [Frame(i, ts, linktype, d, len(d) + i) for i, (d, ts) in enumerate(items)]
    buf = io.BytesIO()
    with PcapWriter(buf, linktype) as w:
        for f in frames:
            w.write(f)
    back = read_capture(io.BytesIO(buf.getvalue())) if frames else []
    assert _key(back) == _key(frames)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_DATA, _TS, st.sampled_from([1, 197, 247, 242, 65535])), max_size=8))
def test_property_pcapng(items):
    frames = []
    ids: dict[int, int] = {}
    buf = io.BytesIO()
    with PcapngWriter(buf) as w:
        for i, (d, ts, lt) in enumerate(items):
            if lt not in ids:
                ids[lt] = w.add_interface(lt)
            f = Frame(i, ts, lt, d, len(d), ids[lt])
            frames.append(f)
            w.write(f)
    assert _key(read_capture(io.BytesIO(buf.getvalue()))) == _key(frames)


_YEAR_NS = 365 * 86_400 * 10**9


@settings(max_examples=60, deadline=None)
@given(st.integers(0, (1 << 32) * 10**9 - 1 - _YEAR_NS),
       st.lists(st.tuples(st.binary(max_size=4000), st.integers(0, _YEAR_NS),
                          st.sampled_from([21, 25]), st.integers(0, 3), st.booleans()),
                max_size=8))
def test_property_erf(base, items):
    # Times in order within a year: a native ERF reader takes a bigger jump, or one back
    # by more than a second, as a sign of damage (see test_capture_resync.py).
    items = [(payload, base + t, *rest) for payload, t, *rest in
             sorted(items, key=lambda item: item[1])]
    buf = io.BytesIO()
    with ErfWriter(buf) as w:
        for payload, ts, erf_type, cap, pad in items:
            w.write_payload(payload, ts, erf_type=erf_type, cap=cap, pad=pad)
    # Random timestamps would not pass the format sniffer; use the ERF reader directly.
    from ibwire.capture import ErfReader

    back = list(ErfReader(io.BytesIO(buf.getvalue())))
    assert [(f.index, f.ts_ns, f.linktype) for f in back] == [
        (i, ts, LINKTYPE_ERF) for i, (_, ts, *_rest) in enumerate(items)
    ]
    parsed = [parse_erf_record(f.data) for f in back]
    assert [(p.payload, p.type, p.cap, p.problems) for p in parsed] == [
        (payload, erf_type, cap, []) for payload, _, erf_type, cap, _ in items
    ]
