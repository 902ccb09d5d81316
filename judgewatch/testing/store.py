"""Stores for tests and benchmarks, by URL: a throwaway PostgreSQL schema, and row counts read back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from judgewatch.storage.db import make_engine, table


def postgres_url() -> str:
    """The PostgreSQL server of the tests and benchmarks: JUDGEWATCH_TEST_POSTGRES_URL, else 127.0.0.1:5432/test."""
    return os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@contextmanager
def postgres_schema(server_url: str, schema: str, *, keep: bool = False) -> Iterator[str]:
    """`server_url` with its connections in `schema` (created if missing: psycopg passes `options` to libpq); the
    schema is dropped on the way out unless `keep`."""
    admin = create_engine(make_url(server_url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    try:
        scoped = make_url(server_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        if not keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def count_rows(db_url: str, model: type) -> int:
    """How many rows `model`'s table holds in the store at `db_url`."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table(model))).scalar_one())
    finally:
        engine.dispose()
