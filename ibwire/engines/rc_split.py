"""RC engine: the kernel pass split over groups of half-connections, run on parallel
threads.

The kernel keeps all its state per half-connection and reads only rows of the one
it is at, so passes over disjoint groups (`sel`) write disjoint rows and `counts`
rows, and together fill exactly what one pass would. The one thing they share is
the episode numbering: one pass numbers episodes in the order they start, so each
pass reports every episode's start row (`born`), and an episode's number in the
whole is its number in its pass plus the episodes of the other passes that started
at an earlier row (a row belongs to one pass only). The Numba kernel releases the
GIL (`nogil`), so the passes run at once, one per core.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

SPLIT_MIN_ROWS = 200_000    # below this, threads cost more than they save
MAX_PASSES = 8


def default_passes(n_rows: int) -> int:
    """Passes to run by default: one per usable core (no more than Numba's thread
    limit, `NUMBA_NUM_THREADS`, so one setting caps both), one on small captures."""
    if n_rows < SPLIT_MIN_ROWS:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:      # (not on every platform)
        cores = os.cpu_count() or 1
    return max(1, min(cores, numba.config.NUMBA_NUM_THREADS, MAX_PASSES))


def groups(hc: np.ndarray, n_hc: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each half-connection's group (0..k-1), balancing the rows: the largest first,
    each to the group with the fewest rows so far; and each group's rows."""
    rows = np.bincount(hc[hc >= 0], minlength=n_hc)
    load = np.zeros(k, dtype=np.int64)
    out = np.zeros(n_hc, dtype=np.int64)
    for h in np.argsort(-rows, kind="stable"):
        j = int(np.argmin(load))
        out[h] = j
        load[j] += rows[h]
    return out, load


def run_passes(run: Callable[..., int], args: tuple[Any, ...], hc: np.ndarray, n_hc: int,
               episode: np.ndarray, passes: int, threads: bool = True) -> None:
    """`run(*args, sel, born)` over `passes` groups of half-connections (on threads
    when `threads`), then the episode numbers made those of one pass."""
    k = max(1, min(passes, n_hc))
    if k == 1:
        run(*args, np.ones(n_hc, dtype=np.bool_), np.empty(0, dtype=np.int64))
        return
    group, rows = groups(hc, n_hc, k)
    # Four rules start episodes (`late_decided`, `late_resend_decided`, `copy_decided`,
    # `episode_start`), each at most one per row of its pass: 4 per row bounds them.
    # (Pages never written cost nothing.)
    caps = [4 * int(rows[j]) + 16 for j in range(k)]
    born = [np.empty(caps[j], dtype=np.int64) for j in range(k)]
    sels = [group == j for j in range(k)]

    def one(j: int) -> int:
        return run(*args, sels[j], born[j])

    if threads:
        with ThreadPoolExecutor(k) as ex:
            made = list(ex.map(one, range(k)))
    else:
        made = [one(j) for j in range(k)]
    for j in range(k):
        if made[j] > caps[j]:
            raise RuntimeError(f"RC kernel: {made[j]} episodes in one pass, past {caps[j]}")
    starts = [born[j][:made[j]] for j in range(k)]
    number = [np.arange(made[j], dtype=np.int64) + sum(
        np.searchsorted(starts[o], starts[j]) for o in range(k) if o != j)
        for j in range(k)]
    rows = np.flatnonzero(episode >= 0)
    g, e = group[hc[rows]], episode[rows]
    out = np.empty(len(rows), dtype=episode.dtype)
    for j in range(k):
        m = g == j
        out[m] = number[j][e[m]]
    episode[rows] = out
