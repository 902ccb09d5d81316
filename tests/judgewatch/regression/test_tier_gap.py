"""Tiers of one release that answered different items: the gap's rule, the gate on it, and how the report says it.

Plain functions (no store, no Prefect): `tests/flows/test_regression.py` runs the same through `regress`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pytest

from judgewatch.regression.gate import Comparison, TierEvaluation, decide
from judgewatch.regression.report import RegressionReport, TierSection, render_markdown, to_json
from judgewatch.regression.tier_gap import GAP_RELEASE_UNPAIRED, GAP_SAME_ITEMS, tier_gaps

CRITERIA = ["faithfulness"]


@dataclass
class Trust:
    trustworthy: bool | None
    summary: str
    accepted_on_purpose: bool = False


Scores = dict[str, dict[str, float | None]]


def scores(ids: range, values: Sequence[float | None] | float, prefix: str = "set/item") -> Scores:
    per_item = [values] * len(ids) if isinstance(values, float) else values
    return {f"{prefix}-{k:03d}": {"faithfulness": v} for k, v in zip(ids, per_item, strict=True)}


def quantized_vs_full(candidate: Scores, baseline: Scores) -> list[Comparison]:
    """The gap of tier quantized (candidate) against tier full (baseline) on CRITERIA."""
    return tier_gaps(candidate, baseline, CRITERIA, candidate_label="quantized", baseline_label="full")


def gap(candidate: Scores, baseline: Scores) -> Comparison:
    (out,) = quantized_vs_full(candidate, baseline)
    return out


def spread(n: int, center: float, seed: int) -> list[float]:
    return list(np.clip(np.round(np.random.default_rng(seed).normal(center, 0.8, n)), 1, 5))


def passing_tier(name: str) -> TierEvaluation:
    return TierEvaluation(name, None, total=40)


# --- the rule -------------------------------------------------------------------------------------------------


def test_disjoint_items_give_an_unpaired_gap_worded_different_items_never_the_same() -> None:
    g = gap(scores(range(0, 30), spread(30, 3.0, 1)), scores(range(100, 120), spread(20, 4.5, 2)))
    assert g.estimand == GAP_RELEASE_UNPAIRED and not g.paired and g.diff.method == "welch"
    assert (g.diff.n_candidate, g.diff.n_baseline, g.common) == (30, 20, 0)
    assert g.items() == "different items (30 quantized, 20 full; 0 answered by both)"
    assert "same" not in g.basis() and g.basis().startswith("tier_gap_release_unpaired: different items")
    assert g.diff.estimate == pytest.approx(g.candidate_mean - g.baseline_mean)
    assert g.diff.low < g.diff.estimate < g.diff.high < 0


def test_mostly_shared_items_are_paired_on_the_common_ones_and_the_rest_counted() -> None:
    cand = scores(range(0, 40), [4.0] * 40)
    base = scores(range(10, 45), [5.0] * 35)  # 30 in common of 40 and 35 answered: paired
    g = gap(cand, base)
    assert g.estimand == GAP_SAME_ITEMS and g.paired
    assert (g.diff.n, g.common, g.only_candidate, g.only_baseline) == (30, 30, 10, 5)
    assert g.diff.estimate == pytest.approx(-1.0) and g.diff.n_dropped == 0  # answered by one tier only: not "dropped"
    assert g.items() == (
        "the same golden items (30 answered by both, paired); 10 answered by quantized only and 5 by full only, "
        "outside the gap"
    )


def test_a_small_overlap_is_unpaired_over_each_tiers_own_items() -> None:
    cand = scores(range(0, 40), [4.0] * 30 + [2.0] * 10)
    base = scores(range(30, 70), [5.0] * 10 + [3.0] * 30)  # 10 in common: a quarter of either tier's
    g = gap(cand, base)
    assert g.estimand == GAP_RELEASE_UNPAIRED and (g.diff.n_candidate, g.diff.n_baseline, g.common) == (40, 40, 10)
    assert g.diff.estimate == pytest.approx(3.5 - 3.5)


def test_unscored_items_are_left_out_of_both_kinds_and_counted() -> None:
    cand = scores(range(0, 20), [4.0] * 18 + [None, None])
    g = gap(cand, scores(range(50, 70), spread(20, 4.0, 3)))
    assert not g.paired and (g.diff.n_candidate, g.diff.n_dropped) == (18, 2)


# --- the gate ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("baseline_ids", "estimand", "kind"),
    [(range(0, 40), GAP_SAME_ITEMS, "the same golden items"), (range(100, 140), GAP_RELEASE_UNPAIRED, "different")],
)
def test_the_gap_margin_gates_either_kind_and_the_exit_code_names_the_kind(
    baseline_ids: range, estimand: str, kind: str
) -> None:
    gaps = quantized_vs_full(
        scores(range(0, 40), spread(40, 3.0, 4)),
        scores(baseline_ids, spread(40, 4.5, 5)),
    )
    tiers = [passing_tier("full"), passing_tier("quantized")]
    gated = decide(tiers, margin=0.25, gaps=gaps, gap_margin=0.3, trust=Trust(True, "ok"))
    assert gated.exit_code == 1 and gated.regressions[0].tier == "quantized-vs-full"
    assert gated.regressions[0].basis.startswith(f"{estimand}: {kind}")
    assert f"({estimand}: {kind}" in gated.summary
    assert any(
        n.startswith(f"tier gap quantized vs full (gated at --gap-margin 0.3) rests on {estimand}") for n in gated.notes
    )

    wide = decide(tiers, margin=0.25, gaps=gaps, gap_margin=3.0, trust=Trust(True, "ok"))
    assert (
        wide.exit_code == 0 and f"tier gap within --gap-margin: quantized vs full ({estimand}: {kind}" in wide.summary
    )
    reported = decide(tiers, margin=0.25, gaps=gaps, trust=Trust(True, "ok"))
    assert reported.exit_code == 0 and any("quantized trails full" in w for w in reported.warnings)
    assert any("(reported, not gated) rests on " + estimand in n for n in reported.notes)


def test_a_gated_gap_without_an_interval_cannot_be_evaluated() -> None:
    gaps = quantized_vs_full(
        scores(range(0, 10), spread(10, 3.0, 6)),
        scores(range(100, 101), [5.0]),  # one item on the baseline tier: no Welch interval
    )
    result = decide([passing_tier("full")], margin=0.25, gaps=gaps, gap_margin=0.3, trust=Trust(True, "ok"))
    assert result.exit_code == 2 and "too few items for an interval" in result.reasons[0]
    assert "tier_gap_release_unpaired: different items (10 quantized, 1 full" in result.reasons[0]


def test_items_a_tier_did_not_answer_are_noted_and_outside_its_unscored_share() -> None:
    tier = TierEvaluation("quantized", None, total=30, unscored=3, unanswered={"set": [f"i{k}" for k in range(10)]})
    result = decide([tier], margin=0.25, trust=Trust(True, "ok"))
    assert result.exit_code == 0 and tier.unscored_share == pytest.approx(0.1)
    assert "tier quantized: answered 30 of 40 golden items (75%); 10 not answered (25%), never scored" in "\n".join(
        result.notes
    )


# --- the report -------------------------------------------------------------------------------------------------


def _report(baseline_ids: range) -> RegressionReport:
    gaps = quantized_vs_full(
        scores(range(0, 30), spread(30, 3.0, 7)),
        scores(baseline_ids, spread(30, 4.0, 8)),
    )
    missing = [f"set/item-{k:03d}" for k in range(30, 55)]
    quantized = TierEvaluation("quantized", None, total=30, unanswered={"set": missing})
    tiers = [passing_tier("full"), quantized]
    report = RegressionReport(
        "r1",
        datetime(2026, 12, 1, tzinfo=UTC),
        {"set": "abc"},
        decide(tiers, margin=0.25, gaps=gaps, trust=Trust(True, "ok")),
        0.25,
        0.2,
    )
    report.tiers = [
        TierSection("full", "recorded:f.jsonl", tiers[0]),
        TierSection("quantized", "recorded:q.jsonl", quantized),
    ]
    report.gaps = gaps
    return report


def test_the_report_labels_an_unpaired_gap_and_lists_the_items_a_tier_did_not_answer() -> None:
    report = _report(range(100, 130))
    text = render_markdown(report)
    assert "## Tier gap: quantized vs full (same release, unpaired: different items)" in text
    assert "Estimand `tier_gap_release_unpaired`: different items (30 quantized, 30 full; 0 answered by both)" in text
    assert "the same golden items" not in text and "paired by item" not in text
    assert "| 30 + 30 (unpaired) |" in text and "| welch |" in text
    assert "- answered 30 of 55 golden items (55%); 25 not answered (45%), never scored for this tier:" in text
    assert "  - set: 25: set/item-030, set/item-031" in text and "(and 5 more: all in the JSON report)" in text

    data = json.loads(json.dumps(to_json(report)))
    (g,) = data["gaps"]
    assert (g["estimand"], g["paired"], g["items"]) == (
        "tier_gap_release_unpaired",
        False,
        "different items (30 quantized, 30 full; 0 answered by both)",
    )
    assert (g["diff"]["n_candidate"], g["diff"]["n_baseline"], g["diff"]["method"]) == (30, 30, "welch")
    quantized = data["tiers"][1]["evaluation"]
    assert quantized["unanswered"]["set"] == [f"set/item-{k:03d}" for k in range(30, 55)]
    assert quantized["unanswered_count"] == 25


def test_the_report_labels_a_paired_gap_on_the_same_items() -> None:
    report = _report(range(0, 30))
    text = render_markdown(report)
    assert "## Tier gap: quantized vs full (same release, paired on the same items)" in text
    assert "Estimand `tier_gap_same_items`: the same golden items (30 answered by both, paired)" in text
    (g,) = to_json(report)["gaps"]
    assert (g["estimand"], g["paired"], g["diff"]["n"]) == ("tier_gap_same_items", True, 30)
