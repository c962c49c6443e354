"""Record spans (ibwire.engines.span) and the chunked credits/fabric/rc paths: the
same records, columns and documents whatever the chunking, format and workers;
damaged files read whole, as without spans."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest
from test_cli_common import run_cli

from ibwire.engines import scan
from ibwire.engines.span import NO_OFFSET, record_index, span_batches, spans
from ibwire.scale import chunks, runner
from ibwire.scale.credits import credit_columns as chunked_credits
from ibwire.scale.fabric import build_fabric as chunked_fabric


@pytest.fixture(scope="module")
def caps(tmp_path_factory):
    """One generated native-IB scenario (link credits, MADs, CM, marks, corruption) as
    pcap, pcapng, ERF and gzip; a truncated and a garbled copy."""
    from ibwire.gen.cli import main as gen
    d = tmp_path_factory.mktemp("spans")
    out = {}
    for fmt in ("pcap", "pcapng", "erf"):
        out[fmt] = str(d / f"x.{fmt}")
        gen(["--encap", "ib", "--link-credits", "64", "--fc-period", "100000", "--mads",
             "--cm", "--ecn", "0.05", "--corrupt", "0.01", "--loss", "0.01", "--packets",
             "300", "--connections", "2", "--seed", "3", "--format", fmt, "-o", out[fmt]])
    out["gz"] = str(d / "x.pcap.gz")
    with open(out["pcap"], "rb") as src, gzip.open(out["gz"], "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw = open(out["pcap"], "rb").read()
    out["cut"] = str(d / "cut.pcap")
    open(out["cut"], "wb").write(raw[:len(raw) * 2 // 3])
    out["garbled"] = str(d / "garbled.pcap")
    mid = len(raw) // 2
    open(out["garbled"], "wb").write(raw[:mid] + b"\xff" * 40 + raw[mid + 40:])
    return out


@pytest.fixture(scope="module")
def four():
    """A 4-worker LocalCluster (threads: quick to start), shared by the module."""
    pytest.importorskip("dask.distributed")
    with runner.client(4, processes=False) as c:
        assert len(c.scheduler_info()["workers"]) == 4
        yield c


def _records(batches) -> dict[str, np.ndarray]:
    rows = {k: [] for k in ("first", "cap", "wire", "ts", "lt", "ifc", "roff", "data")}
    for b in batches:
        rows["first"].append(np.arange(b.first, b.first + len(b)))
        for k in ("cap", "wire", "ts", "lt", "ifc", "roff"):
            rows[k].append(np.asarray(getattr(b, k)).copy())
        rows["data"] += [bytes(b.buf[int(o):int(o) + int(n)]) for o, n in zip(b.doff, b.cap)]
    return {k: (v if k == "data" else np.concatenate(v)) for k, v in rows.items()}


def _same(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] if k == "data" else np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "erf", "gz"])
def test_spans_give_the_records_of_the_whole_scan(caps, fmt):
    path = caps[fmt]
    whole = _records(scan.batches(path))
    n = len(whole["cap"])
    assert n > 400
    # One-record spans only where they seek: elsewhere each span scans what precedes it.
    for every in ((1, 7, 100, 10**6) if fmt == "pcap" else (7, 100, 10**6)):
        idx = record_index(path, every)
        assert idx.clean and idx.count == n and len(idx.offsets) == -(-n // every)
        if fmt == "pcap":   # the offsets are those of the records, read directly
            assert idx.offsets == whole["roff"][::every].tolist()
        else:
            assert set(idx.offsets) == {NO_OFFSET}
        got = _records(b for s in spans(idx, every) for b in span_batches(path, *s, chunk=64))
        assert _same(got, whole)


def test_a_damaged_file_is_one_whole_task_reported_as_without_spans(caps):
    for name in ("cut", "garbled"):
        assert not record_index(caps[name], 10).clean
        assert [t.count for t in chunks.tasks([caps[name]], 10)] == [chunks.WHOLE]
        for cmd in (("credits", caps[name], "-T", "json"), ("fabric", caps[name], "-T", "json"),
                    ("rc", caps[name], "-T", "json")):
            plain = run_cli(*cmd)
            spanned = run_cli(*cmd, "--chunk", "10")
            if cmd[0] == "rc":   # rc's chunked document has the same connections
                assert plain[0] == spanned[0] and plain[2] == spanned[2]
            else:
                assert plain == spanned


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "erf", "gz"])
def test_credits_and_fabric_json_whatever_the_chunking(caps, fmt):
    path = caps[fmt]
    for cmd in (("credits", path, "-T", "json"), ("fabric", path, "-T", "json")):
        rc, ref, err = run_cli(*cmd)
        assert rc == 0 and not err and len(ref) > 500
        for chunk in ("29", "5000"):
            assert run_cli(*cmd, "--chunk", chunk) == (0, ref, "")


def test_credits_and_fabric_equal_on_1_and_4_dask_workers(caps, four):
    """The must-show for the tables added this time: the columns, the report and the
    fabric view of 1 worker == of a 4-worker LocalCluster."""
    from ibwire.analysis.credit_input import credit_columns
    from ibwire.analysis.fabric import build_fabric
    from ibwire.analysis.fabric_json import fabric_dict

    path = caps["pcap"]
    ref = credit_columns(path)
    for c, chunk in ((None, 50), (four, 50), (four, 13)):
        got = chunked_credits(path, c, chunk)
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), k
    paths = [caps["pcap"], caps["pcapng"], caps["cut"]]
    fab = json.dumps(fabric_dict(build_fabric(paths)), indent=1)
    one = json.dumps(fabric_dict(chunked_fabric(paths, None, 13)), indent=1)
    many = json.dumps(fabric_dict(chunked_fabric(paths, four, 13)), indent=1)
    assert one == many == fab and '"nodes"' in fab
    rc1, out1, _ = run_cli("credits", path, "-T", "json")
    rc4, out4, _ = run_cli("credits", path, "-T", "json", "--jobs", "2", "--chunk", "60")
    assert rc1 == rc4 == 0 and out1 == out4


@pytest.mark.parametrize("fmt", ["pcapng", "erf", "gz"])
def test_rc_json_whatever_the_format_and_chunking(caps, fmt):
    path = caps[fmt]
    whole = runner.rc_document([path], None, chunk=10**6, parts=1)
    assert whole["connections"]
    rc, ref, _ = run_cli("rc", path, "-T", "json")
    assert rc == 0 and json.loads(ref) == whole    # `ibwire rc`'s document, numbering too
    for chunk, parts in ((29, 3), (1000, 2)):
        assert runner.rc_document([path], None, chunk=chunk, parts=parts) == whole
