"""Fuzz every capture reader (pcap us/ns both byte orders, pcapng both, ERF, gzip) on
in-memory files: only CaptureError escapes, after the good records; every frame read
decodes without escape; every skipped region lies between the frames, inside the file;
no length field costs more memory than the file or loops."""

from __future__ import annotations

import gzip
import io
import random
import tracemalloc
from functools import partial
from pathlib import Path

import pytest
from fuzz_strategies import (
    CAPTURE_KINDS,
    SCALE,
    Op,
    Seed,
    apply_ops,
    capture_seeds,
    gen_op,
    seed_ops,
    set_field,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from steady_time import steady_seconds, timed
from test_fuzz_decode import violation

from ibwire.capture import CaptureError, open_capture

FILES_BUDGET = 5_000 * SCALE     # mutated capture files per run (about 7 records each)
PER_FILE_SECONDS = 0.5
MEMORY_SLACK = 1 << 20           # allowed on top of twice the (decompressed) file size


def random_capture(rng: random.Random, seeds: list[Seed]) -> tuple[Seed, list[Op], bytes,
                                                                    bytes]:
    """(seed, ops, file bytes, decompressed bytes); one in six is gzipped, maybe cut."""
    seed = rng.choice(seeds)
    ops = [gen_op(rng.randint, seed) for _ in range(rng.choice((1, 1, 2, 3)))]
    plain = apply_ops(seed, ops)
    if rng.random() < 1 / 6:
        packed = gzip.compress(plain, mtime=0)
        if rng.random() < 0.5:
            packed = packed[:rng.randint(2, len(packed))]
        return seed, ops + [("gzip",)], packed, plain
    return seed, ops, plain, plain


def read_checked(data: bytes, plain: bytes, decode_frames: bool = True) -> tuple[int, str | None]:
    """(frames read, violation or None) for one capture held in memory."""
    frames, skipped = [], []
    try:
        with open_capture(io.BytesIO(data)) as cap:
            skipped = cap.skipped
            for fr in cap:
                frames.append(fr)
    except CaptureError as err:
        msg = str(err)
        if "\n" in msg:
            return len(frames), f"multi-line CaptureError: {msg!r}"
        if msg.endswith("records read)"):
            if err.index != len(frames) or f"({len(frames)} records read)" not in msg:
                return len(frames), f"index {err.index} but {len(frames)} frames: {msg}"
            if not 0 <= err.offset <= len(plain):
                return len(frames), f"offset {err.offset} outside the file: {msg}"
    except Exception as exc:  # noqa: BLE001 - an escape
        return len(frames), f"{type(exc).__name__}: {exc}"
    last = -1
    for i, fr in enumerate(frames):
        if fr.index != i or fr.offset <= last or fr.offset + len(fr.data) > len(plain):
            return len(frames), f"frame {i}: index {fr.index} offset {fr.offset}"
        last = fr.offset
        if decode_frames and (why := violation(fr.data, fr.linktype)):
            return len(frames), f"frame {i} decode: {why}"
    return len(frames), skips_violation(skipped, frames, len(plain))


def skips_violation(skipped: list, frames: list, size: int) -> str | None:
    """Skipped regions: in order, inside the file, between the frames they say."""
    end = 0
    for s in skipped:
        before = [f for f in frames if f.offset < s.offset]
        if not (end <= s.offset and s.length > 0 and s.offset + s.length <= size
                and s.index == len(before)
                and all(f.offset + len(f.data) <= s.offset for f in before)
                and all(f.offset >= s.offset + s.length for f in frames[len(before):])):
            return f"skipped {s} against frames {[(f.offset, len(f.data)) for f in frames]}"
        end = s.offset + s.length
    return None


def test_seeded_mutated_captures_never_escape():
    seeds = capture_seeds()
    rng = random.Random(0x1B_0C07)
    files = frames = 0
    failures, slowest = [], 0.0
    for _ in range(FILES_BUDGET):
        seed, ops, data, plain = random_capture(rng, seeds)
        read = partial(read_checked, data, plain, decode_frames=files % 4 == 0)
        (n, why), took = timed(read)
        slowest = max(slowest, steady_seconds(read, took, PER_FILE_SECONDS))
        files, frames = files + 1, frames + n
        if why:
            failures.append(f"{seed.encap} ops={ops}: {why}")
    print(f"reader fuzz: {files} files, {frames} frames read (a quarter decoded), "
          f"{len(failures)} escapes, slowest {slowest * 1e3:.1f} ms")
    assert files == FILES_BUDGET and frames > 3 * FILES_BUDGET
    assert not failures, "\n".join(failures[:10])
    assert slowest < PER_FILE_SECONDS


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.deferred(lambda: seed_ops(capture_seeds())), st.booleans(), st.integers(0, 10**6))
def test_hypothesis_mutated_captures_never_escape(sample, gz, cut):
    seed, ops = sample
    plain = apply_ops(seed, ops)
    data = gzip.compress(plain, mtime=0) if gz else plain
    if gz and cut:
        data = data[:2 + cut % len(data)]
    _, why = read_checked(data, plain)
    assert why is None, (seed.encap, ops, gz, cut)


