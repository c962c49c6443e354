"""Bulk engines (issue 12): columns equal the per-packet decode on every capture, the
Numba kernels equal their plain-Python twins, damaged and mutated files included."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import PCAPS, capture_params
from engine_compare import compare
from fuzz_strategies import apply_ops, build_capture, capture_seeds, packet_seeds, seed_ops
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capture_pcapng import _mixed_file

import ibwire
from ibwire.capture import read_capture, write_capture
from ibwire.engines import scan_kernels as K
from ibwire.engines.columns import column_names
from ibwire.engines.crc_kernels import HAVE_LIB, ICRC, LPCRC, VCRC, check_crcs, crc_arrays
from ibwire.engines.extract import Plan, extract
from ibwire.engines.place import N_INFO, place
from ibwire.engines.scan import batches
from ibwire.engines.tables import (
    CRC16_T,
    CRC32_T,
    CRC_TMPL,
    CRC_TMPL_LEN,
    FIELD_ROWS,
    N_LAYERS,
    kernel_tables,
)
from ibwire.gen.bulk import BulkConfig, bulk_write

LINKTYPE_OF = {"eth": 1, 1: 1, "ib": 247, 247: 247, "erf": 197, 197: 197, "ip": 101}


def _same(path: Path, **kw) -> tuple[int, int]:
    frames, handed, diffs = compare(path, **kw)
    assert not diffs, "\n".join(diffs[:20])
    return frames, handed


@pytest.mark.parametrize("path", capture_params())
def test_shared_captures_equal_the_decoder(path):
    frames, handed = _same(path)
    assert frames > 0
    if path.parent.name == "mad":  # MADs are the decoder's: handed over, then equal
        assert handed == frames
        _same(path, fallback_decode=True)


def test_six_byte_infiniband_record_is_a_link_packet(tmp_path):
    """LINKTYPE_INFINIBAND carries data and link packets unmarked; six bytes can only be
    a link packet (the decoder's rule; Hypothesis found the kernel calling it a cut LRH)."""
    link = bytes.fromhex("00020002000a")
    path = tmp_path / "link6.pcap"
    write_capture(path, [ibwire.capture.Frame(0, 0, 247, link, len(link))], fmt="pcap",
                  linktype=247)
    frames, handed = _same(path)
    assert (frames, handed) == (1, 0)
    cols = ibwire.columns(path, fields=["infiniband_link.op", "infiniband_link.fctbs"])
    assert cols.column("infiniband_link.fctbs").to_pylist() == [2]


@pytest.mark.parametrize("path", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.name)
def test_sample_captures_equal_the_decoder(path):
    _same(path)
    _same(path, fallback_decode=True, chunk=50)


@pytest.mark.parametrize("encap", ["roce2", "roce2-v6", "roce1", "ib", "ib-grh"])
def test_generated_captures_all_formats(tmp_path, encap):
    src = tmp_path / "g.pcap"
    bulk_write(str(src), BulkConfig(encap=encap, packets=600, msg_pkts=3, pmtu=256))
    frames, handed = _same(src, chunk=128)
    assert frames == 600 and handed == 0
    recs = read_capture(src)
    for fmt in ("pcapng", "erf") if recs[0].linktype == 197 else ("pcapng",):
        out = tmp_path / f"g.{fmt}"
        write_capture(out, recs, fmt=fmt)
        assert _same(out, chunk=100) == (600, 0)
    gz = tmp_path / "g.pcap.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert _same(gz, chunk=64) == (600, 0)


def test_capture_seeds_every_format_and_opcode(tmp_path):
    """pcap (us/ns, both byte orders), pcapng both orders, native ERF: every valid opcode
    on every encapsulation, MADs and the test vectors."""
    for k, seed in enumerate(capture_seeds()):
        path = tmp_path / f"s{k}"
        path.write_bytes(seed.data)
        _same(path, chunk=5)
        if k % 7 == 0:
            _same(path, fallback_decode=True)


def test_pcapng_sections_interfaces_resolutions(tmp_path):
    path = tmp_path / "mixed.pcapng"
    path.write_bytes(_mixed_file())
    assert _same(path)[0] == 6
    _same(path, fallback_decode=True)


def test_truncated_and_damaged_files(tmp_path):
    src = tmp_path / "g.pcap"
    bulk_write(str(src), BulkConfig(encap="roce2", packets=300))
    data = src.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) - 37])          # the last record cut short
    _same(cut, chunk=64)
    bad = bytearray(data)
    bad[24 + 8:24 + 12] = struct.pack("<I", 1 << 30)  # first record length is garbage
    broken = tmp_path / "broken.pcap"
    broken.write_bytes(bytes(bad))
    _same(broken, chunk=64)
    gz = tmp_path / "cut.pcap.gz"
    gz.write_bytes(gzip.compress(data)[:-200])        # gzip stream cut short
    _same(gz, chunk=64)


