"""The unpaired release comparison: Welch's interval on two tiers' different items, and when tiers are paired."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from judgewatch.stats.unpaired import shares_items, welch_mean_diff


def test_the_interval_is_welchs_with_satterthwaite_degrees_of_freedom() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.integers(1, 6, 23).astype(float), rng.integers(2, 6, 9).astype(float)
    d = welch_mean_diff(x, y, level=0.9)
    expected = sps.ttest_ind(x, y, equal_var=False)
    low, high = expected.confidence_interval(0.9)
    assert d.method == "welch" and (d.n_candidate, d.n_baseline, d.n) == (23, 9, 9)
    assert d.estimate == pytest.approx(x.mean() - y.mean())
    assert (d.low, d.high, d.df) == pytest.approx((low, high, expected.df))


@pytest.mark.parametrize("n", [5, 10, 40])
def test_the_interval_covers_the_true_difference_of_bounded_scores_at_small_n(n: int) -> None:
    rng = np.random.default_rng(n)
    levels = np.arange(1, 6, dtype=float)
    p_a, p_b = np.array([0.05, 0.1, 0.2, 0.3, 0.35]), np.array([0.3, 0.3, 0.2, 0.1, 0.1])
    truth = float(levels @ p_a - levels @ p_b)
    draws = 2000
    diffs = [welch_mean_diff(rng.choice(levels, n, p=p_a), rng.choice(levels, n + 3, p=p_b)) for _ in range(draws)]
    covered = sum(d.low <= truth <= d.high for d in diffs)
    assert covered / draws >= 0.93


def test_unscored_values_are_left_out_and_counted_and_one_score_on_a_side_has_no_interval() -> None:
    d = welch_mean_diff([4.0, np.nan, 5.0, 3.0], [np.nan, 2.0, 3.0])
    assert (d.n_candidate, d.n_baseline, d.n_dropped) == (3, 2, 2) and d.estimate == pytest.approx(1.5)
    lone = welch_mean_diff([4.0, 5.0], [np.nan, 3.0])
    assert lone.method == "none" and lone.n == 1 and np.isinf(lone.high)
    empty = welch_mean_diff([4.0], [np.nan])
    assert empty.n == 0 and np.isnan(empty.estimate)


@pytest.mark.parametrize(
    ("common", "n_a", "n_b", "paired"),
    [(40, 40, 40, True), (20, 40, 25, True), (19, 40, 40, False), (0, 30, 30, False), (0, 0, 0, False)],
)
def test_tiers_are_paired_when_common_items_are_half_of_the_larger_tiers(
    common: int, n_a: int, n_b: int, paired: bool
) -> None:
    assert shares_items(common, n_a, n_b) is paired
