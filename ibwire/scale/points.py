"""Capture-point sets for tests and benchmarks: a capture as seen further downstream.

`downstream(src, dst, drop, delay_ns)` writes the frames of `src` that reached the
next capture point: those whose 1-based frame number is not in `drop`, later by
`delay_ns` (the wire and switch between the points). Together with `src` it forms a
two-point set in which exactly the dropped request PSNs were lost between the points.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


def downstream(src: str, dst: str, drop: Iterable[int] = (), delay_ns: int = 500) -> int:
    """Write the downstream view of `src` to `dst` (pcap); returns frames written."""
    from ibwire.capture import open_capture
    from ibwire.capture.open import write_capture

    gone = set(drop)
    with open_capture(src) as frames:
        kept = [dataclasses.replace(f, ts_ns=f.ts_ns + delay_ns) for f in frames
                if f.index + 1 not in gone]
    return write_capture(dst, kept, "pcap")
