"""`ibwire report --jobs N` / `--scheduler` / `--chunk` (issue 16): the page is the one
`ibwire report` writes without them, whatever the chunking and the workers; damaged
captures are read by the reference read and reported alike."""

from __future__ import annotations

import re

import pytest

from ibwire.cli.main import main
from tests.conftest import PCAPS
from tests.test_report_bulk import _damaged

STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</div>")
SAMPLES = sorted(PCAPS.glob("*.pcap"))


def _page(paths, out, capsys, *extra) -> tuple[int, str, str, str]:
    """(exit code, page without its time stamp, stdout without the file name, stderr)"""
    code = main(["report", *map(str, paths), "-o", str(out), "--no-progress", *extra])
    got = capsys.readouterr()
    return (code, STAMP.sub("", out.read_text(), count=1),
            got.out.replace(str(out), "OUT"), got.err)


def test_chunked_in_process_page_is_the_same(tmp_path, capsys):
    """--chunk alone: every sample and two damaged files, in one report, in spans of 7
    frames (the chunked path in this process)."""
    caps = [*SAMPLES, *_damaged(tmp_path)]
    ref = _page(caps, tmp_path / "ref.html", capsys)
    got = _page(caps, tmp_path / "chunked.html", capsys, "--chunk", "7")
    assert ref[0] == 1 and "Read stopped early" in ref[1]
    assert got == ref


def test_jobs_2_page_is_the_same(tmp_path, capsys):
    """Two Dask workers (LocalCluster), spans of 13 frames: MADs (the fabric view),
    RC loss, credits and a damaged capture in one report."""
    pytest.importorskip("dask.distributed")
    caps = [PCAPS / "fabric_mads_ib.pcap", PCAPS / "rc_loss_roce2.pcap",
            PCAPS / "link_credits_ib.pcap", _damaged(tmp_path)[0]]
    ref = _page(caps, tmp_path / "ref.html", capsys)
    got = _page(caps, tmp_path / "jobs.html", capsys, "--jobs", "2", "--chunk", "13")
    assert 'id="fabric"' in ref[1]
    assert got == ref


def test_help_has_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = capsys.readouterr().out
    for option in ("--jobs N", "--scheduler ADDRESS", "--chunk FRAMES", "-o OUT",
                   "--no-progress"):
        assert option in text, option
    assert "parallel workers" in text and "existing Dask cluster" in text


def test_bad_jobs_is_refused(capsys):
    assert main(["report", "a.pcap", "--jobs", "0"]) == 2
    assert "not a positive integer" in capsys.readouterr().err
