"""Engines, sessions and the two statements every table shares: its `Table`, and the dialect upsert. Nothing is
created at import time: call `make_engine(url)` at an entry point and pass the engine down."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, Table, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, select
from sqlmodel.sql.expression import SelectOfScalar

from judgewatch.storage import nul_free
from judgewatch.url_secrets import reveal

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=SQLModel)

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Execution option read by the SQLite "begin" hook: "IMMEDIATE" takes the write lock when the transaction
# starts, so a transaction that reads then writes waits for other writers instead of failing with SQLITE_BUSY.
SQLITE_BEGIN = "sqlite_begin"
CHUNK = 1000  # rows per statement: well under SQLite's and PostgreSQL's bound-parameter limits
# PostgreSQL connections one process keeps (opened on demand): the review UI serves 20 reviewers at once, and a
# reviewer waiting for a pooled connection waits behind the others' key presses.
PG_POOL_SIZE = 20


def dialect_insert(session: Session, tbl: Table) -> Any:
    """The dialect's INSERT (with ON CONFLICT) for `tbl`; PostgreSQL's module loads only for a PostgreSQL store."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(tbl)
    if dialect != "sqlite":
        raise NotImplementedError(f"no upsert for database dialect {dialect!r} (use SQLite or PostgreSQL)")
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(tbl)


def make_engine(url: str) -> Engine:
    """An engine for `url`; `postgresql://` means psycopg 3, a SQLite file's folder is created if missing."""
    url = reveal(url)  # a database URL arrives masked when it came in as a flow parameter
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    engine = create_engine(parsed, pool_pre_ping=True, pool_size=PG_POOL_SIZE, json_serializer=nul_free.json_dumps)

    @event.listens_for(engine, "connect")
    def _on_pg_connect(dbapi_connection: Any, _record: Any) -> None:
        nul_free.install(dbapi_connection)  # PostgreSQL refuses NUL in text and jsonb

    return engine


def _sqlite_engine(url: str) -> Engine:
    parsed = make_url(url)
    in_memory = parsed.database in (None, "", ":memory:")
    if not in_memory:
        Path(parsed.database or "").expanduser().parent.mkdir(parents=True, exist_ok=True)
    pool = {"poolclass": StaticPool} if in_memory else {}  # one connection: an in-memory database lives in it
    engine = create_engine(url, connect_args={"check_same_thread": False}, json_serializer=nul_free.json_dumps, **pool)

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

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _without_nul(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> Any:
        return statement, nul_free.sqlite_parameters(parameters)  # the same text back as PostgreSQL gives

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(SQLITE_BEGIN, "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())

    return engine


@contextmanager
def session_scope(engine: Engine, *, write: bool = False) -> Iterator[Session]:
    """A session committed on success and rolled back on error; its objects stay readable after commit. `write=True`
    takes SQLite's write lock at BEGIN (IMMEDIATE): read-then-write transactions then queue instead of failing."""
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
    """Switch a database file to WAL once (it persists). The switch needs an exclusive lock SQLite does not wait for on
    the busy handler, so two processes opening a new file at once can see "database is locked": retry that a while."""
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


def table(model: type[SQLModel]) -> Table:
    """The Table behind a SQLModel class: typed columns (`table(M).c.x`) for queries and bulk statements."""
    result: Table = model.__table__  # type: ignore[attr-defined]
    return result


def select_matching(model: type[ModelT], **equal: object) -> SelectOfScalar[ModelT]:
    """`select(model)` narrowed to rows whose column equals each given value; a value left at None filters nothing."""
    columns = table(model).c
    return select(model).where(*(columns[name] == value for name, value in equal.items() if value is not None))


def upsert(
    session: Session,
    tbl: Table,
    rows: Sequence[dict[str, Any]],
    *,
    update_columns: Sequence[str] | None,
    returning_new: bool = False,
) -> int:
    """Bulk INSERT ... ON CONFLICT (primary key) DO UPDATE `update_columns` (DO NOTHING when None or empty); returns
    the distinct rows written, or with `returning_new` (DO NOTHING only) the new ones. One statement must not touch a
    row twice (PostgreSQL refuses): the last row for a key wins."""
    if not rows:
        return 0
    key = [c.name for c in tbl.primary_key.columns]
    unique = list({tuple(r[k] for k in key): r for r in rows}.values())
    stmt: Any = dialect_insert(session, tbl)
    if update_columns:
        if returning_new:
            raise ValueError("returning_new counts inserted rows: it needs update_columns=None (DO NOTHING)")
        stmt = stmt.on_conflict_do_update(index_elements=key, set_={c: stmt.excluded[c] for c in update_columns})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=key)
        if returning_new:
            stmt = stmt.returning(*tbl.primary_key.columns)
    written = 0
    for start in range(0, len(unique), CHUNK):
        result = session.execute(stmt, unique[start : start + CHUNK])
        written += len(result.all()) if returning_new else 0
    return written if returning_new else len(unique)
