"""The RC and credit analyses' bulk-built columns equal their per-packet twins:
every column, every value, dtype and the endpoint label table, on every capture."""

from __future__ import annotations

import functools
import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import PCAPS, capture_params
from fuzz_strategies import apply_ops, build_capture, capture_seeds, packet_seeds, seed_ops
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_common import run_cli

from ibwire.analysis import bulk_input
from ibwire.analysis.credit_input import credit_columns, credit_columns_per_packet
from ibwire.analysis.rc_input import ENDPOINTS, rc_columns, rc_columns_per_packet
from ibwire.capture import CaptureError
from ibwire.engines.columns import iter_chunks
from ibwire.gen.bulk import BulkConfig, bulk_write

LINKTYPE_OF = {"eth": 1, "ib": 247, "erf": 197}


def _equal(got: dict, want: dict, where: str) -> None:
    assert list(got) == list(want), where
    for name in want:
        assert got[name].dtype == want[name].dtype, (where, name)
        bad = np.flatnonzero(got[name] != want[name])
        assert len(got[name]) == len(want[name]) and not len(bad), (
            where, name, bad[:5], got[name][bad[:5]], want[name][bad[:5]])


def _outcome(fn, path):
    try:
        return fn(path), None
    except CaptureError as exc:
        return None, str(exc)


def _same(path: Path | str) -> int:
    """Both analyses' columns equal (strict: the same error; lenient: the same rows)."""
    for bulk, twin in ((rc_columns, rc_columns_per_packet),
                       (credit_columns, credit_columns_per_packet)):
        (got, got_err), (want, want_err) = _outcome(bulk, path), _outcome(twin, path)
        assert got_err == want_err, (path, bulk.__name__)
        if want is not None:
            _equal(got, want, f"{path} {bulk.__name__}")
        _equal(bulk(path, strict=False), twin(path, strict=False), f"{path} lenient")
    return len(rc_columns(path, strict=False)["frame.number"])


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 7 frames: labels and rows carried across many chunk boundaries."""
    monkeypatch.setattr(bulk_input, "iter_chunks", functools.partial(iter_chunks, chunk=7))


@pytest.mark.parametrize("path", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.name)
def test_samples(path, small_chunks):
    assert _same(path) > 0


@pytest.mark.parametrize("path", capture_params())
def test_shared_captures(path):
    assert _same(path) > 0


def test_endpoint_labels_on_samples():
    """The label table is the per-packet one (first use order), not just equal ids."""
    cols = rc_columns(PCAPS / "rc_corrupt_ib_grh.pcap")
    assert cols[ENDPOINTS][0].startswith("fe80::")
    roce = rc_columns(PCAPS / "rc_loss_roce2.pcap")
    assert list(roce[ENDPOINTS]) == list(rc_columns_per_packet(
        PCAPS / "rc_loss_roce2.pcap")[ENDPOINTS])
    assert all(label.count(".") == 3 for label in roce[ENDPOINTS])


@pytest.mark.parametrize("encap", ["roce2", "roce2-v6", "roce1", "ib", "ib-grh"])
def test_generated(tmp_path, encap, small_chunks):
    src = tmp_path / "g.pcap"
    bulk_write(str(src), BulkConfig(encap=encap, packets=300, msg_pkts=3, pmtu=256))
    assert _same(src) == 300
    gz = tmp_path / "g.pcap.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert _same(gz) == 300


def test_truncated_and_damaged_files(tmp_path):
    src = tmp_path / "g.pcap"
    bulk_write(str(src), BulkConfig(encap="roce2", packets=200))
    data = src.read_bytes()
    bad = bytearray(data)
    bad[24 + 8:24 + 12] = struct.pack("<I", 1 << 30)    # first record length is garbage
    damaged = {"cut.pcap": data[:len(data) - 37],          # the last record cut short
               "broken.pcap": bytes(bad),
               "cut.pcap.gz": gzip.compress(data)[:-200],  # gzip stream cut short
               "tiny.pcap.gz": gzip.compress(data)[:12]}   # gzip too short for a header
    for name, blob in damaged.items():
        path = tmp_path / name
        path.write_bytes(blob)
        _same(path)
    assert len(rc_columns(tmp_path / "cut.pcap", strict=False)["frame.number"]) == 199


def test_snaplen_cut_frames(tmp_path, small_chunks):
    """Frames captured short at every layer boundary (malformed, decoded per packet)."""
    for encap, lt in LINKTYPE_OF.items():
        frames = [s.data for s in packet_seeds(False) if s.encap == encap][:25]
        short = [f[:n] for f in frames for n in (6, 10, 14, 20, 30, 42, 50, 58, len(f) - 3)]
        path = tmp_path / f"short-{encap}.pcap"
        path.write_bytes(build_capture("pcap-le-ns", short, lt).data)
        assert _same(path) == len(short)


def test_capture_seeds_every_format_opcode_and_mad(tmp_path):
    for k, seed in enumerate(capture_seeds()):
        path = tmp_path / f"s{k}"
        path.write_bytes(seed.data)
        _same(path)


PACKETS = [s for s in packet_seeds(False) if s.encap in LINKTYPE_OF]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.deferred(lambda: seed_ops(PACKETS)))
def test_hypothesis_mutated_packets(tmp_path_factory, drawn):
    seed, ops = drawn
    path = tmp_path_factory.mktemp("h") / "m.pcap"
    path.write_bytes(build_capture("pcap-le-us", [apply_ops(seed, ops), seed.data],
                                   LINKTYPE_OF[seed.encap]).data)
    _same(path)


@pytest.mark.parametrize("command, module, name", [
    ("rc", "ibwire.analysis.rc_input", "rc_columns"),
    ("credits", "ibwire.cli.credits", "credit_columns")])
@pytest.mark.parametrize("path", [*sorted(PCAPS.glob("*.pcap"))[:6],
                                  *[p.values[0] for p in capture_params("rxe")][:4]],
                         ids=lambda p: getattr(p, "name", "none"))
def test_cli_output_unchanged(monkeypatch, command, module, name, path):
    """`ibwire rc` / `ibwire credits` print the same bytes as over the per-packet columns."""
    if path is None:
        pytest.skip("../shared/captures not found")
    twin = {"rc_columns": rc_columns_per_packet, "credit_columns": credit_columns_per_packet}
    for fmt in ("text", "json"):
        got = run_cli(command, path, "-T", fmt)
        with monkeypatch.context() as m:
            m.setattr(f"{module}.{name}", twin[name])
            want = run_cli(command, path, "-T", fmt)
        assert got == want
