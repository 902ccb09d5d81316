"""The alert rules: valid for promtool, unit-tested (each rule fires and stays quiet), and only on exported metrics."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from judgewatch.metrics.names import exported_series

pytestmark = pytest.mark.prometheus

METRIC = re.compile(r"\bjudgewatch_[a-zA-Z0-9_]+")


def _rules(deploy_dir: Path) -> list[dict]:
    groups = yaml.safe_load((deploy_dir / "prometheus" / "alerts.yml").read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_accepts_the_rules(promtool: str, deploy_dir: Path) -> None:
    result = subprocess.run(
        [promtool, "check", "rules", str(deploy_dir / "prometheus" / "alerts.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(_rules(deploy_dir))} rules found" in result.stdout


def test_promtool_unit_tests_pass(promtool: str, deploy_dir: Path) -> None:
    result = subprocess.run(
        [promtool, "test", "rules", "alerts_test.yml"],
        cwd=deploy_dir / "prometheus",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_unit_tests_catch_a_broken_threshold(promtool: str, deploy_dir: Path, tmp_path: Path) -> None:
    """The unit tests can fail: raise the unscored threshold to 50% and the 30% case stops firing."""
    for name in ("alerts.yml", "alerts_test.yml"):
        shutil.copy(deploy_dir / "prometheus" / name, tmp_path / name)
    rules = (tmp_path / "alerts.yml").read_text(encoding="utf-8")
    threshold = "(increase(judgewatch_verdicts_total[30m])) > 0.2"
    broken = rules.replace(threshold, threshold.replace("0.2", "0.5"))
    assert broken != rules
    (tmp_path / "alerts.yml").write_text(broken, encoding="utf-8")
    result = subprocess.run(
        [promtool, "test", "rules", "alerts_test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert "JudgewatchUnscoredShareHigh" in result.stdout + result.stderr


def test_every_rule_has_a_summary_a_description_and_fire_and_quiet_cases(deploy_dir: Path) -> None:
    tests = yaml.safe_load((deploy_dir / "prometheus" / "alerts_test.yml").read_text(encoding="utf-8"))["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    for rule in _rules(deploy_dir):
        name = rule["alert"]
        assert rule["annotations"]["summary"].strip(), name
        assert len(rule["annotations"]["description"].split()) >= 15, f"{name}: say what to do"
        assert any(c["alertname"] == name and c["exp_alerts"] for c in cases), f"{name} never fires in a test"
        assert any(c["alertname"] == name and not c["exp_alerts"] for c in cases), f"{name}: no quiet case"


def test_rules_use_only_exported_metrics(deploy_dir: Path) -> None:
    exported = exported_series()
    for rule in _rules(deploy_dir):
        used = set(METRIC.findall(rule["expr"]))
        assert used, f"{rule['alert']} reads no judgewatch metric"
        assert used <= exported, f"{rule['alert']} reads {sorted(used - exported)}, which the endpoint never exports"
