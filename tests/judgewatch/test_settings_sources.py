"""Settings come from the environment, `.env` and a TOML file, in that order of precedence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgewatch.settings import Settings, SettingsInvalid, get_settings


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


@pytest.mark.parametrize(
    ("value", "detail"),
    [("garbage", "Expecting value"), ('{"m": {"input": -1, "output": 2}}', "judge_prices.m.input")],
)
def test_an_unreadable_setting_is_one_line_naming_its_variable(
    value: str, detail: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGEWATCH_JUDGE_PRICES", value)
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsInvalid) as info:
            get_settings()
    finally:
        get_settings.cache_clear()
    message = str(info.value)
    assert "\n" not in message and "JUDGEWATCH_JUDGE_PRICES" in message and detail in message


@pytest.mark.parametrize("command", [["runs", "list"], ["regress", "--release", "r1", "--dataset", "x"]])
def test_the_command_line_exits_2_with_that_line_and_no_traceback(command: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "JUDGEWATCH_JUDGE_PRICES": "garbage", "JUDGEWATCH_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "judgewatch", *command], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2  # never 1: a release pipeline reads 1 as "regressed"
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: invalid setting judge_prices (JUDGEWATCH_JUDGE_PRICES")


def test_a_removed_setting_stops_the_command_and_names_what_replaced_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEWATCH_CALIBRATION_WEBHOOK_URL", "https://hooks.example.org/x")
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsInvalid, match=r"JUDGEWATCH_CALIBRATION_WEBHOOK_URL was removed: .*drift_alert"):
            get_settings()
    finally:
        get_settings.cache_clear()
