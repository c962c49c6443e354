"""Every given capture: packet count, timestamps to the nanosecond and the layer
stack (tshark's frame.protocols) agree with tshark, through `ibwire dump`."""

from __future__ import annotations

import pytest
from conftest import capture_params, need_tshark
from test_cli_common import lines, run_cli, tshark

FIELDS = ["frame.number", "frame.time_epoch", "frame.len", "frame.protocols"]


@pytest.mark.parametrize("path", capture_params())
def test_count_time_and_stack_equal_tsharks(path):
    need_tshark()
    args = ["-T", "fields"]
    for f in FIELDS:
        args += ["-e", f]
    want = lines(tshark("-r", path, *args))
    rc, out, _ = run_cli("dump", "-r", path, *args)
    got = lines(out)
    assert rc == 0 and len(got) == len(want) > 0
    diffs = [(n, a, b) for n, (a, b) in enumerate(zip(got, want), 1) if a != b]
    assert diffs == [], diffs[:5]
