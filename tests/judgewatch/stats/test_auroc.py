"""AUROC (Mann-Whitney, ties one half) and its seeded bootstrap interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgewatch.stats.auroc import auroc, auroc_interval


def _brute(good: np.ndarray, bad: np.ndarray) -> float:
    g, b = good[np.isfinite(good)], bad[np.isfinite(bad)]
    return float(((g[:, None] > b[None, :]).sum() + 0.5 * (g[:, None] == b[None, :]).sum()) / (g.size * b.size))


def test_constant_scores_are_exactly_chance_and_perfect_separation_is_one() -> None:
    assert auroc([3, 3, 3], [3, 3]) == 0.5
    assert auroc([5, 4], [1, 2, 3]) == 1.0
    assert auroc([1, 2], [4, 5]) == 0.0
    assert auroc([2, 1], [1]) == 0.75  # one win, one tie


def test_matches_the_pairwise_count_and_ignores_unscored() -> None:
    rng = np.random.default_rng(7)
    good = rng.integers(1, 6, 200).astype(float)
    bad = rng.integers(1, 5, 150).astype(float)
    good[::9], bad[::4] = np.nan, np.nan
    assert auroc(good, bad) == pytest.approx(_brute(good, bad))
    assert math.isnan(auroc([np.nan], [1.0]))


def test_bootstrap_interval_is_seeded_covers_the_estimate_and_counts_scored_answers() -> None:
    rng = np.random.default_rng(1)
    good = rng.integers(2, 6, 60).astype(float)
    bad = np.clip(good - rng.integers(0, 3, 60), 1, 5).astype(float)
    bad[:6] = np.nan
    first = auroc_interval(good, bad, seed=3)
    assert first == auroc_interval(good, bad, seed=3)
    assert first.low < first.estimate < first.high and first.n == 114
    unpaired = auroc_interval(good, bad, paired=False, seed=3)
    assert unpaired.estimate == first.estimate and unpaired.low < unpaired.estimate < unpaired.high


def test_interval_needs_two_scored_answers_per_side_and_paired_arrays_of_one_length() -> None:
    tiny = auroc_interval([5.0, np.nan], [1.0, 2.0])
    assert tiny.estimate == 1.0 and math.isnan(tiny.low) and math.isnan(tiny.high)
    with pytest.raises(ValueError, match="one bad score per good score"):
        auroc_interval([1, 2, 3], [1, 2])
    constant = auroc_interval([3.0] * 10, [3.0] * 10)
    assert (constant.estimate, constant.low, constant.high) == (0.5, 0.5, 0.5)
