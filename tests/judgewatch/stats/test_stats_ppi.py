"""Prediction-powered inference: coverage on synthetic data with a known truth, weighting, tier differences."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.ppi import classical_mean, ppi_diff_unpaired, ppi_mean


def population(rng: np.random.Generator, size: int, judge_noise: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Human scores with true mean 1.0 and a biased, noisy judge (slope 0.8, offset -0.5)."""
    x = rng.normal(size=size)
    human = 1.0 + x + rng.normal(scale=0.7, size=size)
    judge = 0.5 + 0.8 * x + rng.normal(scale=judge_noise, size=size)
    return human, judge


def test_ppi_interval_covers_the_true_mean_at_its_nominal_rate() -> None:
    rng = np.random.default_rng(11)
    covered = []
    for _ in range(500):
        human, judge = population(rng, 2000)
        labeled = rng.random(2000) < 0.1
        e = ppi_mean(human[labeled], judge[labeled], judge)
        covered.append(e.low <= 1.0 <= e.high)
    assert 0.925 <= np.mean(covered) <= 0.975


def test_a_good_judge_narrows_the_interval_beyond_the_human_only_one() -> None:
    rng = np.random.default_rng(1)
    human, judge = population(rng, 5000, judge_noise=0.2)
    labeled = rng.random(5000) < 0.1
    ppi = ppi_mean(human[labeled], judge[labeled], judge)
    human_only = classical_mean(human[labeled])
    assert ppi.high - ppi.low < 0.7 * (human_only.high - human_only.low)
    assert ppi.effective_n > 2 * ppi.n
    assert 0.0 < ppi.lam <= 1.0


def test_a_useless_judge_gets_almost_no_weight_and_costs_almost_nothing() -> None:
    rng = np.random.default_rng(2)
    human = rng.normal(size=5000)
    noise_judge = rng.normal(size=5000)
    labeled = rng.random(5000) < 0.1
    ppi = ppi_mean(human[labeled], noise_judge[labeled], noise_judge)
    human_only = classical_mean(human[labeled])
    assert ppi.lam < 0.15
    assert (ppi.high - ppi.low) / (human_only.high - human_only.low) == pytest.approx(1.0, abs=0.05)


def test_fixed_lambda_one_is_the_original_ppi_estimate() -> None:
    rng = np.random.default_rng(3)
    human, judge = population(rng, 1000)
    y, f = human[:100], judge[:100]
    e = ppi_mean(y, f, judge, lam=1.0)
    assert e.estimate == pytest.approx(judge.mean() + (y - f).mean())
    assert e.lam == 1.0


def test_classical_mean_is_the_hc3_student_t_interval_of_the_labels() -> None:
    y = np.array([1.0, 2.0, 4.0, 5.0, 3.0])
    e = classical_mean(y)
    # t quantile with 4 degrees of freedom; HC3 scales each residual by 1 / (1 - 1/5)
    half = 2.776445 * np.sqrt(np.sum(((y - 3.0) / 0.8) ** 2)) / 5
    assert e.estimate == pytest.approx(3.0)
    assert (e.low, e.high) == pytest.approx((3.0 - half, 3.0 + half), abs=1e-5)


def test_a_few_identical_labels_never_give_a_zero_width_interval() -> None:
    for n in (2, 3, 5):
        y = np.full(n, 5.0)
        human = classical_mean(y)
        corrected = ppi_mean(y, y, np.full(40, 5.0))  # the judge agrees on every labeled item
        for e in (human, corrected):
            assert e.estimate == pytest.approx(5.0)
            assert e.high - e.low > 0.5, (n, e)


def test_below_the_minimum_of_labels_there_is_no_interval() -> None:
    y = np.array([4.0, 5.0, 3.0])
    e = ppi_mean(y, y, np.array([4.0, 5.0, 3.0, 4.0]), min_labels=5)
    assert e.estimate == pytest.approx(4.0) and np.isnan(e.low) and np.isnan(e.high)
    assert np.isfinite(ppi_mean(y, y, np.array([4.0, 5.0, 3.0, 4.0]), min_labels=3).low)


