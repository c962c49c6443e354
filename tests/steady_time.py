"""Time bounds in the fuzz guards: an input over its bound is timed again before it fails.

The bounds are there to catch a loop without progress, which is slow on every run. A
busy CI machine now and then stalls a process for about a second (seen once: one decode
mutant took 1.06 s in CI, that same input 3 ms on a rerun), so a single slow timing is
not taken for a slow input: only the least of `tries` timings is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """fn()'s result and the seconds it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def steady_seconds(fn: Callable[[], object], first: float, limit: float,
                   tries: int = 3) -> float:
    """`first` (fn's timing already taken) or, when it is not under `limit`, the least
    of it and up to `tries` - 1 further timings of fn(), stopping once one is under."""
    best = first
    for _ in range(tries - 1):
        if best < limit:
            break
        best = min(best, timed(fn)[1])
    return best
