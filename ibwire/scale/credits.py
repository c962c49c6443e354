"""`ibwire credits --jobs N`: the credit/congestion columns of one capture, built by
the workers span by span with the bulk engines, gathered in frame order.

The link report itself (`link_report`) runs once, on the gathered columns: its
state runs along whole links and the frame order (credit counters, PFC pause
intervals, CNP spacing), and its input is small next to decoding (about 150 bytes
per frame), so gathering columns keeps the result the same by construction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.scale import chunks


def part(task: chunks.Task) -> dict[str, np.ndarray]:
    """The columns of one span (a file read whole: `credit_columns` itself)."""
    from ibwire.analysis import bulk_input as bi
    from ibwire.analysis.credit_bulk import DTYPES, FIELDS, chunk_columns
    from ibwire.analysis.credit_input import credit_columns

    if task.count == chunks.WHOLE:
        return credit_columns(task.path)
    return bi.concat([chunk_columns(ch) for ch in bi.chunks(task.path, FIELDS,
                                                            span=task.span)], DTYPES)


def credit_columns(path: str, c: Any = None, chunk: int = 50_000) -> dict[str, np.ndarray]:
    """`credit_input.credit_columns(path)`, decoded in spans on the client's workers
    (None: in this process). Raises `CaptureError` as it does."""
    from ibwire.analysis import bulk_input as bi
    from ibwire.analysis.credit_bulk import DTYPES
    from ibwire.scale.runner import map_ordered

    parts = map_ordered(part, chunks.tasks([path], chunk, c), c)
    return parts[0] if len(parts) == 1 else bi.concat(parts, DTYPES)
