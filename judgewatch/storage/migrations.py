"""Schema migrations: an ordered tuple of named functions, each applied once and recorded in `_migrations`.

To change the schema, append a function to `MIGRATIONS` (`storage.migration_steps`) and update `LATEST` and
`COUNT` below; never edit one that has shipped, never `drop_all`. `migrate(engine)` runs the missing ones in one
transaction under a lock, so two processes starting at once apply each migration exactly once; an up-to-date store
costs a table check and one query, and loads none of the table modules the steps need.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy import Column, Connection, DateTime, Engine, MetaData, String, Table, func, inspect, select, text

from judgewatch.storage.db import SQLITE_BEGIN
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

Migration = Callable[[Connection], None]

# Any fixed 64-bit key shared by every judgewatch process; the lock is released at commit.
_ADVISORY_LOCK_KEY = 0x6A7564676577  # "judgew"

# The last of `MIGRATIONS` and how many there are (a test keeps these true): an up-to-date store is recognised by
# them in one query, without importing the steps.
LATEST, COUNT = "m024_routing_plan", 22

_meta = MetaData()
_migrations = Table(
    "_migrations",
    _meta,
    Column("name", String(200), primary_key=True),
    Column("applied_at", DateTime(timezone=True), nullable=False),
)


def applied_migrations(engine: Engine) -> list[str]:
    """Names of the applied migrations, in the order they were applied ([] on an empty database)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(_migrations.name):
            return []
        rows = conn.execute(select(_migrations.c.name).order_by(_migrations.c.applied_at, _migrations.c.name))
        return list(rows.scalars())


def up_to_date(engine: Engine) -> bool:
    """Whether every migration is recorded: COUNT of them, the last LATEST (False on a new store)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(_migrations.name):
            return False
        count, last = conn.execute(select(func.count(), func.max(_migrations.c.name))).one()
    return bool(count == COUNT and last == LATEST)


def migrate(engine: Engine, migrations: Sequence[Migration] | None = None) -> list[str]:
    """Apply the migrations not yet recorded (default: `MIGRATIONS`); returns the names applied now ([] when up
    to date)."""
    if migrations is None:
        if up_to_date(engine):
            return []
        from judgewatch.storage.migration_steps import MIGRATIONS

        migrations = MIGRATIONS
    names = [m.__name__ for m in migrations]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate migration names in {names}")
    if set(names) <= set(applied_migrations(engine)):  # up to date: one query, no write lock
        return []
    applied_now: list[str] = []
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
            _meta.create_all(conn, checkfirst=True)
            done = set(conn.execute(select(_migrations.c.name)).scalars())
            for migration in migrations:
                if migration.__name__ in done:
                    continue
                logger.info("applying migration %s", migration.__name__)
                migration(conn)
                conn.execute(_migrations.insert().values(name=migration.__name__, applied_at=utcnow()))
                applied_now.append(migration.__name__)
    return applied_now


def __getattr__(name: str) -> tuple[Migration, ...]:
    """`MIGRATIONS` from `storage.migration_steps`, loaded on first use (it imports every table module)."""
    if name == "MIGRATIONS":
        from judgewatch.storage.migration_steps import MIGRATIONS

        return MIGRATIONS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
