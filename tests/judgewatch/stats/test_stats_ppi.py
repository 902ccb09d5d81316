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
    # unbounded scores: the pseudo-labels sit at the labels' own extremes, a little conservative (0.978 here)
    assert 0.925 <= np.mean(covered) <= 0.985


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


def test_classical_mean_is_the_hc3_student_t_interval_with_pseudo_labels_at_the_scale_ends() -> None:
    y = np.array([1.0, 2.0, 4.0, 5.0, 3.0])
    e = classical_mean(y)
    # kappa = z^2 pseudo-labels, half at 1 and half at 5, each weighing as a label; HC3 over the augmented total;
    # t quantile with 4 degrees of freedom on the real labels
    kappa = 1.959964**2
    total = 5 + kappa
    centre = (y.sum() + kappa / 2 * (1 + 5)) / total
    dev = (y - centre) / (1 - 1 / total)
    half = 2.776445 * np.sqrt(np.sum(dev**2) + kappa / 2 * ((1 - centre) ** 2 + (5 - centre) ** 2)) / total
    assert e.estimate == pytest.approx(3.0) and centre == pytest.approx(3.0)
    assert (e.low, e.high) == pytest.approx((3.0 - half, 3.0 + half), abs=1e-5)


def test_an_interval_never_leaves_the_scale() -> None:
    e = classical_mean(np.full(6, 5.0))
    assert e.high == 5.0 and 2.5 < e.low < 4.0
    low_end = ppi_mean(np.full(6, 1.0), np.full(6, 1.0), np.full(50, 1.0))
    assert low_end.low == 1.0 and 1.5 < low_end.high < 3.5


def test_the_interval_holds_the_estimate_although_its_centre_moves_towards_the_middle() -> None:
    # the centre moves by kappa / (n + kappa) of the way to the middle, the half-width is at least t / z of that
    rng = np.random.default_rng(10)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        y = rng.choice([1.0, 2.0, 5.0], n, p=[0.8, 0.15, 0.05])
        f = np.clip(y + rng.integers(-1, 2, n), 1, 5)
        pi = rng.uniform(0.05, 0.5, n)
        for e in (ppi_mean(y, f, np.concatenate([f, f]), inclusion_prob=pi), classical_mean(y, inclusion_prob=pi)):
            if 1.0 <= e.estimate <= 5.0:
                assert e.low <= e.estimate <= e.high, (y, e)


def test_an_estimate_beyond_the_scale_still_gets_an_interval_inside_it() -> None:
    # the judge gave the labeled items 3 and everything else 5, the labels say 5: plain PPI overshoots to 7,
    # which no mean of 1-5 scores can be; the estimate is brought to the scale's edge, inside its interval
    e = ppi_mean(np.full(30, 5.0), np.full(30, 3.0), np.full(100, 5.0), lam=1.0)
    assert e.estimate == pytest.approx(5.0)
    assert 1.0 <= e.low < e.high == 5.0


def rare_high(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A tier like BEGIN's weak generators: 7 of 175 answers score 5, the rest 1 (mean 1.16); a noisy judge."""
    human = np.where(np.arange(175) < 7, 5.0, 1.0)
    judge = np.clip(human - 1.5 * (human == 5) + rng.integers(0, 2, 175), 1, 5)
    return human, judge


def test_labels_that_all_missed_a_rare_high_score_still_reach_the_true_mean() -> None:
    # 18 labels (10%), every one a 1: the symmetric t interval around 1.0 was [0.88, 1.12] and missed 1.16
    human, judge = rare_high(np.random.default_rng(8))
    pick = np.arange(100, 118)
    assert np.all(human[pick] == 1.0)
    for e in (ppi_mean(human[pick], judge[pick], judge), classical_mean(human[pick])):
        assert e.low == 1.0 and e.high > human.mean() + 0.3, e


def test_rare_high_scores_are_covered_at_the_nominal_rate_with_18_labels() -> None:
    # about half the draws hold no 5; the old symmetric interval covered about 60% of them
    rng = np.random.default_rng(9)
    human, judge = rare_high(rng)
    covered: dict[str, list[bool]] = {"ppi": [], "human": []}
    for _ in range(400):
        pick = rng.choice(175, 18, replace=False)
        for name, e in (("ppi", ppi_mean(human[pick], judge[pick], judge)), ("human", classical_mean(human[pick]))):
            covered[name].append(e.low <= human.mean() <= e.high)
    assert np.mean(covered["ppi"]) >= 0.93 and np.mean(covered["human"]) >= 0.93, covered


def test_a_scale_given_too_narrow_is_widened_to_the_labels() -> None:
    y = np.array([0.0, 10.0, 3.0, 8.0, 6.0])
    wide = classical_mean(y, bounds=(1.0, 5.0))
    assert wide.high > 5.0
    true_scale = classical_mean(y, bounds=(0.0, 10.0))
    assert (wide.low, wide.high) == pytest.approx((true_scale.low, true_scale.high))


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
