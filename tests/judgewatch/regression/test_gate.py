"""The release gate's comparison statistics (cases with a known answer) and its exit-code decision."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from judgewatch.regression.gate import Comparison, TierEvaluation, compare_scores, decide
from judgewatch.stats.paired import PairedDiff

CRITERIA = ["faithfulness"]


def scores(values: list[float | None], criterion: str = "faithfulness") -> dict[str, dict[str, float | None]]:
    return {f"item-{i:03d}": {criterion: v} for i, v in enumerate(values)}


def comparison(estimate: float, low: float, high: float, n: int = 50, criterion: str = "faithfulness") -> Comparison:
    return Comparison(criterion, "r2", "r1", 4.0 + estimate, 4.0, PairedDiff(estimate, low, high, n, 0, "BCa"))


def tier(name: str = "quantized", *comparisons: Comparison, **kwargs: object) -> TierEvaluation:
    defaults: dict[str, object] = {"baseline_release": "r1", "total": 50}
    defaults.update(kwargs)
    return TierEvaluation(name, comparisons=list(comparisons), **defaults)  # type: ignore[arg-type]


@dataclass
class Trust:
    trustworthy: bool | None
    summary: str
    accepted_on_purpose: bool = False


# --- comparison statistics, known answers -----------------------------------------------------------------


def test_identical_scores_differ_by_exactly_zero() -> None:
    base = scores([5, 4, 3, 5, 2, 1, 4, 4, 5, 3, 2, 5])
    [c] = compare_scores(base, base, CRITERIA, candidate_label="r2", baseline_label="r1")
    assert (c.diff.estimate, c.diff.low, c.diff.high, c.diff.method) == (0.0, 0.0, 0.0, "constant")
    assert not c.below(0.0)


def test_a_uniform_one_point_drop_is_estimated_exactly_with_a_zero_width_interval() -> None:
    base = scores([5, 4, 5, 3, 4, 5, 4, 5, 5, 4])
    cand = scores([v - 1 for v in [5, 4, 5, 3, 4, 5, 4, 5, 5, 4]])
    [c] = compare_scores(cand, base, CRITERIA, candidate_label="r2", baseline_label="r1")
    assert c.diff.estimate == pytest.approx(-1.0) and c.diff.low == c.diff.high == pytest.approx(-1.0)
    assert c.baseline_mean == pytest.approx(4.4) and c.candidate_mean == pytest.approx(3.4)
    assert c.below(0.25) and not c.below(1.0)


def test_the_estimate_is_the_mean_paired_difference_and_its_interval_covers_it() -> None:
    rng = np.random.default_rng(7)
    base_values = rng.integers(1, 6, size=200).astype(float)
    drops = rng.choice([0.0, -1.0, -2.0], size=200, p=[0.5, 0.3, 0.2])  # expected mean -0.7
    [c] = compare_scores(
        scores(list(base_values + drops)), scores(list(base_values)), CRITERIA, candidate_label="b", baseline_label="a"
    )
    assert c.diff.estimate == pytest.approx(float(drops.mean()))
    assert c.diff.low < c.diff.estimate < c.diff.high
    assert c.diff.low < -0.7 < c.diff.high


def test_pairing_removes_the_spread_between_items() -> None:
    """Items vary from 1 to 5 but every candidate is 0.5 +- 0.5 below its baseline: the interval stays narrow."""
    base_values = [1.0, 5.0] * 50
    cand_values = [b - (1.0 if i % 4 == 0 else 0.0) for i, b in enumerate(base_values)]  # mean drop 0.25
    [c] = compare_scores(scores(cand_values), scores(base_values), CRITERIA, candidate_label="b", baseline_label="a")
    assert c.diff.estimate == pytest.approx(-0.25)
    assert c.diff.high - c.diff.low < 0.3  # an unpaired interval of these means would be wider than 1.0


def test_unscored_and_missing_items_are_dropped_pairwise_and_counted() -> None:
    base = scores([5, 5, 5, 5, None, 5])
    cand = scores([4, 4, None, 4, 4])  # item-005 missing on the candidate side
    [c] = compare_scores(cand, base, CRITERIA, candidate_label="b", baseline_label="a")
    assert (c.diff.n, c.diff.n_dropped, c.diff.estimate) == (3, 3, -1.0)


def test_a_criterion_nobody_scored_has_no_pairs() -> None:
    [c] = compare_scores(scores([None] * 5), scores([None] * 5), CRITERIA, candidate_label="b", baseline_label="a")
    assert c.diff.n == 0 and not c.defined and not c.below(0.0)


# --- the decision ----------------------------------------------------------------------------------------


def test_no_interval_below_the_margin_passes_with_exit_0() -> None:
    result = decide([tier("full", comparison(-0.1, -0.3, 0.1))], margin=0.25, trust=Trust(True, "trusted"))
    assert (result.exit_code, result.outcome) == (0, "pass")
    assert result.summary.startswith("PASS (exit 0)")
    assert not result.warnings


def test_an_interval_entirely_below_minus_margin_is_a_regression_naming_tier_criterion_estimate_interval() -> None:
    result = decide([tier("quantized", comparison(-0.8, -1.1, -0.5))], margin=0.25, trust=Trust(True, "ok"))
    assert (result.exit_code, result.outcome) == (1, "regression")
    assert "tier quantized faithfulness -0.800 [-1.100, -0.500] vs r1" in result.summary


def test_an_interval_reaching_above_minus_margin_is_not_a_regression() -> None:
    """Estimate below -margin but the interval's upper end above it: not proven, so not a regression."""
    result = decide([tier("quantized", comparison(-0.4, -0.7, -0.1))], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 0


def test_the_first_release_of_a_tier_passes_with_a_note() -> None:
    result = decide([tier("full", baseline_release=None)], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 0
    assert any("tier full: first release" in note for note in result.notes)


def test_too_many_unscored_verdicts_cannot_be_evaluated() -> None:
    flaky = tier("full", comparison(0.0, -0.1, 0.1), unscored=11, unscored_reasons={"parse_error": 11})
    result = decide([flaky], margin=0.25, max_unscored_share=0.2, trust=Trust(True, "ok"))
    assert (result.exit_code, result.outcome) == (2, "error")
    assert "tier full: 11/50 (22%): parse_error 11 verdicts unscored" in result.reasons[0]


def test_unscored_share_at_the_limit_still_evaluates_with_a_note() -> None:
    ok = tier("full", comparison(0.0, -0.1, 0.1), unscored=10)
    result = decide([ok], margin=0.25, max_unscored_share=0.2, trust=Trust(True, "ok"))
    assert result.exit_code == 0 and any("10/50" in n for n in result.notes)


def test_an_unreachable_endpoint_cannot_be_evaluated_and_says_which() -> None:
    down = TierEvaluation("full", None, endpoint_ok=False, endpoint_detail="http://10.0.0.1/v1 did not answer")
    result = decide([down], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 2
    assert result.reasons == ["tier full: endpoint unreachable: http://10.0.0.1/v1 did not answer"]


def test_a_regression_wins_over_another_tier_that_could_not_be_evaluated_and_both_are_reported() -> None:
    down = TierEvaluation("full", None, endpoint_ok=False, endpoint_detail="down")
    result = decide([down, tier("quantized", comparison(-1.0, -1.2, -0.8))], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 1
    assert result.regressions[0].tier == "quantized" and "endpoint unreachable" in result.reasons[0]


def test_an_untrustworthy_judge_cannot_pass_or_fail_a_release() -> None:
    for comparisons in ([comparison(0.0, -0.1, 0.1)], [comparison(-1.0, -1.2, -0.8)]):
        result = decide([tier("full", *comparisons)], margin=0.25, trust=Trust(False, "AUROC 0.52\n  detail"))
        assert (result.exit_code, result.outcome) == (2, "error")
        assert result.reasons[0] == "judge not trustworthy: AUROC 0.52"


@pytest.mark.parametrize("trust", [None, Trust(None, "no trust record")])
def test_an_unmeasured_judge_cannot_pass_or_fail_a_release(trust: Trust | None) -> None:
    for comparisons in ([comparison(0.0, -0.1, 0.1)], [comparison(-1.0, -1.2, -0.8)]):
        result = decide([tier("full", *comparisons)], margin=0.25, trust=trust)
        assert (result.exit_code, result.outcome) == (2, "error") and not result.accepted_unvalidated
        assert result.reasons[0].startswith("judge not measured: ")
        assert result.summary.startswith("COULD NOT EVALUATE (exit 2): judge not measured: ")


@pytest.mark.parametrize("trustworthy", [None, False])
def test_a_judge_accepted_on_purpose_gates_and_says_so(trustworthy: bool | None) -> None:
    line = "ACCEPTED ON PURPOSE (--accept-unvalidated-judge): judge x: UNMEASURED"
    trust = Trust(None, line + "\n  detail", accepted_on_purpose=True)
    result = decide([tier("full", comparison(-1.0, -1.2, -0.8))], margin=0.25, trust=trust)
    assert result.exit_code == 1 and result.accepted_unvalidated == line and result.warnings[0] == line


def test_input_problems_cannot_be_evaluated() -> None:
    result = decide([], margin=0.25, problems=["dataset x invalid: row 3: field 'id': missing"])
    assert result.exit_code == 2 and result.summary.startswith("COULD NOT EVALUATE (exit 2): dataset x invalid")


def test_no_tier_at_all_cannot_be_evaluated() -> None:
    assert decide([], margin=0.25).exit_code == 2


def test_too_few_pairs_for_an_interval_cannot_be_evaluated() -> None:
    one = Comparison("faithfulness", "r2", "r1", 3.0, 4.0, PairedDiff(-1.0, -np.inf, np.inf, 1, 49, "none"))
    result = decide([tier("full", one)], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 2 and "too few for an interval" in result.reasons[0]


def test_no_item_in_common_with_the_baseline_cannot_be_evaluated() -> None:
    none = Comparison("faithfulness", "r2", "r1", np.nan, np.nan, PairedDiff(np.nan, np.nan, np.nan, 0, 50, "none"))
    result = decide([tier("full", none)], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 2 and "no item scored in both" in result.reasons[0]


def test_the_tier_gap_is_reported_unless_a_gap_margin_gates_it() -> None:
    gap = Comparison("faithfulness", "quantized", "full", 3.0, 4.0, PairedDiff(-1.0, -1.3, -0.7, 50, 0, "BCa"))
    passing = [tier("full", comparison(0.0, -0.1, 0.1))]
    reported = decide(passing, margin=0.25, gaps=[gap], trust=Trust(True, "ok"))
    assert reported.exit_code == 0 and any("quantized trails full" in w for w in reported.warnings)
    gated = decide(passing, margin=0.25, gaps=[gap], gap_margin=0.5, trust=Trust(True, "ok"))
    assert gated.exit_code == 1 and gated.regressions[0].tier == "quantized-vs-full"


def test_a_negative_margin_is_refused() -> None:
    with pytest.raises(ValueError, match="margin"):
        decide([], margin=-0.1)


# --- power ------------------------------------------------------------------------------------------------


def spread(n: int, sd: float) -> Comparison:
    return Comparison("faithfulness", "r2", "r1", 4.0, 4.0, PairedDiff(0.0, -0.1, 0.1, n, 0, "BCa", sd))


def test_each_criterion_states_the_drop_it_detects_and_a_margin_the_set_cannot_resolve_warns() -> None:
    small = decide([tier("quantized", spread(20, 1.2))], margin=0.1, trust=Trust(True, "ok"))
    (power,) = small.power
    assert (power.tier, power.criterion, power.n, power.sd, power.margin) == ("quantized", "faithfulness", 20, 1.2, 0.1)
    # 0.1 + (t(0.975, 19) + t(0.8, 19)) x 1.2 / sqrt(20) = 0.1 + (2.093 + 0.861) x 0.268
    assert power.detectable_drop == pytest.approx(0.893, abs=0.002)
    assert small.exit_code == 0 and any(
        "margin 0.1 is below what 20 golden items can detect" in w for w in small.warnings
    )
    assert small.to_dict()["power"][0]["detectable_drop"] == pytest.approx(power.detectable_drop)

    large = decide([tier("quantized", spread(400, 0.5))], margin=0.25, trust=Trust(True, "ok"))
    assert large.power[0].detectable_drop < 0.5 and not large.warnings


def test_a_first_release_or_an_unpaired_comparison_states_no_power() -> None:
    first = decide([tier("quantized", spread(20, 1.2), baseline_release=None)], margin=0.1, trust=Trust(True, "ok"))
    assert first.power == [] and not first.warnings