def test_inverse_probability_weights_remove_the_bias_of_targeted_routing() -> None:
    # borderline items (g) are routed 8x more often and the judge over-scores them by a full point
    rng = np.random.default_rng(4)
    weighted_err, unweighted_err, covered = [], [], []
    for _ in range(800):
        g = rng.random(2000) < 0.3
        judge = rng.integers(1, 6, size=2000).astype(float)
        human = np.clip(judge + np.round(rng.normal(size=2000)) - 1.0 * g, 1, 5)
        pi = np.where(g, 0.4, 0.05)
        labeled = rng.random(2000) < pi
        w = ppi_mean(human[labeled], judge[labeled], judge, inclusion_prob=pi[labeled])
        u = ppi_mean(human[labeled], judge[labeled], judge)
        weighted_err.append(w.estimate - human.mean())
        unweighted_err.append(u.estimate - human.mean())
        covered.append(w.low <= human.mean() <= w.high)
    standard_error = np.std(weighted_err) / np.sqrt(len(weighted_err))
    assert abs(np.mean(weighted_err)) < 3 * standard_error
    assert np.mean(unweighted_err) < -0.2  # what ignoring the inclusion probabilities would have cost
    assert np.mean(covered) >= 0.93


def test_uniform_inclusion_probabilities_change_nothing() -> None:
    rng = np.random.default_rng(5)
    human, judge = population(rng, 1000)
    plain = ppi_mean(human[:100], judge[:100], judge)
    uniform = ppi_mean(human[:100], judge[:100], judge, inclusion_prob=np.full(100, 0.1))
    assert uniform.estimate == pytest.approx(plain.estimate)
    assert uniform.se == pytest.approx(plain.se)


def test_unpaired_tier_difference_covers_the_true_difference() -> None:
    rng = np.random.default_rng(6)
    covered = []
    for _ in range(300):
        human_a, judge_a = population(rng, 1500)
        human_b, judge_b = population(rng, 1500)
        human_b += 0.3
        judge_b += 0.3
        la, lb = rng.random(1500) < 0.1, rng.random(1500) < 0.1
        a = ppi_mean(human_a[la], judge_a[la], judge_a)
        b = ppi_mean(human_b[lb], judge_b[lb], judge_b)
        d = ppi_diff_unpaired(a, b)
        covered.append(d.low <= -0.3 <= d.high)
    assert 0.92 <= np.mean(covered) <= 0.98


def test_paired_tier_difference_is_narrower_when_items_drive_the_scores() -> None:
    rng = np.random.default_rng(7)
    difficulty = rng.normal(scale=3.0, size=3000)  # shared by both tiers' answers to the same item
    human_a = difficulty + rng.normal(scale=0.5, size=3000)
    human_b = difficulty - 0.2 + rng.normal(scale=0.5, size=3000)
    judge_a = human_a + rng.normal(scale=0.5, size=3000)
    judge_b = human_b + rng.normal(scale=0.5, size=3000)
    s = rng.random(3000) < 0.1
    paired = ppi_mean(human_a[s] - human_b[s], judge_a[s] - judge_b[s], judge_a - judge_b)  # on the differences
    unpaired = ppi_diff_unpaired(ppi_mean(human_a[s], judge_a[s], judge_a), ppi_mean(human_b[s], judge_b[s], judge_b))
    assert paired.low <= 0.2 <= paired.high
    assert paired.high - paired.low < 0.5 * (unpaired.high - unpaired.low)


def test_unscored_judge_scores_are_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="yhat_all holds NaN"):
        ppi_mean([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, np.nan])


def test_inclusion_probabilities_must_be_probabilities() -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        ppi_mean([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], inclusion_prob=[0.5, 0.0])


def test_no_labels_give_no_estimate() -> None:
    e = ppi_mean([], [], [1.0, 2.0])
    assert np.isnan(e.estimate)
    assert e.n == 0
