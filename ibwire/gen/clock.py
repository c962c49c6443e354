"""Event-driven simulation clock (integer nanoseconds).

Events run in time order; events at the same instant run in the order they were
scheduled (a sequence number breaks ties), so a run is a pure function of its
inputs and seed. Nothing here knows about packets.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any


class Clock:
    """A heap of (time, seq, callback). `now` is the time of the running event."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._seq = 0
        self.events_run = 0
        self.stop_at: int | None = None     # set to end the run at that time

    def at(self, t: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` at absolute time `t` (never earlier than now)."""
        t = max(int(t), self.now)
        heapq.heappush(self._heap, (t, self._seq, fn, args))
        self._seq += 1

    def after(self, dt: int, fn: Callable[..., Any], *args: Any) -> None:
        self.at(self.now + int(dt), fn, *args)

    def run(self, until: int | None = None, max_events: int | None = None) -> None:
        heap = self._heap
        while heap:
            t, _, fn, args = heap[0]
            if (until is not None and t > until) or (self.stop_at is not None
                                                      and t > self.stop_at):
                break
            if max_events is not None and self.events_run >= max_events:
                break
            heapq.heappop(heap)
            self.now = t
            self.events_run += 1
            fn(*args)

    @property
    def pending(self) -> int:
        return len(self._heap)


class Timer:
    """A restartable one-shot timer: re-arming or cancelling voids the older deadline."""

    def __init__(self, clock: Clock, fn: Callable[[], Any]) -> None:
        self._clock = clock
        self._fn = fn
        self._gen = 0
        self.deadline: int | None = None

    def arm(self, delay: int) -> None:
        self._gen += 1
        self.deadline = self._clock.now + int(delay)
        self._clock.at(self.deadline, self._fire, self._gen)

    def cancel(self) -> None:
        self._gen += 1
        self.deadline = None

    @property
    def armed(self) -> bool:
        return self.deadline is not None

    def _fire(self, gen: int) -> None:
        if gen != self._gen:
            return
        self.deadline = None
        self._fn()
