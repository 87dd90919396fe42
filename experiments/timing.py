"""The one timing rule of the benchmarks: run a call several times and keep
the best (the least disturbed) time."""

import time

__all__ = ["best_of"]


def best_of(fn, repeat, clock=time.perf_counter):
    """The least of ``repeat`` timings of ``fn()`` by ``clock`` (seconds).
    ``time.thread_time`` counts only this thread's CPU time, so that time
    spent waiting for a core on a shared machine is not counted."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best
