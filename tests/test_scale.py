"""Chunked/parallel analyses (ibwire.scale): the same results whatever the chunking,
the partitions and the workers; capture points compared."""

from __future__ import annotations

import json

import pytest
from test_cli_common import run_cli

from ibwire.analysis.rc_input import ENDPOINTS
from ibwire.scale import chunks, rcmerge, runner
from ibwire.scale.points import downstream

dask = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    """Two capture points: a generated RC capture with loss, and its downstream view
    without three request frames."""
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.gen.cli import main as gen
    d = tmp_path_factory.mktemp("points")
    a, b = str(d / "a.pcap"), str(d / "b.pcap")
    gen(["--encap", "roce2", "--connections", "3", "--bidirectional", "--loss", "0.02",
         "--packets", "240", "--seed", "5", "-o", a])
    cols = rc_columns(a)
    req = (cols["infiniband.bth.opcode"] <= 0x0A) & (cols["infiniband.bth.destqp"] > 1)
    frames = cols["frame.number"][req]
    drop = [int(frames[i]) for i in (10, 40, 70)]
    downstream(a, b, drop)
    psns = sorted(int(cols["infiniband.bth.psn"][cols["frame.number"] == f][0]) for f in drop)
    return a, b, drop, psns


def _plain(doc):
    """Connections and episodes without their indices (numbering is the only freedom)."""
    strip = ("connection", "half_connection", "episode")
    return (sorted(json.dumps({k: v for k, v in c.items() if k not in strip}, sort_keys=True)
                   for c in doc["connections"]),
            sorted(json.dumps({k: v for k, v in e.items() if k not in strip}, sort_keys=True)
                   for e in doc["episodes"]))


def test_one_capture_chunked_equals_ibwire_rc(points):
    """Any chunking and partitioning: the same connections and episodes as `ibwire rc`."""
    a = points[0]
    rc, out, _ = run_cli("rc", a, "-T", "json")
    ref = json.loads(out)
    whole = runner.rc_document([a], None, chunk=10**6, parts=1)
    assert _plain(whole) == _plain(ref) and len(ref["connections"]) == 6
    assert whole == ref      # numbering too: the engine's order of half-connections
    for chunk, parts in ((37, 3), (100, 5), (1, 2)):
        assert runner.rc_document([a], None, chunk=chunk, parts=parts) == whole
    assert run_cli("rc", a, "-T", "json", "--chunk", "41") == (0, out, "")


def test_rc_and_stats_equal_on_1_and_4_dask_workers(points):
    """The must-show: rc -T json and stats on 1 worker == on a 4-worker LocalCluster."""
    a, b = points[:2]
    one = runner.rc_document([a, b], None, chunk=10**6, parts=1)
    stats1 = runner.per_capture(runner.stats_text, [a, b])
    with runner.client(4, processes=False) as c:
        assert len(c.scheduler_info()["workers"]) == 4
        four = runner.rc_document([a, b], c, chunk=57)
        stats4 = runner.per_capture(runner.stats_text, [a, b], c)
        alone4 = runner.rc_document([a], c, chunk=33)
    assert json.dumps(four) == json.dumps(one)
    assert json.dumps(alone4, indent=1) + "\n" == run_cli("rc", a, "-T", "json")[1]
    assert stats4 == stats1 and "Protocol Hierarchy" in stats1[0]


def test_points_compared_find_the_packets_lost_between(points):
    a, b, drop, psns = points
    doc = runner.rc_document([a, b], None, chunk=100, parts=3)
    assert doc["captures"] == [a, b]
    assert {c["capture_point"] for c in doc["connections"]} == {a, b}
    pairs = doc["points_compared"]
    assert len(pairs) == 6 and all(p["upstream"] == a for p in pairs)
    lost = sorted(x for p in pairs for x in p["lost_psns"])
    assert lost == psns and sum(p["lost_between"] for p in pairs) == 3
    assert all(p["only_downstream"] == 0 for p in pairs)


def test_pair_hash_is_unordered_and_split_keeps_every_row(points):
    cols = chunks.decode(chunks.Task(0, points[0], 5, 100))
    labels = cols[ENDPOINTS]
    assert (chunks.pair_hash(cols["ibwire.src"], cols["ibwire.dst"], labels) ==
            chunks.pair_hash(cols["ibwire.dst"], cols["ibwire.src"], labels)).all()
    assert cols["frame.number"][0] == 6 and len(cols["frame.number"]) == 100
    pieces = chunks.split(cols, 4)
    back = chunks.concat(pieces)
    assert sorted(back["frame.number"].tolist()) == list(range(6, 106))
    assert rcmerge.analyse({})["connections"] == []


def test_cli_rc_jobs_and_several_points(points):
    a, b = points[:2]
    rc1, out1, _ = run_cli("rc", a, b, "-T", "json")
    rc2, out2, _ = run_cli("rc", a, b, "-T", "json", "--jobs", "2", "--chunk", "90")
    assert rc1 == rc2 == 0 and out1 == out2
    rc3, text, _ = run_cli("rc", a, b)
    assert rc3 == 0 and "lost between the points" in text
    rc4, s1, _ = run_cli("stats", a, "-z", "io,phs")
    rc5, s2, _ = run_cli("stats", a, "-z", "io,phs", "--jobs", "2")
    assert rc4 == rc5 == 0 and s1 == s2


def test_bulk_host_pairs_spread_connections_over_endpoint_pairs(tmp_path):
    """The benchmark's captures (tools/bench_scale.py): connections between several
    host pairs, so the shuffle has more than one endpoint pair to spread; analysed
    the same on 1 and 2 partitions, without an episode."""
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.gen.bulk import BulkConfig, bulk_write
    path = str(tmp_path / "pairs.pcap")
    bulk_write(path, BulkConfig(packets=3000, connections=6, host_pairs=3))
    cols = rc_columns(path)
    assert len(cols[ENDPOINTS]) == 6
    hashes = chunks.pair_hash(cols["ibwire.src"], cols["ibwire.dst"], cols[ENDPOINTS])
    assert len(set(hashes.tolist())) == 3
    one = runner.rc_document([path], None, chunk=700, parts=1)
    assert runner.rc_document([path], None, chunk=450, parts=2) == one
    assert len(one["connections"]) == 6 and not one["episodes"]


def test_partitions_do_not_change_big_captures(tmp_path):
    """Past the RC engine's pairing window (2^18 transport rows per analysis) the
    result still does not depend on which endpoint pairs share a partition."""
    from ibwire.analysis.rc_pair import _HEAD_ROWS
    from ibwire.gen.bulk import BulkConfig, bulk_write
    path = str(tmp_path / "big.pcap")
    bulk_write(path, BulkConfig(packets=_HEAD_ROWS + 40_000, connections=6, host_pairs=3))
    one = runner.rc_document([path], None, chunk=100_000, parts=1)
    assert runner.rc_document([path], None, chunk=70_000, parts=3) == one
    assert sum(c["packets"] for c in one["connections"]) == _HEAD_ROWS + 40_000
