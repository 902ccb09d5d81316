"""Wall-clock timing for the benchmarks: the fastest of a few calls, so one busy moment does not count."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(call: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)
