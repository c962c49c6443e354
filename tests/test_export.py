"""`ibwire export`: the Parquet dataset equals the columns and analyses it comes from,
has the documented schema (plain types only), and DuckDB queries it as-is."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli_common import run_cli

import ibwire
from ibwire.export import flatten, packets
from ibwire.export.run import export, schema_of

PCAPS = Path(__file__).resolve().parents[1] / "pcaps"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "export-tables.json"
SAMPLES = [str(PCAPS / n) for n in ("rc_loss_roce2.pcap", "link_credits_ib.pcap",
                                     "pfc_congestion_roce2.pcap", "fabric_mads_ib.pcap")]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    export(SAMPLES, str(d), bucket_ns=1_000_000)
    return d


def _packets(out):
    return packets.dataset(str(out)).to_table()


def test_packets_equal_ibwire_columns(out):
    t = _packets(out)
    assert t.num_rows == sum(ibwire.columns(p).num_rows for p in SAMPLES)
    for i, p in enumerate(SAMPLES):
        ref = ibwire.columns(p)
        mine = t.filter(pa.compute.equal(t["capture"], f"{i:03d}_{Path(p).stem}"))
        mine = mine.sort_by("frame.number")
        assert mine["ibwire.capture_point"].unique().to_pylist() == [f"{i:03d}_{Path(p).stem}"]
        for name in ("frame.number", "ibwire.frame.time_ns", "infiniband.bth.psn",
                     "infiniband.bth.opcode", "ip.src", "infiniband.lrh.dlid"):
            assert mine[name].to_pylist() == ref[name].to_pylist(), name
        bucket = [x // 1_000_000 for x in ref["ibwire.frame.time_ns"].to_pylist()]
        assert mine["time_bucket"].to_pylist() == bucket


def test_analysis_columns_agree_with_ibwire_rc(out):
    t = _packets(out)
    loss = t.filter(pa.compute.equal(t["capture"], "000_rc_loss_roce2"))
    rc, text, _ = run_cli("rc", SAMPLES[0], "-T", "json")
    doc = json.loads(text)
    retx = pa.compute.sum(loss["infiniband.analysis.retransmission"].cast(pa.int64())).as_py()
    assert retx == sum(c["retransmitted_packets"] for c in doc["connections"]) > 0
    conn = pq.read_table(out / "rc_connections.parquet")
    point = conn.filter(pa.compute.equal(conn["capture_point"], SAMPLES[0]))
    assert point["retransmitted_packets"].to_pylist() == \
        [c["retransmitted_packets"] for c in doc["connections"]]
    eps = pq.read_table(out / "rc_episodes.parquet")
    assert len([x for x in eps["capture_point"].to_pylist() if x == SAMPLES[0]]) == \
        len(doc["episodes"])


def test_schema_is_the_documented_one_and_plain(out):
    got = schema_of(str(out))
    assert got == json.loads(DOCS.read_text())
    for table in got.values():
        for typ in table.values():     # no extension, dictionary, union or map types
            assert typ.split("<")[0] in {"bool", "int8", "int16", "int32", "int64", "uint8",
                                         "uint16", "uint32", "uint64", "double", "string",
                                         "fixed_size_binary[16]", "list"}, typ


def test_flatten_tables_nested_rows_and_mixed_values():
    doc = {"a": [{"x": 1, "n": {"p": 2}, "kids": [{"k": 5}, {"k": 6}], "m": [1, [2]]},
                 {"x": 2, "n": {"p": None}, "kids": [], "m": None}],
           "b": {"c": [{"y": "s"}]}, "empty": []}
    t = flatten.tables(doc, "t")
    assert sorted(t) == ["t_a", "t_a_kids", "t_b_c"]
    assert t["t_a_kids"] == [{"parent_row": 0, "k": 5}, {"parent_row": 0, "k": 6}]
    a = flatten.arrow(t["t_a"])
    assert a.column_names == ["x", "kids", "m", "n_p"] or "n_p" in a.column_names
    assert a["n_p"].to_pylist() == [2, None] and a["m"].to_pylist() == ["[1, [2]]", None]
    assert flatten.arrow([{"z": None}]).schema.field("z").type == pa.string()


def test_duckdb_queries_the_export(out):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    rows = con.execute(f"""
        SELECT capture, count(*) AS frames,
               count(*) FILTER (WHERE "infiniband.analysis.retransmission") AS retx
        FROM read_parquet('{out}/packets/**/*.parquet', hive_partitioning = true)
        GROUP BY capture ORDER BY capture""").fetchall()
    assert [r[0] for r in rows] == [f"{i:03d}_{Path(p).stem}" for i, p in enumerate(SAMPLES)]
    assert [r[1] for r in rows] == [ibwire.columns(p).num_rows for p in SAMPLES]
    top = con.execute(f"SELECT sum(retransmitted_packets) FROM '{out}/rc_connections.parquet' "
                  f"WHERE capture_point = '{SAMPLES[0]}'").fetchall()[0][0]
    assert rows[0][2] == top > 0


def test_cli_export_with_jobs(tmp_path):
    pytest.importorskip("dask.distributed")
    rc, text, _ = run_cli("export", SAMPLES[0], "--parquet", tmp_path / "x", "--jobs", "2",
                          "--no-analysis")
    m = json.loads(text)
    assert rc == 0 and m["captures"][0]["packets"] == ibwire.columns(SAMPLES[0]).num_rows
    assert "infiniband.analysis.retransmission" not in _packets(tmp_path / "x").column_names
    assert run_cli("export", SAMPLES[0], "--parquet", tmp_path / "y",
                   "--bucket-ms", "0")[0] == 2
