"""Shared test fixtures: where the given captures live, and tshark."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a red CI should mean a regression, not a
# newly drawn example); local runs keep exploring. IBWIRE_HYPOTHESIS=explore overrides.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") and os.environ.get("IBWIRE_HYPOTHESIS") != "explore":
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
# A worktree beside others (e.g. /work/wt/<name>) finds them through IBWIRE_SHARED.
SHARED = Path(os.environ.get("IBWIRE_SHARED", REPO.parent / "shared"))
CAPTURES = SHARED / "captures"
PCAPS = REPO / "pcaps"


def shared_captures(*groups: str) -> list[Path]:
    """Capture files under ../shared/captures (empty when absent)."""
    if not CAPTURES.is_dir():
        return []
    out: list[Path] = []
    for g in groups or ("public", "rxe", "mad"):
        out.extend(sorted((CAPTURES / g).glob("*.pcap")))
    return out


def need_shared() -> None:
    if not CAPTURES.is_dir():
        pytest.skip(f"../shared/captures not found at {CAPTURES}: the given captures are "
                    "only beside the repository on the project's machines")


def need_tshark() -> str:
    path = shutil.which("tshark")
    if path is None:
        pytest.skip("tshark is not installed (CI installs it with apt-get install -y tshark)")
    return path


def capture_params(*groups: str):
    """pytest params over shared captures, one id per file; a skip marker when absent."""
    files = shared_captures(*groups)
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"../shared/captures not found at {CAPTURES}"))]
    return [pytest.param(f, id=f"{f.parent.name}/{f.name}") for f in files]
