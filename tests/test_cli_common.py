"""Helpers shared by the CLI tests (this module holds no tests).

`run_cli(...)` calls `ibwire.cli.main.main` in-process with stdout/stderr captured
(fast: no interpreter start-up per call); `tshark(...)` runs the reference.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
from pathlib import Path

from conftest import CAPTURES, need_shared, need_tshark  # noqa: F401 - re-exported

from ibwire.cli.main import main

TSHARK = ["tshark", "--disable-protocol", "tftp", "--disable-protocol", "rpcordma"]
# Which tshark fields are compared: tshark_diff.py's rule (raw-byte blobs and
# reserved fields are left out), copied so the tests do not depend on the tool.
SKIP = re.compile(
    r"(\.reserved\d*$|^infiniband\.reserved$|\.data$|smpdata$|^infiniband\.(lrh|grh|bth|deth|"
    r"reth|aeth|rdeth|atomiceth|atomicacketh|immdt|ieth|mad|smplid|smpdirected|payload|"
    r"rawdata|invariant|variant|vendor|raw)$|initialpath$|returnpath$|privatedata$|"
    r"private_data$)")
EXPECTED = Path(__file__).resolve().parent / "expected"


def run_cli(*args: str | Path) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `ibwire ARGS`, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def tshark(*args: str | Path) -> str:
    need_tshark()
    p = subprocess.run([*TSHARK, *map(str, args)], capture_output=True, text=True)
    return p.stdout


def capture(group: str, name: str) -> Path:
    need_shared()
    return CAPTURES / group / name


def lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text else []
