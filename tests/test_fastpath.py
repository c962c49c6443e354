"""The per-packet fast path changes speed, never results: compiled unpackers equal
the field-by-field codec (itself pinned to Construct in test_registry), the fast
ICRC equals CRC-32 over the masked bytes, and decoding with the fast chains
gives the same packets as the general decoder on every capture, generated and
mutated ones included."""

from __future__ import annotations

import dataclasses
import io

import pytest
from conftest import PCAPS, shared_captures
from hypothesis import given, settings
from hypothesis import strategies as st

import ibwire
from ibwire import crc
from ibwire.capture import read_capture
from ibwire.decoder import Options
from ibwire.fields import REGISTRY
from ibwire.gen.bulk import BulkConfig, bulk_write
from ibwire.gen.config import GenConfig
from ibwire.gen.sim import simulate

LAYOUTS = sorted(REGISTRY.layouts.values(), key=lambda lay: lay.name)
FAST, GENERAL = Options(), Options(fast_path=False)


def _state(pkt: ibwire.Packet) -> dict:
    """Everything a decoded packet holds, except the options object itself."""
    out = {f.name: getattr(pkt, f.name) for f in dataclasses.fields(pkt) if f.name != "options"}
    out["layers"] = [(lay.layout.name, lay.offset, lay.values) for lay in pkt.layers]
    return out


def _generated() -> list[tuple[str, bytes]]:
    caps = []
    for encap in ("roce2", "roce2-v6", "ib", "ib-grh", "roce1"):
        buf = io.BytesIO()
        bulk_write(buf, BulkConfig(encap=encap, packets=60, connections=2, msg_pkts=3))
        caps.append((f"bulk-{encap}", buf.getvalue()))
    for encap in ("roce2", "ib-grh"):
        cfg = GenConfig(encap=encap, packets=40, seed=3, loss=0.05, corrupt=0.1,
                        ud_messages=4, mads=encap != "roce2")
        caps.append((f"sim-{encap}", simulate(cfg).frames))
    return caps


def _files() -> list:
    files = [pytest.param(p, id=p.name) for p in sorted(PCAPS.glob("*.pcap"))]
    files += [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in shared_captures()]
    return files


def _frames(src):
    if isinstance(src, list):
        return src
    return read_capture(io.BytesIO(src) if isinstance(src, bytes) else src)


def _assert_same(frames) -> int:
    n = 0
    for frame in frames:
        fast = ibwire.decode(frame.data, frame.linktype, options=FAST)
        general = ibwire.decode(frame.data, frame.linktype, options=GENERAL)
        assert _state(fast) == _state(general), f"frame {frame.index + 1}"
        n += 1
    return n


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_compiled_unpacker_equals_the_field_loop(layout, data):
    raw = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    pad = data.draw(st.integers(0, 3))
    blob = bytes(pad) + raw
    loop = layout.unpack_loop(blob, pad)
    assert layout.unpack(blob, pad) == loop
    assert list(layout.unpack(blob, pad)) == list(loop)           # same order too
    layout.derived_values(loop)
    assert layout.values_at(blob, pad) == loop


@pytest.mark.parametrize("path", _files())
def test_fast_chains_decode_captures_like_the_general_decoder(path):
    assert _assert_same(_frames(path)) > 0


def test_fast_chains_decode_generated_captures_like_the_general_decoder():
    for name, blob in _generated():
        assert _assert_same(_frames(blob)) > 0, name


def _sample_frames():
    out = []
    for p in sorted(PCAPS.glob("*.pcap")):
        out.extend(read_capture(p)[:12])
    return out


SAMPLES = _sample_frames()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SAMPLES), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                          max_size=4), st.integers(0, 40))
def test_fast_chains_agree_on_mutated_packets(frame, edits, cut):
    data = bytearray(frame.data)
    for pos, value in edits:
        if pos < len(data):
            data[pos] = value
    data = bytes(data[:len(data) - cut])
    fast = ibwire.decode(data, frame.linktype, options=FAST)
    general = ibwire.decode(data, frame.linktype, options=GENERAL)
    assert _state(fast) == _state(general)


@pytest.mark.parametrize("path", _files()[:12])
def test_fast_icrc_equals_crc32_of_the_masked_bytes(path, monkeypatch):
    frames = _frames(path)
    fast = [ibwire.decode(f.data, f.linktype) for f in frames]
    monkeypatch.setattr(crc, "icrc_fast", lambda *a, **k: None)
    slow = [ibwire.decode(f.data, f.linktype) for f in frames]
    assert [(p.icrc, p.icrc_status) for p in fast] == [(p.icrc, p.icrc_status) for p in slow]
    assert any(p.icrc_status is crc.CrcStatus.GOOD for p in fast)
