"""Settings come from the environment, `.env` and a TOML file, in that order of precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgewatch.settings import Settings


def test_a_judgewatch_toml_in_the_working_directory_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "judgewatch.toml").write_text('judge_model = "from-toml"\njudge_concurrency = 7\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGEWATCH_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("JUDGEWATCH_CONFIG_FILE", raising=False)
    settings = Settings()
    assert (settings.judge_model, settings.judge_concurrency) == ("from-toml", 7)


def test_the_environment_beats_the_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text('judge_model = "from-toml"\nreview_share = 0.25\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGEWATCH_CONFIG_FILE", str(config))
    monkeypatch.setenv("JUDGEWATCH_JUDGE_MODEL", "from-env")
    settings = Settings()
    assert settings.judge_model == "from-env"
    assert settings.review_share == 0.25  # the named file was read


def test_without_a_toml_file_the_defaults_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGEWATCH_CONFIG_FILE", raising=False)
    monkeypatch.delenv("JUDGEWATCH_JUDGE_MODEL", raising=False)
    assert Settings().judge_model == Settings.model_fields["judge_model"].default


def test_a_bad_value_in_the_toml_file_names_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "judgewatch.toml").write_text('judge_concurrency = "many"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGEWATCH_CONFIG_FILE", raising=False)
    monkeypatch.delenv("JUDGEWATCH_JUDGE_CONCURRENCY", raising=False)
    with pytest.raises(ValueError, match="judge_concurrency"):
        Settings()