def test_every_kind_is_fuzzed():
    kinds = {s.encap for s in capture_seeds()}
    assert kinds == set(CAPTURE_KINDS)


# -- memory and time: extreme length fields, on disk, in memory and gzipped -------------
def _extreme_files() -> list[tuple[str, bytes]]:
    """One seed per kind with each of its first length fields at extremes (64 MiB - 1
    is the largest record the pcap and pcapng readers accept)."""
    out, done = [], set()
    for seed in capture_seeds():
        if seed.encap in done:
            continue
        done.add(seed.encap)
        snap = next((r for r in seed.fields if r.layer == "pcap_file"), None)
        for i, ref in enumerate([r for r in seed.fields if r.layer != "pcap_file"][:4]):
            for value in sorted({ref.mask, ref.mask // 2, min(ref.mask, (1 << 26) - 4)}):
                buf = bytearray(seed.data)
                set_field(buf, ref, value)
                out.append((f"{seed.encap} {ref.name} #{i} = {value:#x}", bytes(buf)))
                if snap is not None:  # and a snaplen that lets it through
                    set_field(buf, snap, snap.mask)
                    out.append((f"{seed.encap} snaplen max, {ref.name} #{i} = {value:#x}",
                                bytes(buf)))
    return out


def _peak(read) -> int:
    tracemalloc.start()
    try:
        read()
    except CaptureError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _drain(obj) -> None:
    with open_capture(obj) as cap:
        for _ in cap:
            pass


def test_extreme_lengths_in_memory_stay_within_the_file_size():
    worst = []
    for name, data in _extreme_files():
        measure = partial(_peak, lambda d=data: _drain(io.BytesIO(d)))
        peak, took = timed(measure)
        assert steady_seconds(measure, took, PER_FILE_SECONDS) < PER_FILE_SECONDS, name
        if peak > 2 * len(data) + MEMORY_SLACK:
            worst.append(f"{name}: peak {peak} for {len(data)} bytes")
    assert not worst, worst


@pytest.mark.parametrize("compressed", [pytest.param(False, id="file"),
                                        pytest.param(True, id="gzip")])
def test_extreme_lengths_on_disk_stay_within_the_file_size(tmp_path: Path, compressed: bool):
    """Readers on real files: an incl_len or block length of 64 MiB in a small file must
    not allocate 64 MiB (file.read(n) and gzip allocate n bytes up front, so the readers
    read in chunks of 64 KiB)."""
    worst = []
    for i, (name, data) in enumerate(_extreme_files()):
        path = tmp_path / f"x{i}.cap"
        path.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
        peak = _peak(lambda p=path: _drain(p))
        if peak > 2 * len(data) + MEMORY_SLACK:
            worst.append(f"{name}: peak {peak} for {len(data)} bytes")
    assert not worst, worst
