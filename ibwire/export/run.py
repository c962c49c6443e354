"""`ibwire export`: packets, RC, credit and fabric tables of captures as Parquet."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ibwire.export import flatten, packets
from ibwire.scale import runner

SCHEMA = "ibwire-export/1"


def credit_doc(path: str) -> dict[str, Any]:
    from ibwire.analysis.credit_input import credit_columns
    from ibwire.analysis.link_report import LinkOptions, link_report
    return link_report(credit_columns(path), LinkOptions(), file=path)


def _packets(job: tuple[int, str], out_dir: str, bucket_ns: int, analysis: bool) -> int:
    index, path = job
    return packets.write(path, index, out_dir, bucket_ns, analysis)


def export(paths: list[str], out_dir: str, *, bucket_ns: int = 1_000_000_000,
           analysis: bool = True, client: Any = None, chunk: int = runner.DEFAULT_CHUNK
           ) -> dict[str, Any]:
    """Write the dataset; returns the manifest (also `out_dir/manifest.json`)."""
    from ibwire.analysis.fabric import build_fabric
    from ibwire.analysis.fabric_json import fabric_dict

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = list(enumerate(paths))
    fn = partial(_packets, out_dir=str(out), bucket_ns=bucket_ns, analysis=analysis)
    rows = (client.gather(client.map(fn, jobs, pure=False)) if client is not None
            else [fn(j) for j in jobs])
    names = {p: packets.point_name(p, i) for i, p in jobs}
    docs: dict[str, list[dict[str, Any]]] = {}
    rc = runner.rc_document(paths, client, chunk)
    _add(docs, flatten.tables(rc, "rc"))
    for p in paths:
        _add(docs, flatten.tables(credit_doc(p), "credits"), names[p])
    _add(docs, flatten.tables(fabric_dict(build_fabric(paths)), "fabric"))
    written = {}
    for name, recs in sorted(docs.items()):
        pq.write_table(flatten.arrow(recs), out / f"{name}.parquet")
        written[name] = len(recs)
    manifest = {"schema": SCHEMA, "captures": [{"path": p, "capture": names[p], "packets": n}
                                               for p, n in zip(paths, rows)],
                "time_bucket_ns": bucket_ns, "packets": "packets/", "tables": written}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _add(docs: dict[str, list[dict[str, Any]]], new: dict[str, list[dict[str, Any]]],
         point: str | None = None) -> None:
    for name, recs in new.items():
        if point is not None:
            recs = [{"capture": point, **r} for r in recs]
        docs.setdefault(name, []).extend(recs)


def schema_of(out_dir: str) -> dict[str, dict[str, str]]:
    """{table: {column: Arrow type}} of an export (packets: the dataset, partition
    columns included); docs/schemas/export-tables.json is this for the samples."""
    out = Path(out_dir)
    sch = packets.dataset(out_dir).schema
    tables = {"packets": {f.name: str(f.type) for f in sch}}
    for f in sorted(out.glob("*.parquet")):
        tables[f.stem] = {x.name: str(x.type) for x in pq.read_schema(f)}
    return tables
