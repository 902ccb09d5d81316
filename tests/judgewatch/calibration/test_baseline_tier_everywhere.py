"""One baseline tier everywhere (issue 41 §5): the tier a release's tiers file declared (`baseline: true`) or
`--baseline-tier` asked for is the one `report tiers` and the Tiers page compare with, as the gate did, for tiers
with any names, and the `baseline_tier` setting where no release declared one; a gap reads candidate − baseline.
With nothing declared no tier is compared with another, in the report as in the gate, and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from judgewatch.calibration.gate_question import GateRow, lead_line
from judgewatch.calibration.summary import summarize
from judgewatch.cli.report_cmd import app
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.serving import TierSpec
from judgewatch.regression.tier_config import baseline_tier
from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import record_release_tier
from judgewatch.storage.types import utcnow
from judgewatch.testing.synthetic_labels import TierTruth, declared_baseline, write_synthetic

from .conftest import one_release_day


@pytest.fixture
def two_tiers(engine: Engine, rubric: Rubric) -> Engine:
    """Verdicts and labels on tiers `fp16` and `awq` (alphabetically first: the old default baseline)."""
    spec = one_release_day({"fp16": TierTruth(4.0, 0.0), "awq": TierTruth(3.4, 0.0)}, per_day=40, review_share=0.3)
    write_synthetic(engine, rubric, spec)
    return engine


def _declare(engine: Engine, baseline: str) -> None:
    with session_scope(engine, write=True) as session:
        for tier in ("awq", "fp16"):
            record_release_tier(
                session=session,
                release="r1",
                tier=tier,
                source=f"recorded:{tier}.jsonl",
                model=None,
                datasets={},
                baseline=tier == baseline,
            )


def test_the_declared_baseline_tier_is_the_reports_baseline(two_tiers: Engine) -> None:
    _declare(two_tiers, "fp16")
    summary = summarize(two_tiers, n_boot=50, with_trust=False)
    assert summary.baseline_tier == "fp16"
    assert "declared by release r1" in summary.baseline_reason
    assert summary.differences and {(d.tier, d.baseline) for d in summary.differences} == {("awq", "fp16")}
    assert all(d.raw_diff < 0 for d in summary.differences)  # awq − fp16: the candidate trails
    assert summary.gaps and {g.baseline for g in summary.gaps} == {"fp16"}
    assert not any("No baseline tier" in note for note in summary.notes)


def test_with_nothing_declared_no_tier_is_compared_and_the_report_says_how_to_declare_one(two_tiers: Engine) -> None:
    summary = summarize(two_tiers, n_boot=50, with_trust=False)
    assert summary.baseline_tier is None
    assert not summary.differences and not summary.gaps  # as the gate: no within-release comparison
    assert any("No baseline tier" in note and "--baseline-tier" in note for note in summary.notes)


def test_the_baseline_tier_setting_names_the_baseline_where_no_release_declared_one(two_tiers: Engine) -> None:
    with declared_baseline("fp16"):
        summary = summarize(two_tiers, n_boot=50, with_trust=False)
    assert summary.baseline_tier == "fp16" and "`baseline_tier` setting" in summary.baseline_reason
    assert {(d.tier, d.baseline) for d in summary.differences} == {("awq", "fp16")}


def test_the_gate_takes_the_same_setting_when_the_tiers_file_marks_no_baseline() -> None:
    specs = [TierSpec(name=name, kind="recorded", answers_path=Path(f"{name}.jsonl")) for name in ("awq", "fp16")]
    assert baseline_tier(specs) is None
    assert baseline_tier(specs, default="fp16") == "fp16"
    assert baseline_tier(specs, default="full") is None  # a setting naming no tier of the run compares nothing
    marked = [specs[0].model_copy(update={"baseline": True}), specs[1]]
    assert baseline_tier(marked, default="fp16") == "awq"  # the tiers file wins over the setting


def test_the_tiers_report_json_names_the_declared_baseline(two_tiers: Engine, db_url: str, tmp_path: Path) -> None:
    _declare(two_tiers, "fp16")
    out = tmp_path / "tiers.json"
    args = ["tiers", "--compute", "--database-url", db_url, "--output", str(out), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["baseline_tier"] == "fp16"
    asked = CliRunner().invoke(app, [*args[:-2], "--format", "json", "--baseline-tier", "awq"])
    assert asked.exit_code == 0, asked.output
    assert json.loads(out.read_text(encoding="utf-8"))["baseline_tier"] == "awq"


def test_a_within_release_tier_gap_is_not_called_a_baseline_release() -> None:
    row = GateRow("r1", utcnow(), "regression", "awq-vs-fp16", "faithfulness", "fp16", -0.8, -1.1, -0.5, 0.25, "", True)
    line = lead_line([row])
    assert "baseline tier fp16 of the same release" in line and "baseline release" not in line
    assert "candidate − baseline" in line
