"""The fuzz guards' time bound: one stalled timing is retried, a slow input still fails."""

from __future__ import annotations

import time

from steady_time import steady_seconds, timed


def test_a_stall_once_is_retimed_and_forgiven():
    calls = []
    took = steady_seconds(lambda: calls.append(1), first=5.0, limit=0.5)
    assert took < 0.5 and len(calls) == 1      # one retry was enough


def test_an_input_slow_every_time_stays_slow():
    calls = []

    def slow() -> None:
        calls.append(1)
        time.sleep(0.02)
    _, first = timed(slow)
    assert steady_seconds(slow, first, limit=0.01) >= 0.01
    assert len(calls) == 3                     # timed once, retried twice


def test_a_fast_first_timing_is_not_retried():
    calls = []
    assert steady_seconds(lambda: calls.append(1), first=0.001, limit=0.5) == 0.001
    assert calls == []
