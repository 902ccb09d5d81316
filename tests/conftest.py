"""Shared fixtures: a database URL for SQLite and for the real PostgreSQL, and a migrated engine on it.

PostgreSQL tests get a fresh, uniquely named schema each (via the URL's `options=-csearch_path=...`), dropped
afterwards, so parallel sessions and CI jobs never collide. Override the server with
JUDGEWATCH_TEST_POSTGRES_URL; deselect with `-m "not postgres"`.

Every test runs under the path guard (judgewatch/testing/path_guard.py): a test, fixture or the code under
test that opens a file beside the checkout (a data folder next to it) instead of inside it fails, naming the path.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.path_guard import PathGuard, install

# Prefect's ephemeral server migrates a new PREFECT_HOME on first start; on a busy 2-core machine that takes
# longer than Prefect's default 20 s start-up timeout. Quiet and telemetry-free, as the CLI runs it.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
_SESSION_TOKEN = uuid.uuid4().hex[:8]
_schema_numbers = itertools.count(1)
PATH_GUARD = install(REPO_ROOT)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Allow pytest's tmp_path base (it may sit beside the checkout, e.g. with --basetemp=../tmp)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        PATH_GUARD.allow(factory.getbasetemp())


def _guarded(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    """Run one phase of a test under the guard; fail it when it opened a path beside the checkout."""
    PATH_GUARD.take()
    PATH_GUARD.active = True
    try:
        result = yield
    finally:
        PATH_GUARD.active = False
    if found := sorted(set(PATH_GUARD.take())):
        shown = ", ".join(found[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
        pytest.fail(
            f"{item.nodeid} ({phase}) opened {len(found)} path(s) outside the checkout {REPO_ROOT}: {shown}. "
            "Everything tests, benchmarks and scripts read must live in the repository.",
            pytrace=False,
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item, "teardown"))


def postgres_url() -> str:
    return os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def with_search_path(url: str, schema: str) -> str:
    """`url` whose connections use `schema` (psycopg passes `options` to libpq)."""
    parsed = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    return parsed.render_as_string(hide_password=False)


@pytest.fixture
def path_guard() -> PathGuard:
    """The session's path guard (for the tests that check the guard itself)."""
    return PATH_GUARD


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file in tmp_path, or a new schema on the PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'judgewatch.db'}"
        return
    schema = f"jw_test_{_SESSION_TOKEN}_{next(_schema_numbers)}"
    admin = create_engine(make_url(postgres_url()).set(drivername="postgresql+psycopg"))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield with_search_path(postgres_url(), schema)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """A migrated engine on `db_url`."""
    eng = make_engine(db_url)
    migrate(eng)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def rubric() -> Rubric:
    """The shipped answer_quality rubric (English and Chinese templates)."""
    return load_rubric("answer_quality", rubrics_dir=REPO_ROOT / "rubrics")
