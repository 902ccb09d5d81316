"""What tests read back from a store by URL: row counts, opened and closed around the one query."""

from __future__ import annotations

from sqlalchemy import func, select

from judgewatch.storage.db import make_engine, table


def count_rows(db_url: str, model: type) -> int:
    """How many rows `model`'s table holds in the store at `db_url`."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table(model))).scalar_one())
    finally:
        engine.dispose()
