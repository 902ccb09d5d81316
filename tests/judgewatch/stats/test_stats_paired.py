"""Paired candidate-vs-baseline comparison and the regression rule the release gate applies."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.paired import align_scores, paired_mean_diff, regressed


def test_identical_releases_give_a_zero_width_interval_at_zero() -> None:
    scores = np.array([3.0, 4.0, 5.0, 2.0] * 10)
    d = paired_mean_diff(scores, scores)
    assert (d.estimate, d.low, d.high, d.method) == (0.0, 0.0, 0.0, "constant")
    assert not regressed(d.high, margin=0.0)


def test_a_constant_drop_is_a_zero_width_interval_at_the_drop() -> None:
    baseline = np.array([4.0, 5.0, 3.0] * 10)
    d = paired_mean_diff(baseline - 1.0, baseline)
    assert (d.low, d.high) == (-1.0, -1.0)
    assert regressed(d.high, margin=0.5)


def test_bootstrap_interval_matches_the_t_interval_for_normal_differences() -> None:
    rng = np.random.default_rng(0)
    baseline = rng.normal(3.0, 1.0, 400)
    candidate = baseline - 0.3 + rng.normal(0.0, 0.6, 400)
    d = paired_mean_diff(candidate, baseline, n_resamples=4000)
    diff = candidate - baseline
    half = 1.966 * diff.std(ddof=1) / np.sqrt(400)
    assert d.method == "BCa"
    assert d.estimate == pytest.approx(diff.mean())
    assert d.low == pytest.approx(diff.mean() - half, abs=0.01)
    assert d.high == pytest.approx(diff.mean() + half, abs=0.01)


def test_pairing_removes_the_item_difficulty_from_the_interval() -> None:
    rng = np.random.default_rng(1)
    difficulty = rng.normal(0.0, 2.0, 300)
    baseline = difficulty + rng.normal(0.0, 0.2, 300)
    candidate = difficulty - 0.1 + rng.normal(0.0, 0.2, 300)
    d = paired_mean_diff(candidate, baseline, n_resamples=2000)
    assert d.high < 0  # a 0.1 drop is visible although items vary by +-2
    unpaired_half = 1.96 * np.sqrt(candidate.var(ddof=1) / 300 + baseline.var(ddof=1) / 300)
    assert d.high - d.low < 0.2 * 2 * unpaired_half


def test_unscored_items_are_dropped_pairwise_and_counted() -> None:
    candidate = np.array([3.0, np.nan, 4.0, 5.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0, 4.0])
    baseline = np.array([3.0, 4.0, np.nan, 4.0, 2.0, 3.0, 5.0, 5.0, 2.0, 2.0, 3.0, 3.0])
    d = paired_mean_diff(candidate, baseline)
    assert (d.n, d.n_dropped) == (10, 2)


def test_scores_are_aligned_by_item_id_with_missing_sides_as_nan() -> None:
    ids, cand, base = align_scores({"b": 4.0, "a": 3.0, "c": None}, {"a": 2.0, "c": 5.0, "d": 1.0})
    assert ids == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(cand, [3.0, 4.0, np.nan, np.nan])
    np.testing.assert_array_equal(base, [2.0, np.nan, 5.0, 1.0])
    d = paired_mean_diff(cand, base)
    assert (d.n, d.n_dropped, d.estimate) == (1, 3, 1.0)


def test_too_few_pairs_fall_back_to_a_t_interval() -> None:
    # differences 1, 2, 3: t(0.975, 2) * 1 / sqrt(3) = 2.484138
    d = paired_mean_diff([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert d.method == "t"
    assert (d.low, d.high) == pytest.approx((2 - 2.484138, 2 + 2.484138), abs=1e-5)


def test_one_pair_has_no_interval_and_never_regresses() -> None:
    d = paired_mean_diff([1.0], [5.0])
    assert (d.low, d.high, d.method) == (-np.inf, np.inf, "none")
    assert not regressed(d.high, margin=0.0)


def test_no_pairs_give_nan_and_never_regress() -> None:
    d = paired_mean_diff([np.nan, 2.0], [1.0, np.nan])
    assert d.n == 0 and d.n_dropped == 2 and np.isnan(d.high)
    assert not regressed(d.high, margin=0.1)


def test_interval_is_reproducible_with_the_same_seed() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=50), rng.normal(size=50)
    assert paired_mean_diff(a, b, seed=9) == paired_mean_diff(a, b, seed=9)


def test_regressed_means_the_whole_interval_lies_below_minus_margin() -> None:
    assert regressed(-0.21, margin=0.2)
    assert not regressed(-0.2, margin=0.2)  # touching the margin is not beyond it
    assert not regressed(0.5, margin=0.0)
    with pytest.raises(ValueError, match="margin"):
        regressed(-1.0, margin=-0.1)