def test_snaplen_cut_frames(tmp_path):
    """Frames captured short (every layer boundary): handed over, equal to the decoder."""
    frames = [s.data for s in packet_seeds(False) if s.encap == "eth"][:40]
    short = [f[:n] for f in frames for n in (10, 14, 30, 42, 50, 54, 58, len(f) - 3)]
    path = tmp_path / "short.pcap"
    path.write_bytes(build_capture("pcap-le-ns", short, 1).data)
    _same(path, chunk=33)
    _same(path, fallback_decode=True)


PACKETS = [s for s in packet_seeds(False) if s.encap in LINKTYPE_OF]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.deferred(lambda: seed_ops(PACKETS)))
def test_hypothesis_mutated_packets(tmp_path_factory, drawn):
    seed, ops = drawn
    data = apply_ops(seed, ops)
    path = tmp_path_factory.mktemp("h") / "m.pcap"
    path.write_bytes(build_capture("pcap-le-us", [data, seed.data], LINKTYPE_OF[seed.encap]).data)
    _same(path)
    _same(path, fallback_decode=True)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.deferred(lambda: seed_ops(capture_seeds())))
def test_hypothesis_mutated_capture_files(tmp_path_factory, drawn):
    seed, ops = drawn
    path = tmp_path_factory.mktemp("c") / "m.cap"
    path.write_bytes(apply_ops(seed, ops))
    _same(path, chunk=4)  # same frames, and the same CaptureError where the reader stops


# -- twins ------------------------------------------------------------------------
def _batch(tmp_path: Path):
    seeds = [s for s in capture_seeds() if s.encap in ("pcap-le-ns", "pcapng-be", "erf")]
    out = []
    for k, seed in enumerate(seeds[:12]):
        p = tmp_path / f"t{k}"
        p.write_bytes(seed.data)
        out += list(batches(p))
    return out


def test_kernels_equal_their_python_twins(tmp_path):
    tables = kernel_tables()
    for b in _batch(tmp_path):
        n = len(b)
        results = []
        for fn in (place, place.py_func):
            lo, info = np.empty((N_LAYERS, n), np.int32), np.empty((N_INFO, n), np.int32)
            fn(b.buf, b.doff, b.cap, b.lt, lo, info, *tables)
            results.append((lo, info))
        assert np.array_equal(results[0][0], results[1][0])
        assert np.array_equal(results[0][1], results[1][1])
        lo, info = results[0]
        plan = Plan(list(FIELD_ROWS))
        outs = [[np.zeros((max(c, 1), n * (16 if k == 4 else 1)), dtype=d)
                 for k, (c, d) in enumerate(zip(plan.counts, (np.uint8, np.uint16, np.uint32,
                                                              np.uint64, np.uint8)))]
                for _ in range(2)]
        extract(b.buf, b.doff, lo, plan.rows, *outs[0])
        extract.py_func(b.buf, b.doff, lo, plan.rows, *outs[1])
        assert all(np.array_equal(x, y) for x, y in zip(*outs))
        crcs = [crc_arrays(n), crc_arrays(n)]
        check_crcs(b.buf, b.doff, lo, info, CRC_TMPL, CRC_TMPL_LEN, CRC32_T, CRC16_T,
                   *crcs[0], ICRC | VCRC | LPCRC, HAVE_LIB)
        check_crcs.py_func(b.buf, b.doff, lo, info, CRC_TMPL, CRC_TMPL_LEN, CRC32_T, CRC16_T,
                           *crcs[1], ICRC | VCRC | LPCRC, False)
        assert all(np.array_equal(x, y) for x, y in zip(*crcs))


