"""Direct psycopg access: waiters served in arrival order, rows as plain tuples, connections closed on dispose."""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine

from judgewatch.storage.direct import FairSlots, direct_pool, fetch, is_direct


def test_a_slot_given_back_goes_to_the_waiters_before_the_caller_asking_again() -> None:
    slots = FairSlots(1)
    assert slots.acquire(timeout=1)
    order: list[str] = []

    def take(name: str) -> None:
        assert slots.acquire(timeout=5)
        order.append(name)
        slots.release()

    waiters = [threading.Thread(target=take, args=(name,)) for name in ("a", "b")]
    for queued, thread in enumerate(waiters, start=1):
        thread.start()
        while len(slots._waiters) < queued:
            time.sleep(0.001)
    slots.release()
    take("again")  # gave the slot back and asks at once, as a lease followed by a submit does
    for thread in waiters:
        thread.join(timeout=5)
    assert order == ["a", "b", "again"]


def test_a_wait_that_runs_out_leaves_the_queue_and_says_so() -> None:
    slots = FairSlots(1)
    assert slots.acquire(timeout=1)
    assert slots.acquire(timeout=0.01) is False
    assert not slots._waiters
    slots.release()
    assert slots.acquire(timeout=0.01)


def test_rows_are_named_tuples_in_utc_and_the_pool_closes_with_the_engine(engine: Engine) -> None:
    assert is_direct(engine) is (engine.dialect.name == "postgresql")
    if not is_direct(engine):
        return  # SQLite's statements run through SQLAlchemy: nothing direct to check
    (row,) = fetch(engine=engine, sql="SELECT now() AS at, %(x)s::int + 1 AS y", params={"x": 1}, repeatable=True)
    assert row.y == 2 and row.at.utcoffset().total_seconds() == 0
    pool = direct_pool(engine)
    engine.dispose()
    assert pool._closed and not pool._idle
