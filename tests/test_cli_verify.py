"""`ibwire verify`: counts and bad frame numbers equal the per-packet decoder's."""

from __future__ import annotations

import json

import pytest
from conftest import PCAPS

import ibwire
from ibwire.cli.main import main
from ibwire.crc import CrcStatus


def _bad(path, attr):
    return [i + 1 for i, p in enumerate(ibwire.read(path)) if getattr(p, attr) == CrcStatus.BAD]


@pytest.mark.parametrize("name", ["rc_corrupt_ib_grh.pcap", "rc_clean_roce2.pcap",
                                  "link_credits_ib.pcap"])
def test_verify_lists_what_the_decoder_finds(name, capsys):
    path = PCAPS / name
    status = main(["verify", "--json", str(path)])
    got = json.loads(capsys.readouterr().out)
    want = {"ICRC": _bad(path, "icrc_status"), "VCRC": _bad(path, "vcrc_status"),
            "LPCRC": _bad(path, "lpcrc_status")}
    assert got["bad"] == want
    assert status == (1 if any(want.values()) else 0)
    assert got["frames"] == sum(1 for _ in ibwire.read(path))
    good = sum(p.icrc_status == CrcStatus.GOOD for p in ibwire.read(path))
    assert got["counts"]["ICRC"]["good"] == good


def test_verify_text_output_and_errors(capsys, tmp_path):
    assert main(["verify", str(PCAPS / "rc_corrupt_ib_grh.pcap"), "--max-list", "2"]) == 1
    out = capsys.readouterr().out
    bad = _bad(PCAPS / "rc_corrupt_ib_grh.pcap", "icrc_status")
    assert f"bad ICRC in frames: {bad[0]} {bad[1]} ... ({len(bad) - 2} more)" in out
    assert out.rstrip().endswith("FAIL: bad CRCs found")
    empty = tmp_path / "x.pcap"
    empty.write_bytes(b"")
    assert main(["verify", str(empty)]) == 1
    assert "empty file" in capsys.readouterr().err
    assert main(["verify"]) == 2
