"""psycopg straight, for the few statements run on every key press (docs/review_queue.md says why): a small pool of
autocommit connections per PostgreSQL engine. A statement is its own transaction, so a write of several rows must be
one statement; a connection the server dropped is thrown away and a `repeatable` statement run again.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy import Engine, event

from judgewatch.storage import nul_free

logger = logging.getLogger(__name__)

CHECKOUT_TIMEOUT_S = 30.0  # as SQLAlchemy's pool: a caller waits this long for a free connection, then fails
# Statements in flight at once per process. More than the database server has cores to run them only queue inside
# PostgreSQL (and each new connection is a process to fork and warm); a waiting caller here is handed the next
# free connection in arrival order, which costs microseconds. Measured in bench/README.md (review queue).
DIRECT_POOL_SIZE = 8


class FairSlots:
    """A semaphore that serves waiters first come, first served: a caller that gives a slot back and asks again
    at once (lease, then submit) queues behind those already waiting instead of taking it back."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._lock = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self, *, timeout: float) -> bool:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            gate = threading.Lock()
            gate.acquire()
            self._waiters.append(gate)
        if gate.acquire(timeout=timeout):
            return True  # release() handed its slot to this caller
        with self._lock:
            if gate in self._waiters:
                self._waiters.remove(gate)
                return False
        return True  # handed over just as the wait ran out

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()  # the slot passes straight to the longest waiter
            else:
                self._free += 1


class DirectPool:
    """Autocommit psycopg connections for one engine's database; safe to share between threads."""

    def __init__(self, engine: Engine, *, size: int = DIRECT_POOL_SIZE) -> None:
        _, params = engine.dialect.create_connect_args(engine.url)
        params.pop("context", None)  # SQLAlchemy's adapters: plain psycopg types here (jsonb -> dict, tz-aware)
        # timestamps come back in UTC, as UTCDateTime returns them (set at connect: no round trip of its own)
        params["options"] = f"{params.get('options', '')} -c TimeZone=UTC".strip()
        self._params = params
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._slots = FairSlots(size)
        self._closed = False

    def _open(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(autocommit=True, row_factory=namedtuple_row, **self._params)
        nul_free.install(conn)  # as the engine's own connections: no NUL in any text or JSON sent
        return conn

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        if not self._slots.acquire(timeout=CHECKOUT_TIMEOUT_S):
            raise TimeoutError(f"no free database connection after {CHECKOUT_TIMEOUT_S:.0f} s")
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            conn = conn if conn is not None and not conn.closed else self._open()
            try:
                yield conn
            except BaseException:
                if conn.broken or conn.closed:
                    conn.close()
                    raise
                self._give_back(conn)
                raise
            self._give_back(conn)
        finally:
            self._slots.release()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def fetch(self, sql: str, params: Mapping[str, Any], *, repeatable: bool) -> list[Any]:
        """The rows of one statement (its own transaction); run again once on a new connection if the old
        one was broken and `repeatable`."""
        for attempt in (1, 2):
            try:
                with self.connection() as conn:
                    cursor = conn.execute(sql, params)
                    return cursor.fetchall() if cursor.description else []
            except psycopg.OperationalError:
                if not repeatable or attempt == 2:
                    raise
                logger.warning("database connection lost: running the statement again on a new one")
        raise AssertionError("unreachable")


_POOLS: weakref.WeakKeyDictionary[Engine, DirectPool] = weakref.WeakKeyDictionary()
_POOLS_LOCK = threading.Lock()


def is_direct(engine: Engine) -> bool:
    """Whether this engine's hot statements go straight through psycopg (PostgreSQL) or through SQLAlchemy."""
    return engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"


def direct_pool(engine: Engine) -> DirectPool:
    """The engine's pool of direct connections, made on first use and closed with `engine.dispose()`."""
    with _POOLS_LOCK:
        pool = _POOLS.get(engine)
        if pool is None:
            pool = _POOLS[engine] = DirectPool(engine)
            event.listen(engine, "engine_disposed", _dispose)
        return pool


def _dispose(engine: Engine) -> None:
    with _POOLS_LOCK:
        pool = _POOLS.pop(engine, None)
    if pool is not None:
        pool.close()


def fetch(*, engine: Engine, sql: str, params: Mapping[str, Any], repeatable: bool) -> list[Any]:
    """Run one statement on the engine's direct pool; rows as named tuples (empty for a statement without)."""
    return direct_pool(engine).fetch(sql, params, repeatable=repeatable)
