"""Fuzz the packet decoder on every encapsulation: nothing escapes, every problem
is placed, every packet re-encodes to its bytes (architecture principle 3)."""

from __future__ import annotations

import collections
import random
from functools import partial

from fuzz_strategies import (
    ENCAPS,
    SCALE,
    Seed,
    apply_ops,
    mutants,
    packet_seeds,
    random_ops,
    seed_ops,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from steady_time import steady_seconds, timed

from ibwire import IPV4, LRH, UDP, decode, encode
from ibwire.capture import erf_record
from ibwire.constants import ERF_TYPE_ETH, VCRC_LEN
from ibwire.headers import BTH

DECODE_BUDGET = 75_000 * SCALE   # seeded-loop mutants; the Hypothesis test adds more
PER_INPUT_SECONDS = 0.5          # no input may take longer (no loop without progress)
# Reasons the decoder gives when it swallowed an exception: escapes in disguise.
SWALLOWED = ("internal error", "payload decoder failed")


def violation(data: bytes, encap: str | int, known: bool = False) -> str | None:
    """What is wrong with decoding `data`, or None. Never raises.

    Unless `known`, violations that match a reported, not yet fixed bug (KNOWN_BUGS,
    each pinned by an xfail test) are not counted: the loop stays a guard for new ones.
    """
    why = _violation(data, encap)
    if why and not known and any(pred(data, encap, why) for pred in KNOWN_BUGS.values()):
        return None
    return why


def _violation(data: bytes, encap: str | int) -> str | None:
    try:
        pkt = decode(data, encap)
        for m in pkt.problems:
            if not (isinstance(m.layer, str) and m.layer and isinstance(m.reason, str)
                    and m.reason):
                return f"problem without layer or reason: {m!r}"
            if not 0 <= m.offset <= len(data):
                return f"offset {m.offset} outside 0..{len(data)}: {m}"
            if any(s in m.reason for s in SWALLOWED):
                return f"swallowed exception: {m}"
            str(m)
        again = encode(pkt)
        if again != data:
            return f"encode(decode(x)) != x ({len(again)} vs {len(data)} bytes)"
        pkt.summary()
        for _name, _value, _lay in pkt.all_fields():
            pass
    except Exception as exc:  # noqa: BLE001 - this is what we look for
        return f"{type(exc).__name__}: {exc}"
    return None


def _report(failures: list[tuple[str, str | int, bytes, str]]) -> str:
    lines = [f"{len(failures)} escapes; first ones (reproduce with decode(bytes.fromhex(...), "
             "encap)):"]
    for name, encap, data, why in failures[:8]:
        lines.append(f"  seed={name} encap={encap!r} data={data.hex()} -> {why}")
    return "\n".join(lines)


def test_seeded_mutants_of_every_encapsulation_never_escape():
    seeds = packet_seeds()
    rng = random.Random(0x1B_0007)
    failures = []
    per_encap: collections.Counter[str | int] = collections.Counter()
    slowest = 0.0
    for seed, encap, _ops, data in mutants(rng, seeds, DECODE_BUDGET):
        check = partial(violation, data, encap)
        why, took = timed(check)
        slowest = max(slowest, steady_seconds(check, took, PER_INPUT_SECONDS))
        per_encap[encap] += 1
        if why:
            failures.append((seed.name, encap, data, why))
    print(f"decode fuzz: {sum(per_encap.values())} mutants, {len(failures)} escapes, "
          f"slowest {slowest * 1e3:.1f} ms; per encap {dict(per_encap)}")
    assert sum(per_encap.values()) == DECODE_BUDGET
    assert set(ENCAPS) <= set(per_encap), "every encapsulation is fuzzed"
    assert not failures, _report(failures)
    assert slowest < PER_INPUT_SECONDS


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_hypothesis_mutants_never_escape(data):
    """Hypothesis picks the structure (seed, ops, encap); 20 seeded variants ride along."""
    seeds = packet_seeds()
    seed, ops = data.draw(seed_ops(seeds))
    encap = data.draw(st.sampled_from([seed.encap, *ENCAPS]))
    mutant = apply_ops(seed, ops, seeds)
    assert violation(mutant, encap) is None, (seed.name, encap, ops, mutant.hex())
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    base = Seed(seed.name, encap, mutant, seed.fields)
    for _ in range(20):
        more = random_ops(rng, base)
        variant = apply_ops(base, more, seeds)
        assert violation(variant, encap) is None, (seed.name, encap, ops, more, variant.hex())


def test_extreme_length_fields_on_every_seed():
    """Each length field of each seed set to every extreme, alone."""
    from fuzz_strategies import LENGTH_FIELDS

    count, failures = 0, []
    for seed in packet_seeds():
        for i, ref in enumerate(seed.fields):
            if ref.key not in LENGTH_FIELDS:
                continue
            for mode in range(9):
                mutant = apply_ops(seed, [("field", i, mode, 0xDEADBEEF)])
                for cut in (len(mutant), len(mutant) - 1):
                    count += 1
                    why = violation(mutant[:cut], seed.encap)
                    if why:
                        failures.append((seed.name, seed.encap, mutant[:cut], why))
    print(f"length-field extremes: {count} packets")
    assert count > 1000 and not failures, _report(failures)


def test_every_opcode_on_every_seed_header():
    """The BTH opcode swapped through all 256 values on each distinct generated seed."""
    seeds = [s for s in packet_seeds(False) if any(r.key == ("bth", "opcode") for r in s.fields)]
    count, failures = 0, []
    for seed in seeds[::4]:
        i = next(i for i, r in enumerate(seed.fields) if r.key == ("bth", "opcode"))
        for code in range(256):
            mutant = apply_ops(seed, [("field", i, 9, code)])
            count += 1
            why = violation(mutant, seed.encap)
            if why:
                failures.append((seed.name, seed.encap, mutant, why))
    assert count >= 256 * 10 and not failures, _report(failures)


# -- bugs this fuzzer found (fixed; kept as regression tests) -------------------------
# A newly reported bug gets a predicate here that matches exactly its symptom
# (data, encap, why) -> bool, plus an xfail(strict=True) test, until it is fixed.
KNOWN_BUGS: dict = {}


def test_native_packet_without_vcrc_round_trips():
    """encode() used to append a computed VCRC to a packet captured without one."""
    data = encode(LRH(dlid=2, slid=1), BTH(opcode=4), payload=b"abcd")[:-VCRC_LEN]
    pkt = decode(data, "ib")
    assert pkt.problems == [] and pkt.vcrc is None
    assert encode(pkt) == data


def test_udp_length_shorter_than_ip_payload_keeps_every_byte():
    """The bytes between the UDP and IP ends used to be dropped, unmarked."""
    data = bytearray(encode(IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(), BTH(opcode=4),
                            payload=b"abcd"))
    length = IPV4.size + UDP.by_name["length"].offset
    data[length:length + 2] = (int.from_bytes(data[length:length + 2], "big") - 1).to_bytes(
        2, "big")
    pkt = decode(bytes(data), "ip")
    assert encode(pkt) == bytes(data)
    assert pkt.problems


def test_erf_ethernet_record_shorter_than_its_pad():
    """decode_erf used to mark the Ethernet layer at an offset past the end."""
    data = erf_record(b"\x00", 0, ERF_TYPE_ETH)
    pkt = decode(data, "erf")
    assert all(0 <= m.offset <= len(data) for m in pkt.problems), pkt.problems
