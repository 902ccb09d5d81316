"""Statements that are each their own transaction, for the few run on every key press: no BEGIN/COMMIT round
trips and no pool pre-ping.

Each PostgreSQL engine gets a sibling engine on the same URL with `AUTOCOMMIT` isolation and `pool_pre_ping=False`
(SQLAlchemy's QueuePool of at most `POOL_SIZE` connections, opened on demand; disposed with the engine it serves).
A write of several rows must therefore be one statement (a data-modifying CTE). Without a pre-ping a connection
the server dropped is found out by the statement itself: SQLAlchemy throws it away, and the statement is run again
once on a new connection when the caller says repeating it is harmless (`repeatable`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine, Executable, Row, create_engine, event
from sqlalchemy.exc import DBAPIError

from judgewatch.storage import nul_free
from judgewatch.storage.db import PG_POOL_SIZE

logger = logging.getLogger(__name__)

# As many connections as the store's engine keeps, one per reviewer served at once: SQLAlchemy's QueuePool does not
# serve waiting callers in arrival order (a thread giving a connection back and asking again at once takes it back),
# and with 8 connections for 20 reviewers some waited seconds for a lease (bench/README.md, review queue).
POOL_SIZE = PG_POOL_SIZE

_ENGINES: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def autocommit_engine(engine: Engine) -> Engine:
    """`engine`'s sibling for one-statement transactions, made on first use and disposed with `engine`."""
    with _LOCK:
        sibling = _ENGINES.get(engine)
        if sibling is None:
            sibling = _ENGINES[engine] = create_engine(
                engine.url,
                isolation_level="AUTOCOMMIT",
                pool_pre_ping=False,
                pool_size=POOL_SIZE,
                max_overflow=0,
                pool_reset_on_return=None,  # autocommit: no transaction to roll back
                json_serializer=nul_free.json_dumps,
            )
            event.listen(sibling, "connect", lambda dbapi_connection, _record: nul_free.install(dbapi_connection))
            event.listen(engine, "engine_disposed", _dispose)
        return sibling


def _dispose(engine: Engine) -> None:
    with _LOCK:
        sibling = _ENGINES.pop(engine, None)
    if sibling is not None:
        sibling.dispose()


def fetch(engine: Engine, statement: Executable, params: Mapping[str, Any], *, repeatable: bool) -> list[Row[Any]]:
    """The rows of one statement run as its own transaction on `engine`'s autocommit sibling; run again once on
    a new connection if the old one was broken and `repeatable`."""
    sibling = autocommit_engine(engine)
    for attempt in (1, 2):
        try:
            with sibling.connect() as conn:
                return list(conn.execute(statement, params))
        except DBAPIError as exc:
            if not exc.connection_invalidated or not repeatable or attempt == 2:
                raise
            logger.warning("database connection lost: running the statement again on a new one")
    raise AssertionError("unreachable")
