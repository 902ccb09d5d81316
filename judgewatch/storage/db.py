"""Engines and sessions: SQLite (WAL, foreign keys, busy timeout) by default, PostgreSQL by URL.

Nothing is created at import time: call `make_engine(url)` at an entry point and pass the engine down.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Execution option read by the SQLite "begin" hook: "IMMEDIATE" takes the write lock when the transaction
# starts, so a transaction that reads then writes waits for other writers instead of failing with SQLITE_BUSY.
SQLITE_BEGIN = "sqlite_begin"


def make_engine(url: str, *, echo: bool = False, connect_args: dict[str, Any] | None = None) -> Engine:
    """An engine for `url`; `postgresql://` means psycopg 3, a SQLite file's folder is created if missing."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, echo=echo, connect_args=connect_args or {})
    return create_engine(parsed, echo=echo, pool_pre_ping=True, connect_args=connect_args or {})


def _sqlite_engine(url: str, *, echo: bool, connect_args: dict[str, Any]) -> Engine:
    parsed = make_url(url)
    in_memory = parsed.database in (None, "", ":memory:")
    args = {"check_same_thread": False, **connect_args}
    if in_memory:
        engine = create_engine(url, echo=echo, connect_args=args, poolclass=StaticPool)
    else:
        Path(parsed.database or "").expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, echo=echo, connect_args=args)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, decide where transactions begin (pysqlite would run DDL outside them).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not in_memory:
            _ensure_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")  # durable enough under WAL, much faster commits
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(SQLITE_BEGIN, "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())

    return engine


@contextmanager
def session_scope(engine: Engine, *, write: bool = False) -> Iterator[Session]:
    """A session committed on success and rolled back on error; its objects stay readable after commit.

    `write=True` starts the transaction with the write lock on SQLite (BEGIN IMMEDIATE): use it for
    read-then-write transactions (leases, counters) so concurrent writers queue instead of failing.
    """
    with Session(engine, expire_on_commit=False) as session:
        if write and engine.dialect.name == "sqlite":
            session.connection(execution_options={SQLITE_BEGIN: "IMMEDIATE"})
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def _ensure_wal(cursor: Any) -> None:
    """Switch a database file to WAL once; WAL is persistent, so later connections only read the mode.

    Changing the journal mode needs an exclusive lock and SQLite does not wait on the busy handler for it,
    so two processes opening a new file at once can see "database is locked": retry that for a while.
    """
    if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
