"""Agreement statistics against hand-computed textbook values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from judgewatch.stats.agreement import (
    bias,
    cohen_kappa,
    compare_kappas,
    confusion_matrix,
    exact_agreement,
    gwet_ac1,
    spearman,
    weighted_kappa,
)


def ratings_from_table(table: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Expand a contingency table (rows = rater a's category index, columns = rater b's) into rating pairs."""
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return np.array(a, dtype=float), np.array(b, dtype=float)


def test_cohen_kappa_matches_the_two_by_two_textbook_table() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa 0.4
    a, b = ratings_from_table([[20, 5], [10, 15]])
    k = cohen_kappa(a, b)
    assert k.estimate == pytest.approx(0.4)
    assert k.n == 50
    assert -1 <= k.low < 0.4 < k.high <= 1


def test_cohen_kappa_matches_a_hand_computed_three_category_table() -> None:
    # p_o = 87/100; rows 30/25/45, columns 30/24/46 -> p_e = (900 + 600 + 2070) / 10000 = 0.357
    a, b = ratings_from_table([[25, 2, 3], [4, 20, 1], [1, 2, 42]])
    assert cohen_kappa(a, b).estimate == pytest.approx((0.87 - 0.357) / (1 - 0.357))


def test_kappa_bootstrap_over_cells_matches_resampling_items() -> None:
    a, b = ratings_from_table([[20, 5], [10, 15]])
    k = cohen_kappa(a, b, n_boot=4000, seed=1)
    rng = np.random.default_rng(7)
    pick = rng.integers(0, a.size, size=(4000, a.size))  # resample items, then kappa by hand (binary)
    ra, rb = a[pick], b[pick]
    p_o = (ra == rb).mean(axis=1)
    p_a, p_b = ra.mean(axis=1), rb.mean(axis=1)
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)
    replicates = (p_o - p_e) / (1 - p_e)
    low, high = np.nanpercentile(replicates, [2.5, 97.5])
    assert k.low == pytest.approx(low, abs=0.03)
    assert k.high == pytest.approx(high, abs=0.03)


def test_kappa_interval_is_reproducible_with_the_same_seed() -> None:
    a, b = ratings_from_table([[20, 5], [10, 15]])
    assert cohen_kappa(a, b, seed=3) == cohen_kappa(a, b, seed=3)


def test_weighted_kappa_is_one_for_perfect_and_minus_one_for_reversed_ordinal_scores() -> None:
    scores = np.arange(1, 6, dtype=float)
    assert weighted_kappa(scores, scores, categories=range(1, 6)).estimate == pytest.approx(1.0)
    # reversed uniform scores: observed mean weight 0.5, expected 2*Var/16 = 0.25 -> kappa = 1 - 0.5/0.25
    assert weighted_kappa(scores, scores[::-1], categories=range(1, 6)).estimate == pytest.approx(-1.0)


def test_quadratic_weighted_kappa_matches_a_hand_computation() -> None:
    # pairs (1,1), (2,3), (3,3) on a 1-3 scale: observed sum w*p = 1/12, expected 5/12 -> kappa 0.8
    k = weighted_kappa([1, 2, 3], [1, 3, 3], categories=[1, 2, 3])
    assert k.estimate == pytest.approx(0.8)


def test_weighted_kappa_penalises_near_misses_less_than_far_misses() -> None:
    human = np.tile(np.arange(1, 6, dtype=float), 20)
    near = np.clip(human + np.tile([1.0, -1.0], 50), 1, 5)
    far = np.clip(human + np.tile([3.0, -3.0], 50), 1, 5)
    cats = range(1, 6)
    assert weighted_kappa(near, human, categories=cats).estimate > weighted_kappa(far, human, categories=cats).estimate


def test_confusion_matrix_keeps_the_given_category_order_and_drops_nan_pairs() -> None:
    cm = confusion_matrix([1, 2, np.nan, 3], [2, 3, 1, 3], categories=[3, 2, 1])
    assert cm.categories == (3.0, 2.0, 1.0)
    assert cm.n == 3
    assert cm.counts.tolist() == [[1, 0, 0], [1, 0, 0], [0, 1, 0]]


def test_confusion_matrix_rejects_ratings_outside_the_categories() -> None:
    with pytest.raises(ValueError, match="not among categories"):
        confusion_matrix([1, 7], [1, 2], categories=[1, 2, 3])


def test_kappa_is_undefined_when_both_raters_use_one_category() -> None:
    k = cohen_kappa([2, 2, 2], [2, 2, 2])
    assert np.isnan(k.estimate)
    assert k.n == 3


def test_exact_agreement_has_the_wilson_interval() -> None:
    # 35 of 50: Wilson 95% interval [0.5625, 0.8090] by hand
    e = exact_agreement([1] * 35 + [0] * 15, [1] * 50)
    assert e.estimate == pytest.approx(0.7)
    assert (e.low, e.high) == pytest.approx((0.5625, 0.8090), abs=1e-4)


