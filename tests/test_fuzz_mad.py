"""Fuzz the MAD decoder: MADs of every supported class and attribute (generated, and
the shared MAD captures) with their class, attribute, method, RMPP and SA attribute
offset swapped and stretched; decoded in packets and bare ("mad")."""

from __future__ import annotations

import random

import pytest
from fuzz_strategies import (
    DOMAINS,
    HAVE_MAD,
    LENGTH_FIELDS,
    SCALE,
    apply_ops,
    mutants,
    packet_seeds,
    seed_ops,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_decode import _report, violation

from ibwire import decode

pytestmark = pytest.mark.skipif(not HAVE_MAD, reason="ibwire.mad does not import yet")
MAD_BUDGET = 10_000 * SCALE
MAD_KEYS = {k for k in (*LENGTH_FIELDS, *DOMAINS) if k[0] in ("mad", "rmpp", "sa")}


def mad_seeds():
    """Seeds whose decode has a MAD header layer (generated and captured)."""
    return [s for s in packet_seeds() if any(r.layer == "mad" for r in s.fields)]


def test_mad_seeds_cover_every_class_natively_and_bare():
    seeds = mad_seeds()
    classes = {decode(s.data, s.encap)["infiniband.mad.mgmtclass"] for s in seeds}
    assert {0x01, 0x81, 0x03, 0x04, 0x07, 0x21} <= classes
    assert any(s.encap == "mad" for s in seeds) and any(s.encap == "ib" for s in seeds)


def test_seeded_mad_mutants_never_escape():
    seeds = mad_seeds()
    rng = random.Random(0x1B_0AD7)
    count, failures = 0, []
    for seed, encap, _ops, data in mutants(rng, seeds, MAD_BUDGET):
        count += 1
        if why := violation(data, encap):
            failures.append((seed.name, encap, data, why))
    print(f"MAD fuzz: {count} mutants over {len(seeds)} MAD seeds, {len(failures)} escapes")
    assert count == MAD_BUDGET and not failures, _report(failures)


def test_mad_fields_at_every_extreme_and_domain_value():
    """Class, attribute, method, RMPP type/flags/payload length, SA attribute offset."""
    count, failures = 0, []
    for seed in mad_seeds():
        for i, ref in enumerate(seed.fields):
            if ref.key not in MAD_KEYS:
                continue
            values = [("field", i, mode, 0) for mode in range(9)]
            domain = DOMAINS.get(ref.key, ())
            values += [("field", i, 9, k) for k in range(0, len(domain), 1 + len(domain) // 12)]
            for op in values:
                mutant = apply_ops(seed, [op])
                count += 1
                if why := violation(mutant, seed.encap):
                    failures.append((seed.name, seed.encap, mutant, why))
    print(f"MAD field extremes: {count} packets")
    assert count > 3_000 and not failures, _report(failures)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_hypothesis_mad_mutants_never_escape(data):
    seeds = mad_seeds()
    seed, ops = data.draw(seed_ops(seeds))
    mutant = apply_ops(seed, ops, seeds)
    assert violation(mutant, seed.encap) is None, (seed.name, ops, mutant.hex())
