"""Every output ibwire gives for the sample captures is byte-identical to the recorded
reference (tools/golden_outputs.py): refactors keep behaviour, and a change that means
to alter an output re-records it with `python tools/golden_outputs.py --write`."""

from __future__ import annotations

import hashlib
import json

import pytest
from tool_loader import load_tool

golden = load_tool("golden_outputs")

REFERENCE = json.loads(golden.REFERENCE.read_text())


def test_reference_covers_every_sample():
    names = {name for name, _ in golden.outputs()}
    assert names == set(REFERENCE)
    captures = {k.split(":")[0] for k in names if ":" in k}
    assert len(captures) == len(list(golden.PCAPS.glob("*.pcap")))


@pytest.mark.parametrize("name, make", list(golden.outputs()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_output_unchanged(name, make):
    text = make()
    assert hashlib.sha256(text.encode()).hexdigest() == REFERENCE[name], (
        f"{name} changed; if intended, re-record with tools/golden_outputs.py --write")
