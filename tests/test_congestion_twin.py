"""The vectorised congestion and QoS analyses (`congestion.congestion`, `.qos`) equal
their row-by-row reference twins (`congestion_ref`) to the last key of the document:
on every sample, on the given RoCE captures, on simulated congested traffic (RC and
UD, both directions, IPv4/IPv6/native) and on hand-made edge cases (times of zero,
CNPs without marks, repeated PSNs)."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest
from conftest import PCAPS, shared_captures

from ibwire.analysis.congestion import congestion, qos
from ibwire.analysis.congestion_ref import congestion_per_row, qos_per_row
from ibwire.analysis.credit_input import TIME_COLUMN, credit_columns

CAPTURES = sorted(PCAPS.glob("*.pcap")) + shared_captures("public", "rxe")[:12]


def _same(cols: dict[str, np.ndarray]) -> None:
    for gap in (None, 0, 4_000):
        assert json.dumps(congestion(cols, gap)) == json.dumps(congestion_per_row(cols, gap))
    for prio_map in ("auto", "pcp", "dscp", "dscp:26=3,48=6"):
        assert json.dumps(qos(cols, prio_map)) == json.dumps(qos_per_row(cols, prio_map))


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_captures(path):
    _same(credit_columns(str(path), strict=False))


@pytest.mark.parametrize("encap,seed", [("ib", 3), ("roce2", 4), ("roce2-v6", 5),
                                        ("ib-grh", 6)])
def test_simulated_congestion(encap, seed):
    from ibwire.gen.config import scenario
    from ibwire.gen.sim import simulate

    cfg = scenario("rc_clean", encap=encap, ecn=0.2, seed=seed, ud_messages=12,
                   connections=3, bidirectional=True, loss=0.02, cnp_gap_ns=20_000)
    path = os.path.join(tempfile.mkdtemp(), "c.pcap")
    simulate(cfg).write(path)
    cols = credit_columns(path)
    doc = congestion(cols)
    assert doc["ce_marks"] + doc["fecn"] > 0 and (doc["cnps"] > 0 or encap.startswith("ib"))
    _same(cols)


def test_edge_cases():
    """Zero times (the reference's `x or t`), shuffled times, CNPs with no marks back."""
    cols = credit_columns(str(PCAPS / "ud_cnp_roce2.pcap"))
    rng = np.random.default_rng(1)
    for variant in range(4):
        c = {k: v.copy() for k, v in cols.items()}
        ts = c[TIME_COLUMN]
        if variant == 0:
            ts[: len(ts) // 2] = 0
        elif variant == 1:
            rng.shuffle(ts)
        elif variant == 2:
            c["ip.dsfield.ecn"][:] = 0                        # no marks at all
        else:
            c["infiniband.bth.psn"][:] = 7                    # every request alike
        _same(c)


def test_empty():
    cols = credit_columns(str(PCAPS / "rc_clean_roce2.pcap"))
    _same({k: v[:0] for k, v in cols.items()})