def test_unscored_pairs_are_dropped_and_not_counted() -> None:
    e = exact_agreement([1, 2, np.nan, 4], [1, np.nan, 3, 4])
    assert e.n == 2
    assert e.estimate == 1.0


def test_spearman_matches_scipy_with_a_fisher_z_interval() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    rho = spearman(x, y)
    expected = sps.spearmanr(x, y).statistic
    half = 1.959964 * np.sqrt(1.06 / 77)
    assert rho.estimate == pytest.approx(expected)
    assert rho.low == pytest.approx(np.tanh(np.arctanh(expected) - half), abs=1e-6)
    assert rho.high == pytest.approx(np.tanh(np.arctanh(expected) + half), abs=1e-6)


def test_spearman_is_undefined_for_a_constant_rater() -> None:
    assert np.isnan(spearman([3, 3, 3, 3, 3], [1, 2, 3, 4, 5]).estimate)


def test_bias_is_mean_judge_minus_human_with_a_t_interval() -> None:
    # differences 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.302653 -> half width 4.302653 / sqrt(3)
    b = bias([2, 4, 6], [1, 2, 3])
    assert b.estimate == pytest.approx(2.0)
    assert (b.low, b.high) == pytest.approx((2 - 2.484138, 2 + 2.484138), abs=1e-5)


def test_gwet_ac1_stays_high_where_extreme_prevalence_collapses_kappa() -> None:
    judge = np.array([5.0] * 48 + [4.0, 5.0])  # 96% exact agreement, nearly every rating a 5
    human = np.array([5.0] * 48 + [5.0, 4.0])
    kappa = weighted_kappa(judge, human, categories=[1, 2, 3, 4, 5], n_boot=200)
    ac1 = gwet_ac1(judge, human, categories=[1, 2, 3, 4, 5], n_boot=200)
    assert kappa.estimate < 0.05
    assert ac1.estimate > 0.9 and ac1.low < ac1.estimate <= ac1.high


def test_bias_of_a_few_identical_differences_is_not_a_zero_width_interval() -> None:
    e = bias(np.array([5.0, 5.0, 5.0]), np.array([5.0, 5.0, 5.0]))
    assert e.estimate == 0.0 and e.high - e.low > 1.0


def test_compared_kappas_are_each_raters_weighted_kappa_and_their_paired_difference() -> None:
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, 200).astype(float)
    close = np.clip(human + rng.integers(-1, 2, 200), 1, 5)  # within a point of the reviewers
    loose = np.clip(human + rng.integers(-3, 4, 200), 1, 5)
    loose[:5] = np.nan  # an item a rater left unscored is left out of both kappas
    levels = [1.0, 2.0, 3.0, 4.0, 5.0]
    compared = compare_kappas(human, loose, close, categories=levels, seed=1)
    kept = ~np.isnan(loose)
    assert compared.a.estimate == pytest.approx(weighted_kappa(loose[kept], human[kept], categories=levels).estimate)
    assert compared.b.estimate == pytest.approx(weighted_kappa(close[kept], human[kept], categories=levels).estimate)
    assert compared.difference.n == 195
    assert compared.difference.estimate == pytest.approx(compared.b.estimate - compared.a.estimate)
    assert 0 < compared.difference.low < compared.difference.estimate < compared.difference.high
    same = compare_kappas(human, close, close, categories=levels)
    assert (same.difference.estimate, same.difference.low, same.difference.high) == (0.0, 0.0, 0.0)


def test_the_paired_interval_of_two_correlated_kappas_is_narrower_than_their_separate_intervals() -> None:
    rng = np.random.default_rng(5)
    human = rng.integers(1, 6, 120).astype(float)
    a = np.clip(human + rng.integers(-1, 2, 120), 1, 5)
    b = a.copy()
    b[:12] = human[:12]  # the same rater, corrected on a tenth of the items
    compared = compare_kappas(human, a, b, categories=[1, 2, 3, 4, 5], seed=2)
    separate = compared.b.low - compared.a.high  # what two unpaired intervals could tell apart
    assert compared.difference.low > 0 > separate


def test_an_item_weighted_twice_counts_as_two_items_in_the_compared_kappas() -> None:
    rng = np.random.default_rng(11)
    human = rng.integers(1, 6, 60).astype(float)
    a = np.clip(human + rng.integers(-2, 3, 60), 1, 5)
    b = np.clip(human + rng.integers(-1, 2, 60), 1, 5)
    weights = np.where(np.arange(60) < 20, 2.0, 1.0)  # the first 20 items routed with half the probability
    twice = np.r_[np.arange(60), np.arange(20)]
    weighted = compare_kappas(human, a, b, categories=[1, 2, 3, 4, 5], item_weights=weights)
    repeated = compare_kappas(human[twice], a[twice], b[twice], categories=[1, 2, 3, 4, 5])
    for one, other in ((weighted.a, repeated.a), (weighted.b, repeated.b)):
        assert one.estimate == pytest.approx(other.estimate)
    assert weighted.difference.n == 60 and weighted.n_effective == pytest.approx(80**2 / (20 * 4 + 40))
