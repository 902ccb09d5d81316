"""A command that finds nothing names the store it read: on the default SQLite file it says how to reach another,
the env file `make stack-up` wrote first; a URL's password never shows (issue 35 §6.10)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.cli._store import store_label
from judgewatch.settings import get_settings


@pytest.fixture
def default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No JUDGEWATCH_DATABASE_URL: the default SQLite file under a data folder of the test's; a stack folder of
    its own (`make stack-up` has not written its env file yet)."""
    monkeypatch.delenv("JUDGEWATCH_DATABASE_URL", raising=False)
    monkeypatch.setenv("JUDGEWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUDGEWATCH_STACK_DIR", str(tmp_path / "stack"))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_an_empty_runs_list_names_the_default_store_and_the_stacks_env_file(default_store: Path) -> None:
    sqlite = f"sqlite:///{default_store / 'data' / 'judgewatch.db'}"
    result = CliRunner().invoke(get_app(), ["runs", "list"])
    assert result.exit_code == 0, result.output
    assert f"no runs recorded in {sqlite} (the default store; set JUDGEWATCH_DATABASE_URL or --database-url" in (
        result.output
    )
    env = default_store / "stack" / "env"  # what `make stack-up` writes
    env.parent.mkdir()
    env.write_text("export JUDGEWATCH_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/judgewatch\n")
    result = CliRunner().invoke(get_app(), ["runs", "list"])
    assert f"no runs recorded in {sqlite} (the default store; for the stack's: `source {env}`" in result.output


def test_an_empty_export_and_an_unknown_release_name_the_store(default_store: Path) -> None:
    url = f"sqlite:///{default_store / 'other.db'}"
    out = default_store / "out.jsonl"
    result = CliRunner().invoke(get_app(), ["export", "--format", "jsonl", "--output", str(out), "--database-url", url])
    assert result.exit_code == 2 and f"nothing in {url} matches the filter" in result.output
    assert "default store" not in result.output  # a store asked for by name needs no hint
    result = CliRunner().invoke(get_app(), ["compare", "r1", "r2", "--database-url", url])
    assert result.exit_code == 2 and f"(store: {url})" in result.output
    result = CliRunner().invoke(get_app(), ["baseline", "list"])
    assert "no releases stored in sqlite:///" in result.output and "the default store" in result.output


def test_a_store_url_is_named_without_its_password() -> None:
    label = store_label("postgresql+psycopg://judgewatch:hunter2@db.internal:5432/judgewatch")
    assert label == "postgresql+psycopg://judgewatch:***@db.internal:5432/judgewatch"
