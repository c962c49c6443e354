"""`ibwire report` reads captures with the bulk engine: the page is the one the
per-packet read makes (IBWIRE_PER_PACKET=1), also when the engine stops part-way
(a damaged file) and the per-packet reader carries on; the fabric view from the
bulk read's MADs is `ibwire fabric`'s; the expert table holds every item `ibwire
stats -z expert` counts (decoder, RC engine, credit analysis)."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from ibwire.analysis.fabric import build_fabric, fabric_of
from ibwire.analysis.fabric_json import fabric_dict
from ibwire.cli.main import main
from ibwire.report import bulk_read
from ibwire.report.collect import read_capture
from tests.conftest import PCAPS, shared_captures
from tests.report_helpers import fabric_capture

SAMPLES = sorted(PCAPS.glob("*.pcap"))
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</div>")


def _damaged(tmp_path) -> list:
    data = (PCAPS / "rc_loss_roce2.pcap").read_bytes()
    off = 24
    for _ in range(10):                      # after the tenth record: 100 bad bytes
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
    gap = tmp_path / "gap.pcap"
    gap.write_bytes(data[:off] + b"\xa5" * 100 + data[off:])
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:3000])
    return [gap, cut]


def _page(path, out, capsys) -> tuple[str, int, str]:
    code = main(["report", str(path), "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    return STAMP.sub("", out.read_text(), count=1), code, err


@pytest.mark.parametrize("chunk", [bulk_read.CHUNK, 4])
def test_bulk_page_equals_per_packet_page(tmp_path, capsys, monkeypatch, chunk):
    """Chunks of 4 frames: the damaged files switch to the per-packet reader after
    some bulk chunks (gap.pcap at frame 10, cut.pcap at 15)."""
    for cap in [*SAMPLES, *_damaged(tmp_path)]:
        monkeypatch.setattr(bulk_read, "CHUNK", chunk)
        bulk = _page(cap, tmp_path / "bulk.html", capsys)
        monkeypatch.setenv("IBWIRE_PER_PACKET", "1")
        ref = _page(cap, tmp_path / "ref.html", capsys)
        monkeypatch.delenv("IBWIRE_PER_PACKET")
        assert bulk == ref, cap.name


def test_damaged_file_mixes_bulk_and_per_packet(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_read, "CHUNK", 4)
    seen = []
    read = bulk_read.read

    def spy(*args, **kwargs):
        seen.append(read(*args, **kwargs))
        return seen[-1]
    monkeypatch.setattr(bulk_read, "read", spy)
    gap, cut = _damaged(tmp_path)
    cap = read_capture(str(gap), progress=False)
    assert (seen[-1].frames, seen[-1].done) == (10, False) and cap.summary.frames == 238
    assert "damaged region" in cap.error
    cap = read_capture(str(cut), progress=False)
    assert (seen[-1].frames, seen[-1].done) == (15, False) and cap.summary.frames == 15
    assert "truncated" in cap.error


def _mad_captures(tmp_path) -> list[list[str]]:
    """Single files and a pair, with a MAD whose ICRC is broken."""
    import ibwire
    fab = PCAPS / "fabric_mads_ib.pcap"
    data = bytearray(fab.read_bytes())
    mad = next(p for p in ibwire.read(str(fab))
               if any(lay.layout.name == "mad" for lay in p.layers))
    data[mad.frame.offset + 16 + 40] ^= 0xFF         # inside the MAD: bad ICRC
    bad = tmp_path / "bad_icrc.pcap"
    bad.write_bytes(bytes(data))
    events = fabric_capture(tmp_path)
    sets = [[str(fab)], [str(bad)], [str(events)], [str(events), str(fab)]]
    sets += [[str(p)] for p in shared_captures("mad")[:8]]
    return sets


def test_fabric_from_bulk_read_equals_fabric_command(tmp_path):
    for paths in _mad_captures(tmp_path):
        caps = [read_capture(p, progress=False, source=i) for i, p in enumerate(paths)]
        assert all(c.fabric_mads is not None for c in caps)
        got = fabric_of([m for c in caps for m in c.fabric_mads[0]],
                        [x for c in caps for x in c.fabric_mads[1]], [])
        assert fabric_dict(got) == fabric_dict(build_fabric(paths)), paths
    assert any("bad ICRC/VCRC ignored" in m for m in fabric_dict(
        build_fabric([str(tmp_path / "bad_icrc.pcap")]))["missing"])


def _stats_expert(capsys, path) -> dict[tuple[str, str], int]:
    capsys.readouterr()
    main(["stats", str(path), "-z", "expert"])
    out, sev = {}, None
    for line in capsys.readouterr().out.splitlines():
        head = re.match(r"(Errors|Warns|Notes|Chats) \(", line)
        if head:
            sev = {"Errors": "Error", "Warns": "Warn", "Notes": "Note", "Chats": "Chat"}[
                head.group(1)]
        row = re.match(r"\s+(\d+)\s+(\S+)\s+(.+?)\s{2}(.*)$", line)
        if row and sev:
            out[(sev, row.group(4))] = int(row.group(1))
    return out


def _link_capture(tmp_path):
    """Native IB with link credits and captured-loss: FCTBS gaps."""
    from ibwire.gen.config import scenario
    from ibwire.gen.sim import simulate

    cfg = scenario("rc_clean", encap="ib", link_credits=64, capture_loss=0.02, seed=5,
                   connections=2)
    path = tmp_path / "fctbs.pcap"
    simulate(cfg).write(str(path))
    return path


def test_expert_table_holds_stats_expert_items(tmp_path, capsys):
    caps = [*SAMPLES, _link_capture(tmp_path)]
    credit_items = 0
    for cap in caps:
        rep = read_capture(str(cap), progress=False)
        got = {(sev, summary): n for (sev, _, _, summary), n in rep.expert.counts.items()}
        assert got == _stats_expert(capsys, cap), cap.name
        credit_items += sum(n for (sev, summary), n in got.items()
                            if "FCTBS" in summary or "PFC" in summary or "credit" in summary)
        for item, first in rep.expert.first.items():
            assert first >= 1 and rep.expert.counts[item] > 0
    assert credit_items > 0


def test_credit_expert_rows_equal_the_providers_per_row_items():
    """`expert_rows` gives, at once, the items `_expert` gives row by row."""
    from collections import defaultdict

    from ibwire.analysis.credit_fields import ABSENT
    from ibwire.analysis.credits_provider import (
        CREDITS,
        MISSING,
        PAUSED,
        STALL,
        _expert,
        expert_rows,
    )

    rng = np.random.default_rng(3)
    n = 400
    fields = {MISSING: rng.choice([ABSENT, 0, 3, 9], n), CREDITS: rng.choice([ABSENT, -2, 0, 5], n),
              STALL: rng.choice([ABSENT, 0, 100], n), PAUSED: rng.choice([ABSENT, 0, 1], n)}
    want: dict = defaultdict(list)
    for row in range(n):
        v = {k: int(a[row]) for k, a in fields.items() if a[row] != ABSENT}
        for item in _expert(v):
            want[item].append(row)
    got = expert_rows(fields)
    assert {item: rows.tolist() for item, rows in got} == dict(want)
    assert [int(rows[0]) for _, rows in got] == sorted(int(rows[0]) for _, rows in got)
    assert len(got) == 4
