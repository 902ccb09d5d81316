"""The within-release tier gap: each tier minus the baseline tier on the golden items each answered, per criterion,
paired or unpaired (docs/release_gate.md, "Tiers that answered different items"). The Tiers report's release gap
uses the same labels and share (`calibration.tier_gap`).
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
    candidate: ItemScores, baseline: ItemScores, criteria: Sequence[str], *, candidate_label: str, baseline_label: str
) -> list[Comparison]:
    """`candidate - baseline` per criterion, paired on the common items or unpaired (module docstring)."""
    common = sorted(candidate.keys() & baseline.keys())

    def counted(gap: Comparison, estimand: str) -> Comparison:
        only_c, only_b = len(candidate) - len(common), len(baseline) - len(common)
        return replace(gap, estimand=estimand, common=len(common), only_candidate=only_c, only_baseline=only_b)

    if shares_items(len(common), len(candidate), len(baseline)):
        paired = compare_scores(
            {k: candidate[k] for k in common},
            {k: baseline[k] for k in common},
            criteria,
            candidate_label=candidate_label,
            baseline_label=baseline_label,
        )
        return [counted(c, GAP_SAME_ITEMS) for c in paired]
    logger.info(
        "%s vs %s: %d items in common of %d and %d answered: unpaired gap",
        candidate_label, baseline_label, len(common), len(candidate), len(baseline),
    )  # fmt: skip
    gaps = []
    for criterion in criteria:
        x, y = _column(candidate, criterion), _column(baseline, criterion)
        gap = Comparison(criterion, candidate_label, baseline_label, _mean(x), _mean(y), welch_mean_diff(x, y))
        gaps.append(counted(gap, GAP_RELEASE_UNPAIRED))
    return gaps
