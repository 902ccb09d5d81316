"""The within-release tier gap: each tier minus the baseline tier on the release's golden items, per criterion.

Tiers may answer different items (an answers file covering part of a set, by design or not). The rule, one per
tier pair over every golden set under test, from the items each tier answered (those with a verdict):
- the items both answered are at least `MIN_SHARED` (half) of the items the larger tier answered: the gap is
  paired on those common items (`tier_gap_same_items`, the gate's paired bootstrap); the items only one tier
  answered are outside the gap, counted and shown beside it;
- below that share the tiers answered different items: the gap is unpaired (`tier_gap_release_unpaired`), each
  tier's mean over all the items it answered and their difference with a Welch interval (`stats.unpaired`),
  worded "different items (n_a, n_b)", never "the same golden items".
Items a tier did not answer are never scored for it. The Tiers report's release gap uses the same labels and
share (`calibration.tier_gap`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from judgewatch.regression.gate import Comparison, ItemScores, compare_scores
from judgewatch.stats.unpaired import shares_items, welch_mean_diff

logger = logging.getLogger(__name__)

GAP_SAME_ITEMS = "tier_gap_same_items"  # paired on the golden items both tiers answered
GAP_RELEASE_UNPAIRED = "tier_gap_release_unpaired"  # tiers that answered different golden items


def _column(scores: ItemScores, criterion: str) -> NDArray[np.float64]:
    return np.array([math.nan if (v := s.get(criterion)) is None else v for s in scores.values()], dtype=float)


def _mean(values: NDArray[np.float64]) -> float:
    return float(np.nanmean(values)) if np.isfinite(values).any() else math.nan


def tier_gaps(
    candidate: ItemScores,
    baseline: ItemScores,
    criteria: Sequence[str],
    *,
    candidate_label: str,
    baseline_label: str,
    level: float = 0.95,
) -> list[Comparison]:
    """`candidate - baseline` per criterion, paired on the common items or unpaired (module docstring)."""
    common = sorted(candidate.keys() & baseline.keys())
    only_c, only_b = len(candidate) - len(common), len(baseline) - len(common)
    if shares_items(len(common), len(candidate), len(baseline)):
        paired = compare_scores(
            {k: candidate[k] for k in common},
            {k: baseline[k] for k in common},
            criteria,
            candidate_label=candidate_label,
            baseline_label=baseline_label,
            level=level,
        )
        return [
            replace(c, estimand=GAP_SAME_ITEMS, common=len(common), only_candidate=only_c, only_baseline=only_b)
            for c in paired
        ]
    logger.info(
        "%s vs %s: %d items in common of %d and %d answered: unpaired gap",
        candidate_label,
        baseline_label,
        len(common),
        len(candidate),
        len(baseline),
    )
    out = []
    for criterion in criteria:
        x, y = _column(candidate, criterion), _column(baseline, criterion)
        diff = welch_mean_diff(x, y, level=level)
        out.append(
            Comparison(
                criterion,
                candidate_label,
                baseline_label,
                _mean(x),
                _mean(y),
                diff,
                estimand=GAP_RELEASE_UNPAIRED,
                common=len(common),
                only_candidate=only_c,
                only_baseline=only_b,
            )
        )
    return out
