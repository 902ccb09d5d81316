"""One-statement transactions on an engine's autocommit sibling: no transaction left open, a dropped connection
found by the statement and run again only when repeating it is harmless, the sibling disposed with the engine."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, literal, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from judgewatch.storage.autocommit import autocommit_engine, fetch

# The autocommit sibling serves PostgreSQL's one-statement key presses (SQLite runs them in a write transaction).
pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("db_url", ["postgres"], indirect=True)]


@pytest.fixture
def pg_engine(engine: Engine) -> Engine:
    assert engine.dialect.name == "postgresql"
    return engine


def test_each_statement_is_its_own_transaction_on_a_sibling_without_pre_ping(pg_engine: Engine) -> None:
    sibling = autocommit_engine(pg_engine)
    assert sibling is autocommit_engine(pg_engine) and sibling.url == pg_engine.url
    assert not sibling.pool._pre_ping
    (row,) = fetch(pg_engine, select(literal(1).label("x")), {}, repeatable=True)
    assert row.x == 1
    with sibling.connect() as conn:
        assert conn.connection.dbapi_connection.autocommit  # type: ignore[union-attr]  # no BEGIN, no COMMIT


def test_a_dropped_connection_is_run_again_only_when_repeatable(pg_engine: Engine) -> None:
    pid = select(text("pg_backend_pid() AS pid"))
    (first,) = fetch(pg_engine, pid, {}, repeatable=True)

    def drop() -> None:
        with pg_engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first.pid})
            admin.commit()

    drop()
    (again,) = fetch(pg_engine, pid, {}, repeatable=True)  # the dead connection thrown away, a new one used
    assert again.pid != first.pid
    first = again
    drop()
    with pytest.raises(OperationalError):
        fetch(pg_engine, pid, {}, repeatable=False)
    assert fetch(pg_engine, pid, {}, repeatable=False)[0].pid != first.pid


def test_the_sibling_is_disposed_with_its_engine(pg_engine: Engine) -> None:
    sibling = autocommit_engine(pg_engine)
    pool = sibling.pool
    assert isinstance(pool, QueuePool)
    fetch(pg_engine, select(literal(1)), {}, repeatable=True)
    assert pool.checkedin() == 1
    pg_engine.dispose()
    assert pool.checkedin() == 0  # its connections closed (dispose gives the sibling a new, empty pool)
    assert autocommit_engine(pg_engine) is not sibling
