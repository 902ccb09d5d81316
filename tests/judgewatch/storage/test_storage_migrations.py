"""Migrations apply once, are recorded, and survive two processes starting at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, inspect, text

from judgewatch.storage.db import SQLITE_BUSY_TIMEOUT_MS, make_engine, session_scope
from judgewatch.storage.migrations import MIGRATIONS, applied_migrations, migrate

EXPECTED_TABLES = {"_migrations", "interaction", "eval_run", "verdict", "criterion_score", "quarantined_row"}


def test_migrate_creates_the_tables_and_records_each_migration(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        assert applied_migrations(engine) == []
        applied = migrate(engine)
        assert applied == [m.__name__ for m in MIGRATIONS]
        assert applied_migrations(engine) == applied
        assert set(inspect(engine).get_table_names()) >= EXPECTED_TABLES
    finally:
        engine.dispose()


def test_migrating_again_is_a_noop(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate(engine)
        assert migrate(engine) == []
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM _migrations")).scalar() == len(MIGRATIONS)
    finally:
        engine.dispose()


def test_latest_and_count_name_the_end_of_the_steps() -> None:
    """An up-to-date store is recognised by LATEST and COUNT alone: they must describe MIGRATIONS as it is."""
    from judgewatch.storage.migrations import COUNT, LATEST

    assert (MIGRATIONS[-1].__name__, len(MIGRATIONS)) == (LATEST, COUNT)
    assert max(m.__name__ for m in MIGRATIONS) == LATEST  # the check reads max(name): names must sort in order


def test_an_up_to_date_store_opens_without_importing_the_steps(tmp_path: Path) -> None:
    """A command that opens an up-to-date store does not load every table module (the migration steps)."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    code = (
        "import sys; from judgewatch.storage.db import make_engine; from judgewatch.storage.migrations import migrate; "
        f"assert migrate(make_engine({url!r})) == []; print('judgewatch.storage.migration_steps' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_an_up_to_date_store_opens_without_taking_the_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command opens the store: when nothing is missing, migrate reads the applied names and returns, so it
    neither waits for nor blocks a writer (here one holding SQLite's write lock)."""
    import sqlite3

    path = tmp_path / "store.db"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    engine.dispose()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a judging run writing verdicts
    monkeypatch.setattr("judgewatch.storage.db.SQLITE_BUSY_TIMEOUT_MS", 200)
    impatient = make_engine(f"sqlite:///{path}")
    try:
        assert migrate(impatient) == []
    finally:
        impatient.dispose()
        writer.execute("ROLLBACK")
        writer.close()


def test_two_concurrent_migrators_both_succeed_and_apply_once(db_url: str) -> None:
    engines = [make_engine(db_url), make_engine(db_url)]
    barrier = threading.Barrier(2)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results.append(migrate(engines[index]))
        except BaseException as exc:  # the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert errors == []
        assert sorted(len(r) for r in results) == [0, len(MIGRATIONS)]
        assert applied_migrations(engines[0]) == [m.__name__ for m in MIGRATIONS]
    finally:
        for engine in engines:
            engine.dispose()


def test_an_appended_migration_runs_once_on_an_existing_database(db_url: str) -> None:
    engine = make_engine(db_url)
    extra = Table("extra_thing", MetaData(), Column("id", Integer, primary_key=True), Column("label", String(20)))

    def m999_extra_thing(conn: Connection) -> None:
        extra.create(conn)

    try:
        migrate(engine)
        assert migrate(engine, [*MIGRATIONS, m999_extra_thing]) == ["m999_extra_thing"]
        assert migrate(engine, [*MIGRATIONS, m999_extra_thing]) == []
        assert "extra_thing" in inspect(engine).get_table_names()
        assert applied_migrations(engine)[-1] == "m999_extra_thing"
    finally:
        engine.dispose()


def test_a_failing_migration_leaves_nothing_half_applied(db_url: str) -> None:
    engine = make_engine(db_url)
    extra = Table("half_done", MetaData(), Column("id", Integer, primary_key=True))

    def m998_breaks(conn: Connection) -> None:
        extra.create(conn)
        raise RuntimeError("boom")

    try:
        migrate(engine)
        with pytest.raises(RuntimeError, match="boom"):
            migrate(engine, [*MIGRATIONS, m998_breaks])
        assert "half_done" not in inspect(engine).get_table_names()
        assert "m998_breaks" not in applied_migrations(engine)
    finally:
        engine.dispose()


def test_sqlite_file_engine_uses_wal_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'sub' / 'jw.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == SQLITE_BUSY_TIMEOUT_MS
        with session_scope(engine, write=True) as session:  # BEGIN IMMEDIATE path
            assert session.execute(text("SELECT 1")).scalar() == 1
    finally:
        engine.dispose()
