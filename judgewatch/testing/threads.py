"""Run callables in threads that start together (a barrier) and collect what they raised: concurrency tests."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_together(workers: list[Callable[[], None]], *, timeout_s: float = 300.0) -> list[BaseException]:
    """Start every worker at once, wait for all (at most `timeout_s` each), return the exceptions they raised.

    Fails (AssertionError) when a worker is still running after its timeout: a hung thread is a failure."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(workers))

    def wrap(work: Callable[[], None]) -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    return errors
