"""Credit, PFC and CNP analysis as a field provider for `ibwire dump -Y / -T fields`
(`ibwire.analysis.providers`): the values of `credit_fields` per frame, and expert
items for FCTBS mismatches, sends without credits and frames sent while paused."""

from __future__ import annotations

import numpy as np

from ibwire.analysis.credit_fields import ABSENT, FIELDS, credit_fields
from ibwire.analysis.providers import EXPERT, FieldProvider, RowValues, register

MISSING = "infiniband.analysis.fctbs_missing_blocks"
CREDITS = "infiniband.analysis.credits_available"
STALL = "infiniband.analysis.credit_stall"
PAUSED = "ibwire.pfc.paused"
Item = tuple[str, str, str, str]          # severity, group, protocol, summary


def _expert(v: dict) -> list[Item]:
    out = []
    if v.get(MISSING, 0) > 0:
        out.append(("Warn", "Sequence", "InfiniBand Link",
                    f"FCTBS is {v[MISSING]} blocks ahead of the captured data packets "
                    "(packets missing from the capture)"))
    if STALL in v and v.get(CREDITS, 0) < 0:
        out.append(("Error", "Protocol", "InfiniBand",
                    "Data packet sent beyond the link credit limit"))
    if v.get(PAUSED):
        out.append(("Note", "Sequence", "Ethernet",
                    "Frame sent on a priority its sender was told to pause (PFC)"))
    return out


def expert_rows(fields: dict[str, np.ndarray]) -> list[tuple[Item, np.ndarray]]:
    """Each expert item `_expert` gives, with the rows (0-based) it gives it for, from
    `credit_fields` arrays at once; items in order of their first row."""
    miss, credits = fields[MISSING], fields[CREDITS]
    found = [(_expert({MISSING: v})[0], np.flatnonzero(miss == v))
             for v in np.unique(miss[miss > 0]).tolist()]
    for item, rows in ((_expert({STALL: 0, CREDITS: -1})[0],
                        (fields[STALL] != ABSENT) & (credits != ABSENT) & (credits < 0)),
                       (_expert({PAUSED: 1})[0],
                        (fields[PAUSED] != ABSENT) & (fields[PAUSED] != 0))):
        if rows.any():
            found.append((item, np.flatnonzero(rows)))
    found.sort(key=lambda f: int(f[1][0]))
    return found


def _run(path: str) -> RowValues:
    cols = credit_fields(path, strict=False)
    n = len(next(iter(cols.values())))

    def values(row: int) -> dict:
        if row >= n:
            return {}
        out = {name: int(a[row]) for name, a in cols.items() if a[row] != ABSENT}
        items = _expert(out)
        if items:
            out[EXPERT] = items
        return out
    return values


CREDITS_PROVIDER = FieldProvider("credits", tuple((n, ft, label) for n, (ft, label) in
                                                  FIELDS.items()), _run)
register(CREDITS_PROVIDER)
