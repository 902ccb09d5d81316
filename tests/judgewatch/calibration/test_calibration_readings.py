"""The probability-weighted reading is a choice: `load_scores(reading="expected")` feeds PPI and agreement."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from typer.testing import CliRunner

from judgewatch.calibration.agreement import agreement_table
from judgewatch.calibration.score_frame import load_scores
from judgewatch.calibration.tiers import tier_estimates
from judgewatch.cli.report_cmd import app
from judgewatch.contract.rubric import Rubric
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.verdicts import CriterionScore
from judgewatch.testing.synthetic_labels import SyntheticSpec, TierTruth, write_synthetic

from .conftest import JUDGE_A

SHIFT = 0.25


def _weighted_store(engine: Engine, rubric: Rubric) -> None:
    """Synthetic verdicts whose every score also carries a float a quarter below its integer."""
    tiers = {"full": TierTruth(3.8, 0.6), "quantized": TierTruth(3.2, 1.3)}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    spec = SyntheticSpec(judge=JUDGE_A, tiers=tiers, days=2, per_day=50, review_share=0.4, start=start, seed=5)
    write_synthetic(engine, rubric, spec)
    scores = table(CriterionScore)
    with session_scope(engine, write=True) as session:
        session.execute(update(scores).where(scores.c.score.is_not(None)).values(expected=scores.c.score - SHIFT))


def test_the_default_reading_keeps_the_integers_and_the_expected_one_takes_the_floats(
    engine: Engine, rubric: Rubric
) -> None:
    _weighted_store(engine, rubric)
    plain = load_scores(engine, rubric_name="answer_quality")
    weighted = load_scores(engine, rubric_name="answer_quality", reading="expected")
    assert (plain["judge"] == plain["judge_integer"]).all() and set(plain["judge_reading"]) == {"integer"}
    assert (weighted["judge"] == weighted["judge_integer"] - SHIFT).all()
    assert set(weighted["judge_reading"]) == {"expected"}


def test_ppi_on_the_floats_cancels_a_shift_the_raw_means_show(engine: Engine, rubric: Rubric) -> None:
    _weighted_store(engine, rubric)
    plain = {(e.tier, e.criterion): e for e in tier_estimates(load_scores(engine, rubric_name="answer_quality"))}
    frame = load_scores(engine, rubric_name="answer_quality", reading="expected")
    for e in tier_estimates(frame):
        before = plain[(e.tier, e.criterion)]
        assert e.raw_mean == pytest.approx(before.raw_mean - SHIFT)
        assert e.ppi.estimate == pytest.approx(before.ppi.estimate, abs=1e-9)  # the labels correct any shift


def test_agreement_reads_the_floats_for_bias_and_the_integers_for_kappa(engine: Engine, rubric: Rubric) -> None:
    _weighted_store(engine, rubric)
    levels = rubric.scale.levels
    plain = agreement_table(load_scores(engine, rubric_name="answer_quality"), categories=levels, n_boot=100)
    weighted = agreement_table(
        load_scores(engine, rubric_name="answer_quality", reading="expected"), categories=levels, n_boot=100
    )
    for a, b in zip(plain, weighted, strict=True):
        assert (a.tier, a.criterion, a.n) == (b.tier, b.criterion, b.n)
        assert b.weighted_kappa == a.weighted_kappa and b.exact == a.exact
        assert b.bias.estimate == pytest.approx(a.bias.estimate - SHIFT)
        assert b.spearman.estimate == pytest.approx(a.spearman.estimate)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_report_tiers_with_the_expected_reading_computes_on_the_floats_and_says_so(
    engine: Engine, rubric: Rubric, db_url: str, tmp_path: Path
) -> None:
    _weighted_store(engine, rubric)
    docs = {}
    for reading in ("integer", "expected"):
        out = tmp_path / f"{reading}.json"
        args = ["tiers", "--database-url", db_url, "--format", "json", "--output", str(out), "--score-reading", reading]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        docs[reading] = json.loads(out.read_text(encoding="utf-8"))
    assert "probability-weighted" in docs["expected"]["provenance"]
    assert "probability-weighted" not in docs["integer"]["provenance"]
    for a, b in zip(docs["integer"]["traffic"], docs["expected"]["traffic"], strict=True):
        assert (a["tier"], a["criterion"]) == (b["tier"], b["criterion"])
        assert b["judge_mean"] == pytest.approx(a["judge_mean"] - SHIFT)
        assert b["estimate"] == pytest.approx(a["estimate"])  # PPI: the labels correct the shift