def test_scan_kernels_equal_their_twins(tmp_path, monkeypatch):
    """Every record kernel (pcap, pcapng, ERF) against its twin, on every file kind."""
    paths = []
    for k, seed in enumerate(capture_seeds()[::5]):
        paths.append(tmp_path / f"s{k}")
        paths[-1].write_bytes(seed.data)
    paths.append(tmp_path / "mixed.pcapng")
    paths[-1].write_bytes(_mixed_file())

    def records(path):
        return [tuple(np.asarray(a).tolist() for a in (b.doff, b.cap, b.wire, b.ts, b.lt,
                                                        b.ifc, b.roff)) for b in batches(path, 3)]
    kernels = [records(p) for p in paths]
    for name in ("scan_pcap", "scan_pcapng", "scan_erf"):
        monkeypatch.setattr(K, name, getattr(K, name).py_func)
    assert [records(p) for p in paths] == kernels
    assert sum(len(r[0]) for rs in kernels for r in rs) > 100


# -- the public API ---------------------------------------------------------------
def test_columns_api(tmp_path):
    path = PCAPS / "rc_corrupt_ib_grh.pcap"
    t = ibwire.columns(path, ["frame.number", "infiniband.bth.psn", "infiniband.grh.sgid",
                              "infiniband.aeth.syndrome.credit_count", "ip.src",
                              "infiniband.invariant.crc.status", "ibwire.payload.offset"])
    assert t.schema.field("infiniband.bth.psn").type == pa.uint32()
    assert t.schema.field("infiniband.grh.sgid").type == pa.binary(16)
    assert t.column("ip.src").null_count == t.num_rows          # native IB: no IP
    pkts = list(ibwire.read(path))
    assert t.column("infiniband.bth.psn").to_pylist() == [p.get("infiniband.bth.psn")
                                                           for p in pkts]
    assert t.column("infiniband.aeth.syndrome.credit_count").to_pylist() == [
        p.get("infiniband.aeth.syndrome.credit_count") for p in pkts]
    bad = t.column("infiniband.invariant.crc.status").to_numpy() == ibwire.CrcStatus.BAD
    assert bad.sum() == sum(p.icrc_status == ibwire.CrcStatus.BAD for p in pkts) > 0
    tables = list(ibwire.iter_columns(path, ["frame.number"], chunk=10))
    assert sum(x.num_rows for x in tables) == len(pkts) and len(tables) > 1
    assert set(ibwire.columns(path).column_names) == set(column_names())
    with pytest.raises(ValueError, match="not a column field"):
        ibwire.columns(path, ["infiniband.mad.attributename"])


@pytest.mark.parametrize("data", [b"\x1f\x8b", b"\x1f\x8b\x08", b"\x1f\x8b\x08\x00\x00"])
def test_gzip_too_short_for_its_header_gives_the_readers_error(tmp_path, data):
    """The engine hands such a file to the streaming reader: the same CaptureError."""
    from ibwire.capture import CaptureError, open_capture
    p = tmp_path / "tiny.pcap.gz"
    p.write_bytes(data)
    with pytest.raises(CaptureError) as want:
        with open_capture(p) as frames:
            list(frames)
    with pytest.raises(CaptureError) as got:
        ibwire.columns(p)
    assert str(got.value) == str(want.value)
