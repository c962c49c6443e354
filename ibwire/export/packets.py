"""Packets of one capture as Parquet files: `ibwire.columns` plus the capture point,
the time bucket and the RC engine's per-frame analysis fields.

Files go to `DIR/packets/capture=NAME/time_bucket=N/part-K-I.parquet` (Hive
partitioning: readers add `capture` and `time_bucket` back as columns).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

CAPTURE_POINT = "ibwire.capture_point"
TIME = "ibwire.frame.time_ns"
PARTITION = pa.schema([("capture", pa.string()), ("time_bucket", pa.int64())])
_TYPES = {"bool": pa.bool_(), "uint32": pa.uint32(), "string": pa.string(),
          "double": pa.float64()}


def point_name(path: str, index: int) -> str:
    """The capture's partition value: its file name, made safe for a directory name."""
    stem = re.sub(r"\.(pcapng|pcap|erf)(\.gz)?$", "", Path(path).name)
    return f"{index:03d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', stem)}"


def analysis_columns(path: str) -> dict[str, pa.Array]:
    """`infiniband.analysis.*` per frame (row i = frame i + 1): null where the RC
    engine did not analyse the frame, false/true for its flags where it did."""
    from ibwire.analysis.rc import analyze
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.analysis.rc_report import PACKET_FIELDS, packet_values

    res = analyze(rc_columns(path, strict=False))
    n = len(res.flags)
    values: dict[str, list[Any]] = {name: [None] * n for name, _, _ in PACKET_FIELDS}
    bools = [name for name, ftype, _ in PACKET_FIELDS if ftype == "bool"]
    for row in np.flatnonzero(np.asarray(res.streams.hc) >= 0).tolist():
        for name in bools:
            values[name][row] = False
        for name, v in packet_values(res, row).items():
            values[name][row] = v
    return {name: pa.array(values[name], _TYPES[ftype]) for name, ftype, _ in PACKET_FIELDS}


def tables(path: str, point: str, bucket_ns: int, analysis: bool = True,
           chunk: int = 65536) -> Iterator[pa.Table]:
    """The capture's packet tables, chunk by chunk, with the export's extra columns."""
    import ibwire

    extra = analysis_columns(path) if analysis else {}
    start = 0
    for t in ibwire.iter_columns(path, chunk=chunk):
        n = t.num_rows
        t = t.append_column(CAPTURE_POINT, pa.array([point] * n, pa.string()))
        for name, arr in extra.items():
            part = arr[start:start + n]
            if len(part) < n:          # frames the RC input stopped before (damage)
                part = pa.concat_arrays([part, pa.nulls(n - len(part), arr.type)])
            t = t.append_column(name, part)
        start += n
        time = t.column(TIME).to_numpy(zero_copy_only=False)
        t = t.append_column("capture", pa.array([point] * n, pa.string()))
        yield t.append_column("time_bucket", pa.array(time // bucket_ns, pa.int64()))


def write(path: str, index: int, out_dir: str, bucket_ns: int, analysis: bool = True,
          chunk: int = 65536) -> int:
    """Write one capture's packets under `out_dir/packets`; returns the rows written."""
    import pyarrow.dataset as ds

    point = point_name(path, index)
    rows = 0
    for i, t in enumerate(tables(path, point, bucket_ns, analysis, chunk)):
        rows += t.num_rows
        ds.write_dataset(t, str(Path(out_dir) / "packets"), format="parquet",
                         partitioning=ds.partitioning(PARTITION, flavor="hive"),
                         basename_template=f"part-{i}-{{i}}.parquet",
                         existing_data_behavior="overwrite_or_ignore")
    return rows


def dataset(out_dir: str) -> Any:
    """The export's packets as a `pyarrow.dataset.Dataset` (partition columns typed)."""
    import pyarrow.dataset as ds
    return ds.dataset(str(Path(out_dir) / "packets"), format="parquet",
                      partitioning=ds.partitioning(PARTITION, flavor="hive"))
