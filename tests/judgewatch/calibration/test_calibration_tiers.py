"""Tier estimates on seeded synthetic data whose truth is known: PPI corrects a judge biased per tier."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration.agreement import agreement_table
from judgewatch.calibration.score_frame import load_scores
from judgewatch.calibration.summary import rubric_bounds
from judgewatch.calibration.tiers import tier_differences, tier_estimates
from judgewatch.contract.rubric import Rubric
from judgewatch.stats.estimate import SCALE_BOUNDS
from judgewatch.testing.synthetic_labels import SyntheticSpec, TierTruth, write_synthetic

from .conftest import JUDGE_A

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_ppi_estimate_is_closer_to_the_human_truth_than_the_raw_mean_when_the_judge_is_biased_per_tier(
    engine: Engine, rubric: Rubric
) -> None:
    # The judge inflates both tiers, the quantized one (+1.3) far more than the full one (+0.6): raw means
    # overstate both and hide most of the gap between them.
    tiers = {"full": TierTruth(3.8, 0.6), "quantized": TierTruth(3.2, 1.3)}
    spec = SyntheticSpec(judge=JUDGE_A, tiers=tiers, days=4, per_day=40, review_share=0.3, start=START, seed=7)
    data = write_synthetic(engine, rubric, spec)
    frame = load_scores(engine, rubric_name="answer_quality")
    assert len(frame) == data.n_verdicts * 3 and frame["human"].notna().sum() == data.n_labels * 3

    estimates = tier_estimates(frame)
    assert {(e.tier, e.criterion) for e in estimates} == set(data.truth)
    for e in estimates:
        truth = data.truth[(e.tier, e.criterion)]
        assert abs(e.ppi.estimate - truth) < abs(e.raw_mean - truth), (e.tier, e.criterion)
        assert e.ppi.low <= truth <= e.ppi.high, (e.tier, e.criterion)
        assert e.n_verdicts == 160 and e.n_labels == e.ppi.n > 20 and e.n_synthetic_labels == e.n_labels

    for diff in tier_differences(frame, estimates, baseline="full"):
        true_gap = data.truth[("quantized", diff.criterion)] - data.truth[("full", diff.criterion)]
        assert (diff.tier, diff.baseline, diff.method) == ("quantized", "full", "unpaired")
        assert diff.estimate.low <= true_gap <= diff.estimate.high
        assert abs(diff.estimate.estimate - true_gap) < abs(diff.raw_diff - true_gap)
        assert diff.estimate.high < 0  # corrected: the quantized tier is worse, with confidence


def test_agreement_per_tier_shows_the_judge_overrating_one_tier(engine: Engine, rubric: Rubric) -> None:
    tiers = {"full": TierTruth(3.0, 0.0), "quantized": TierTruth(3.0, 1.5)}
    spec = SyntheticSpec(judge=JUDGE_A, tiers=tiers, days=2, per_day=60, review_share=0.4, start=START, seed=3)
    write_synthetic(engine, rubric, spec)
    rows = {(r.tier, r.criterion): r for r in agreement_table(load_scores(engine, rubric_name="answer_quality"),
                                                              categories=rubric.scale.levels, n_boot=200)}  # fmt: skip
    for criterion in ("relevance", "faithfulness", "completeness"):
        full, quantized = rows[("full", criterion)], rows[("quantized", criterion)]
        assert abs(full.bias.estimate) < 0.4
        assert quantized.bias.estimate - full.bias.estimate > 0.6
        assert quantized.bias.low > full.bias.high
        assert quantized.bias.low > 0  # confidently overrated
        assert quantized.exact.estimate < full.exact.estimate
        assert full.n == full.weighted_kappa.n > 20


def test_golden_runs_compare_tiers_paired_on_the_same_items(engine: Engine, rubric: Rubric) -> None:
    spec = SyntheticSpec(judge=JUDGE_A, days=2, per_day=50, review_share=0.5, start=START, paired=True, seed=11)
    data = write_synthetic(engine, rubric, spec)
    frame = load_scores(engine, rubric_name="answer_quality")
    diffs = tier_differences(frame, tier_estimates(frame), baseline="full")
    assert len(diffs) == 3
    for diff in diffs:
        true_gap = data.truth[("quantized", diff.criterion)] - data.truth[("full", diff.criterion)]
        assert diff.method == "paired"
        assert diff.n_items == 100 and diff.n_labels >= 10
        assert diff.estimate.low <= true_gap <= diff.estimate.high


def test_tier_intervals_rest_on_the_rubrics_scale_read_from_its_file() -> None:
    # 20 labels of 100 verdicts, every label and score a 1: the interval reaches towards the scale's top
    human = np.where(np.arange(100) < 20, 1.0, np.nan)
    frame = pd.DataFrame(
        {"tier": "a", "criterion": "faithfulness", "judge": 1.0, "human": human, "inclusion_prob": 0.2}
    ).assign(label_via="human")
    on_five = tier_estimates(frame, bounds=(1.0, 5.0))[0].ppi
    on_ten = tier_estimates(frame, bounds=(1.0, 10.0))[0].ppi
    assert on_five.low == on_ten.low == 1.0 and 1.0 < on_five.high < on_ten.high
    assert rubric_bounds("answer_quality") == (1.0, 5.0)
    assert rubric_bounds("no_such_rubric") == SCALE_BOUNDS  # logged; the estimators widen it to the data
