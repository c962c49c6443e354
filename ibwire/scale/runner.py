"""Run the analyses in chunks: in this process, on a local Dask cluster, or on an
existing one (`--jobs N`, `--scheduler ADDRESS`). The same functions run in every
case, so the results do not depend on where they ran (docs/scale-out.md).

    decode chunks (map)  ->  split by endpoint-pair hash  ->  per partition: concat,
    RC engine per capture point, point comparison (reduce)  ->  gather, renumber
"""

from __future__ import annotations

import argparse
import io
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ibwire.scale import chunks, rcmerge

DEFAULT_CHUNK = 50_000


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def add_options(p: argparse.ArgumentParser) -> None:
    """--jobs, --scheduler and --chunk, the same on every analysing command."""
    p.add_argument("--jobs", type=_positive, default=1, metavar="N",
                   help="run in N parallel workers (a local Dask cluster; 1 = this process)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster (e.g. tcp://host:8786)")
    p.add_argument("--chunk", type=_positive, metavar="FRAMES",
                   help=f"frames per decode task (default {DEFAULT_CHUNK}); given alone, "
                        "the chunked path runs in this process (same results)")


def parallel(args: argparse.Namespace) -> bool:
    """Whether the command takes the chunked path (--jobs > 1, --scheduler or --chunk)."""
    return bool(getattr(args, "scheduler", None)) or getattr(args, "jobs", 1) > 1 \
        or getattr(args, "chunk", None) is not None


def chunk_size(args: argparse.Namespace) -> int:
    return getattr(args, "chunk", None) or DEFAULT_CHUNK


@contextmanager
def client(jobs: int = 1, scheduler: str | None = None, processes: bool = True
           ) -> Iterator[Any]:
    """A Dask client (None: run here, in this process)."""
    if not scheduler and jobs <= 1:
        yield None
        return
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise SystemExit("--jobs/--scheduler need Dask: pip install 'ibwire[dask]'") from exc
    if scheduler:
        with Client(scheduler) as c:
            yield c
        return
    with local_cluster(jobs, processes) as cluster, Client(cluster) as c:
        yield c


def local_cluster(jobs: int, processes: bool = True) -> Any:
    """The LocalCluster of `--jobs N`: N single-threaded workers.

    Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, which also fixes
    glibc's mmap threshold: every array over 128 kB is then a fresh mapping, faulted
    in page by page. The workers allocate many such arrays per chunk (columns of tens
    of thousands of rows); measured, that cost 40-60 % more CPU than the same work in
    this process. Memory here is bounded by the chunk size, so the setting is dropped
    (a remote cluster is configured by whoever runs it: docs/scale-out.md)."""
    import dask
    from dask.distributed import LocalCluster
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return LocalCluster(n_workers=jobs, threads_per_worker=1, processes=processes,
                            dashboard_address=None)


def _decode_split(task: chunks.Task, parts: int) -> list[dict[str, Any]]:
    return chunks.split(chunks.decode(task), parts)


def _reduce(*pieces: dict[str, Any]) -> dict[str, Any]:
    return rcmerge.analyse(chunks.concat(list(pieces)))


def rc_document(paths: list[str], c: Any = None, chunk: int = DEFAULT_CHUNK,
                parts: int | None = None) -> dict[str, Any]:
    """`ibwire rc -T json` of one or many captures (points), chunked and shuffled."""
    tasks = chunks.tasks(paths, chunk, c)
    if c is None:
        parts = parts or 1
        mapped = [_decode_split(t, parts) for t in tasks]
        results = [_reduce(*(m[p] for m in mapped)) for p in range(parts)]
    else:
        parts = parts or 2 * max(1, len(c.scheduler_info()["workers"]))
        mapped = c.map(_decode_split, tasks, parts=parts, pure=False)
        reduced = [c.submit(_reduce, *[c.submit(operator.getitem, m, p) for m in mapped])
                   for p in range(parts)]
        results = c.gather(reduced)
    return rcmerge.gather(results, paths)


def map_ordered(fn: Callable[[Any], Any], items: list[Any], c: Any = None) -> list[Any]:
    """fn(item) for each item, on the client's workers (None: here), in item order. A
    task's exception is raised here (e.g. `CaptureError` of a damaged file)."""
    if c is None:
        return [fn(x) for x in items]
    return c.gather(c.map(fn, items, pure=False))


def per_capture(fn: Callable[[str], str], paths: list[str], c: Any = None) -> list[str]:
    """fn(path) for each capture, on the workers; results in the order of `paths`."""
    if c is None:
        return [fn(p) for p in paths]
    return c.gather(c.map(fn, paths, pure=False))


def stats_text(path: str, argv: tuple[str, ...] = ()) -> str:
    """`ibwire stats [argv] path` as text (run on a worker)."""
    from ibwire.cli.main import build_parser, run
    from ibwire.cli.output import Output

    buf = io.StringIO()
    args = build_parser().parse_args(["stats", *argv, path])
    args.jobs, args.scheduler = 1, None
    run(args, Output(buf, color=False))
    return buf.getvalue()
