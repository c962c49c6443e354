"""tools/fuzz_atheris.py: the long-run harness imports, checks inputs like the CI
fuzz tests do, writes a seed corpus, and runs a few hundred libFuzzer iterations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tool_loader import load_tool

TOOL = Path(__file__).resolve().parents[1] / "tools" / "fuzz_atheris.py"


def _harness():
    mod = load_tool("fuzz_atheris")
    mod._load(instrument=False)
    return mod


def test_harness_checks_inputs_of_every_target(tmp_path: Path):
    mod = _harness()
    for target in mod.TARGETS:
        for data in (b"", b"\x00", bytes(range(256)), b"\xff" * 600):
            mod.one_input(data, target)
        mod.one_input(bytes([mod.TARGETS.index(target)]) + b"\x01\x02\x03", "all")
    assert mod.write_seed_corpus(tmp_path) > 100


def test_harness_reports_a_broken_promise():
    mod = _harness()
    mod._state["violation"] = lambda data, encap: "planted"
    with pytest.raises(AssertionError, match="decode: planted"):
        mod.one_input(b"\x00\x00abc", "decode")


def test_atheris_runs_a_few_hundred_iterations(tmp_path: Path):
    pytest.importorskip("atheris", reason="atheris is not installed (pip install atheris)")
    corpus = tmp_path / "corpus"
    _harness().write_seed_corpus(corpus)
    res = subprocess.run([sys.executable, str(TOOL), str(corpus), "-atheris_runs=300",
                          "-max_len=2048", f"-artifact_prefix={tmp_path}/"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert re.search(r"Done 300 (runs )?in", res.stderr), res.stderr[-2000:]
