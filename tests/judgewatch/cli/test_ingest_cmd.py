"""`judgewatch ingest serve` refuses to start without a bearer token or with a source of another kind (exit 2,
one line), before it opens anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.settings import get_settings


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.usefixtures("fresh_settings")
def test_serve_without_a_token_exits_2(monkeypatch: pytest.MonkeyPatch, db: str) -> None:
    monkeypatch.delenv("JUDGEWATCH_INGEST_TOKEN", raising=False)
    result = CliRunner().invoke(get_app(), ["ingest", "serve", "--database-url", db])
    assert result.exit_code == 2
    assert "set JUDGEWATCH_INGEST_TOKEN" in result.output


@pytest.mark.usefixtures("fresh_settings")
def test_serve_with_a_source_of_another_kind_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, db: str) -> None:
    monkeypatch.setenv("JUDGEWATCH_INGEST_TOKEN", "a-token-for-this-test")
    config = tmp_path / "files.yaml"
    config.write_text("name: logs\nkind: jsonl\npaths: [a.jsonl]\n")
    result = CliRunner().invoke(get_app(), ["ingest", "serve", "--config", str(config), "--database-url", db])
    assert result.exit_code == 2
    assert "needs a source of kind otlp, got jsonl" in result.output
    assert not Path(db.removeprefix("sqlite:///")).exists()
