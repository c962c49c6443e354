"""The RC engine as an analysis field provider (`infiniband.analysis.*`)."""

from __future__ import annotations

from ibwire.analysis.providers import EXPERT, FieldProvider, RowValues, register
from ibwire.analysis.rc_fields import PACKET_FIELDS


def _run(path: str) -> RowValues:
    from ibwire.analysis.rc import analyze
    from ibwire.analysis.rc_input import rc_columns
    from ibwire.analysis.rc_report import expert_items, packet_values

    res = analyze(rc_columns(path, strict=False))   # the reader reports file errors
    n = len(res.flags)

    def values(row: int) -> dict:
        if row >= n:
            return {}
        out = packet_values(res, row)
        items = expert_items(res, row)
        if items:
            out[EXPERT] = items
        return out
    return values


RC_PROVIDER = FieldProvider("rc", PACKET_FIELDS, _run)
register(RC_PROVIDER)
