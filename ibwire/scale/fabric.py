"""`ibwire fabric --jobs N`: the workers find the management frames of their spans
with the bulk engines and hand back only those frames; the MADs are decoded and
the fabric view built here, in file order, as `build_fabric` does.

Decoded MADs are not sent between processes (their layers refer to the decoder's
layouts); the frames are (about 300 bytes per MAD). In a data capture MADs are a
tiny share of the frames, so the scan that finds them is the work parallelised;
in a MAD-only capture (a sweep) the decode here dominates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.capture.frame import CaptureError, Frame
from ibwire.scale import chunks

_FIELDS = ("ibwire.offset.mad", "ibwire.fallback")


def mad_frames(task: chunks.Task) -> list[Frame] | None:
    """Frames of the span that may carry a MAD: a MAD header found by the kernels, or
    handed over by them (the per-packet decoder decides). None: read the file whole."""
    from ibwire.engines.columns import iter_chunks

    if task.count == chunks.WHOLE:
        return None
    out: list[Frame] = []
    for ch in iter_chunks(task.path, _FIELDS, fallback_decode=False, span=task.span):
        mad, _ = ch.array("ibwire.offset.mad")
        fb, _ = ch.array("ibwire.fallback")
        b = ch.batch
        for i in np.flatnonzero((mad >= 0) | fb).tolist():
            d = int(b.doff[i])
            out.append(Frame(index=b.first + i, ts_ns=int(b.ts[i]), linktype=int(b.lt[i]),
                             data=bytes(b.buf[d:d + int(b.cap[i])]), wire_len=int(b.wire[i]),
                             interface=int(b.ifc[i]), offset=int(b.roff[i])))
    return out


def build_fabric(paths: list[str], c: Any = None, chunk: int = 50_000) -> Any:
    """`analysis.fabric.build_fabric(paths)`, the frames found on the client's workers
    (None: in this process)."""
    from ibwire.analysis.fabric import fabric_of
    from ibwire.analysis.fabric_mads import Mad, file_mads, packet_mads
    from ibwire.decoder import decode
    from ibwire.scale.runner import map_ordered

    rejected: list[tuple[int, int, str]] = []
    errors: list[str] = []
    tasks = chunks.tasks(paths, chunk, c)
    mads: list[Mad] = []
    for task, frames in zip(tasks, map_ordered(mad_frames, tasks, c)):
        if frames is None:   # damage: read as build_fabric reads it (what was read, the error)
            try:
                for m in file_mads(task.path, task.capture, rejected):
                    mads.append(m)
            except (CaptureError, OSError) as exc:
                errors.append(str(exc))
            continue
        numbered = ((f.index + 1, decode(f.data, f.linktype, frame=f)) for f in frames)
        mads += packet_mads(numbered, task.capture, rejected)
    return fabric_of(mads, rejected, errors)
