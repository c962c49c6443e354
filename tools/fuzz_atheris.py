#!/usr/bin/env python3
"""Coverage-guided fuzzing of ibwire's hostile-input targets with atheris (libFuzzer).

The CI fuzz tests (tests/test_fuzz*.py) run a fixed seeded budget; this harness is
for long runs that follow coverage. It checks the same promises, with the same
checkers the tests use:

* decode  - every encapsulation (`decode(data, encap)`): nothing escapes, every
            problem has layer/offset/reason with 0 <= offset <= len, the packet
            re-encodes to its bytes (tests/test_fuzz_decode.py `violation`);
* mad     - bare MADs (encap "mad") and MADs in a UD SEND Only to QP1;
* reader  - the bytes as a capture file in memory, plain or gzipped: only
            CaptureError escapes, after the good records, and every frame decodes
            (tests/test_fuzz_capture.py `read_checked`);
* filter  - the bytes as display-filter text: a filter or FilterError, and the filter
            answers True/False on sample packets (tests/test_fuzz_dfilter.py).

With `--target all` (the default) the first input byte picks the target. A broken
promise raises AssertionError: libFuzzer stops and writes the input to crash-<sha1>.

Usage (from the repository root; `pip install atheris` first):

    python tools/fuzz_atheris.py --seed-corpus corpus/            # write seeds, then exit
    python tools/fuzz_atheris.py corpus/ -max_len=4096            # run until stopped
    python tools/fuzz_atheris.py --target reader corpus/ -atheris_runs=1000000
    python tools/fuzz_atheris.py crash-1234abcd                   # replay one input

Seeds come from tests/fuzz_strategies.py (generated packets of every opcode and
encapsulation, MADs of every supported attribute, the shared captures when present,
capture files of every format). Known, reported bugs (KNOWN_BUGS in
tests/test_fuzz_decode.py) are not reported again.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
TARGETS = ("decode", "mad", "reader", "filter")
_state: dict[str, object] = {}


def _load(instrument: bool) -> None:
    """Import ibwire (instrumented for coverage when under atheris) and the checkers."""
    sys.path.insert(0, str(TESTS))
    if instrument:
        import atheris

        with atheris.instrument_imports(include=["ibwire"]):
            import ibwire  # noqa: F401
            import ibwire.capture  # noqa: F401
            import ibwire.cli.dfilter  # noqa: F401
            import ibwire.mad  # noqa: F401
    import fuzz_strategies as fs
    from test_fuzz_capture import read_checked
    from test_fuzz_decode import violation
    from test_fuzz_dfilter import filter_violation, sample_packets

    _state.update(fs=fs, violation=violation, read_checked=read_checked,
                  filter_violation=filter_violation, packets=sample_packets()[:4])


def one_input(data: bytes, target: str = "all") -> None:
    """Check one input; raise AssertionError on a broken promise."""
    if target == "all":
        if not data:
            return
        target, data = TARGETS[data[0] % len(TARGETS)], data[1:]
    fs = _state["fs"]
    if target == "decode":
        encap = fs.ENCAPS[data[0] % len(fs.ENCAPS)] if data else "ib"  # type: ignore[attr-defined]
        why = _state["violation"](data[1:], encap)  # type: ignore[operator]
    elif target == "mad":
        why = _state["violation"](data, "mad") if fs.HAVE_MAD else None  # type: ignore[attr-defined,operator]
        if not why and fs.HAVE_MAD:  # type: ignore[attr-defined]
            why = _state["violation"](_in_ud_send(data), "ib")  # type: ignore[operator]
    elif target == "reader":
        packed = gzip.compress(data[1:], mtime=0) if data[:1] == b"\x01" else data
        why = _state["read_checked"](packed, data[1:] if packed is not data else data)[1]  # type: ignore[operator]
    else:
        text = data.decode("utf-8", "replace")
        why = _state["filter_violation"](text, _state["packets"])  # type: ignore[operator]
    if why:
        raise AssertionError(f"{target}: {why} (input {data[:64].hex()}...)")


def _in_ud_send(mad: bytes) -> bytes:
    from ibwire import DETH, LRH, encode
    from ibwire.headers import BTH

    return encode(LRH(dlid=1, slid=2), BTH(opcode=0x64, destqp=1),
                  DETH(q_key=0x80010000, srcqp=1), payload=mad)


def write_seed_corpus(directory: Path) -> int:
    """Seed inputs for every target, named by content hash; returns how many."""
    fs = _state["fs"]
    directory.mkdir(parents=True, exist_ok=True)
    inputs = []
    for seed in fs.packet_seeds():  # type: ignore[attr-defined]
        encap_byte = bytes([fs.ENCAPS.index(seed.encap)])  # type: ignore[attr-defined]
        inputs.append(bytes([TARGETS.index("decode")]) + encap_byte + seed.data)
        if seed.encap == "mad":
            inputs.append(bytes([TARGETS.index("mad")]) + seed.data)
    for cap in fs.capture_seeds()[::3]:  # type: ignore[attr-defined]
        inputs.append(bytes([TARGETS.index("reader")]) + cap.data)
    for text in ("infiniband.bth.psn > 3 and !ip", "eth.addr == 02:00:00:00:00:0a",
                 'infiniband.payload matches "^a"', "udp.port in {4791 1..9}"):
        inputs.append(bytes([TARGETS.index("filter")]) + text.encode())
    for blob in inputs:
        (directory / hashlib.sha1(blob).hexdigest()).write_bytes(blob)
    return len(inputs)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=True)
    parser.add_argument("--target", choices=("all", *TARGETS), default="all")
    parser.add_argument("--seed-corpus", metavar="DIR", type=Path)
    ours, libfuzzer = parser.parse_known_args(argv[1:])
    if ours.seed_corpus:
        _load(instrument=False)
        print(f"wrote {write_seed_corpus(ours.seed_corpus)} seed inputs to {ours.seed_corpus}")
        return 0
    import atheris

    _load(instrument=True)
    target = ours.target
    atheris.Setup([argv[0], *libfuzzer], lambda data: one_input(data, target))
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
