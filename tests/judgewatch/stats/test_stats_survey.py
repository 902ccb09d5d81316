"""PPI under two-phase sampling: sampling x routing weights, the interval, lam and the p-values."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats import difference, ppi_mean, survey_ppi_mean, two_sided_p


def _strata(rng: np.random.Generator, n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stratum A all 5s sampled at 5%, stratum B all 1s sampled at 50%: scores, pi, and the true mean."""
    f = np.concatenate([np.full(n_a, 5.0), np.full(n_b, 1.0)])
    pi = np.concatenate([np.full(n_a, 0.05), np.full(n_b, 0.5)])
    return f, pi, rng.random(f.size)


def test_sampling_weights_recover_the_population_mean_that_the_plain_sample_mean_misses() -> None:
    # 1000 interactions per stratum: 50 sampled from A (rate 0.05), 500 from B (rate 0.5); true mean 3.0
    f, pi, _ = _strata(np.random.default_rng(0), 50, 500)
    y = np.where(np.arange(f.size) % 5 == 0, f, np.nan)  # a perfect judge, every fifth item labeled
    rho = np.full(f.size, 0.2)
    est = survey_ppi_mean(f, pi, y, rho)
    assert est.estimate == pytest.approx(3.0)
    assert float(f.mean()) == pytest.approx(750 / 550)  # what ignoring the sampling probability gives
    assert est.population == pytest.approx(2000.0)
    assert (est.n_sampled, est.n_labeled) == (550, 110)


def test_routing_weights_undo_targeted_routing_of_the_judges_errors() -> None:
    # The judge overrates by 1 on half the items; those are routed 9 times more often than the rest.
    rng = np.random.default_rng(1)
    n = 20_000
    y_true = rng.integers(1, 6, n).astype(float)
    over = rng.random(n) < 0.5
    f = y_true + over
    rho = np.where(over, 0.9, 0.1)
    routed = rng.random(n) < rho
    y = np.where(routed, y_true, np.nan)
    est = survey_ppi_mean(f, np.ones(n), y, rho)
    assert est.low <= y_true.mean() <= est.high
    unweighted = survey_ppi_mean(f, np.ones(n), y, np.where(routed, 1.0, np.nan))
    assert not unweighted.low <= y_true.mean() <= unweighted.high  # dropping the routing weights misleads


def test_with_everything_sampled_and_uniform_routing_it_is_the_ppi_estimate_of_a_finite_population() -> None:
    rng = np.random.default_rng(2)
    f = rng.integers(1, 6, 400).astype(float)
    y_all = np.clip(f - 1 + rng.integers(0, 2, 400), 1, 5)
    lab = np.arange(400) < 80
    y = np.where(lab, y_all, np.nan)
    ours = survey_ppi_mean(f, np.ones(400), y, np.full(400, 0.2), lam=1.0)
    theirs = ppi_mean(y_all[lab], f[lab], f, lam=1.0)
    assert ours.estimate == pytest.approx(theirs.estimate)
    # every interaction was judged: the judge's mean has no sampling error here (stats.ppi assumes a
    # superpopulation), so only the labels' part of the variance is left
    assert ours.se < theirs.se
    human, human_ppi = (
        survey_ppi_mean(f, np.ones(400), y, np.full(400, 0.2), lam=0.0),
        ppi_mean(y_all[lab], f[lab], f, lam=0.0),
    )
    assert (human.estimate, human.se) == pytest.approx((human_ppi.estimate, human_ppi.se))


def test_an_informative_judge_narrows_the_interval_against_labels_alone() -> None:
    rng = np.random.default_rng(3)
    n = 5000
    y_true = rng.integers(1, 6, n).astype(float)
    f = np.clip(y_true + rng.normal(0.5, 0.4, n), 1, 5)
    routed = rng.random(n) < 0.1
    y = np.where(routed, y_true, np.nan)
    rho = np.full(n, 0.1)
    pi = np.full(n, 0.3)
    est, human = survey_ppi_mean(f, pi, y, rho), survey_ppi_mean(f, pi, y, rho, lam=0.0)
    assert 0.5 < est.lam <= 1.0
    assert est.se < human.se
    assert est.effective_n > est.n_labeled
    assert human.estimate == pytest.approx(float(np.nanmean(y)))


def test_bad_probabilities_are_refused_with_the_field_named() -> None:
    with pytest.raises(ValueError, match="sample_prob"):
        survey_ppi_mean([3.0, 4.0], [0.5, 0.0], [np.nan, 4.0], [np.nan, 0.1])
    with pytest.raises(ValueError, match="route_prob"):
        survey_ppi_mean([3.0, 4.0], [0.5, 0.5], [np.nan, 4.0], [np.nan, np.nan])
    with pytest.raises(ValueError, match="judge"):
        survey_ppi_mean([3.0, np.nan], [0.5, 0.5], [np.nan, 4.0], [np.nan, 0.1])


def test_no_labels_give_no_estimate_rather_than_the_judges_mean() -> None:
    est = survey_ppi_mean([3.0, 4.0, 5.0], [0.5, 0.5, 0.5], [np.nan] * 3, [np.nan] * 3)
    assert np.isnan(est.estimate) and est.n_labeled == 0 and est.n_sampled == 3


def test_difference_carries_a_two_sided_p_value() -> None:
    d = difference(1.0, 0.3, 0.4, 0.4)
    assert d.estimate == pytest.approx(0.6)
    assert d.se == pytest.approx(0.5)
    assert d.p_value == pytest.approx(two_sided_p(0.6, 0.5))
    assert two_sided_p(1.959964, 1.0) == pytest.approx(0.05, abs=1e-5)
    assert two_sided_p(0.0, 1.0) == pytest.approx(1.0)
    assert np.isnan(two_sided_p(1.0, float("nan")))


def test_traffic_labels_that_missed_a_rare_high_score_are_covered_at_the_nominal_rate() -> None:
    # 4% of the traffic scores 5, the rest 1 (mean 1.16), and the judge gives those 5s a 2; 20 labels a draw,
    # about 44% of draws hold no 5 and their residuals are all 0. The symmetric interval with a one-point
    # variance floor covered 60% of draws (0.603); the pseudo-labels at the scale's ends reach the missed 5s.
    rng = np.random.default_rng(12)
    n = 500
    y_all = np.where(np.arange(n) < 20, 5.0, 1.0)
    f = np.where(y_all == 5, 2.0, 1.0)
    pi = np.ones(n)
    covered = []
    for _ in range(300):
        routed = np.zeros(n, dtype=bool)
        routed[rng.choice(n, 20, replace=False)] = True
        est = survey_ppi_mean(f, pi, np.where(routed, y_all, np.nan), np.full(n, 20 / n))
        assert 1.0 <= est.low <= est.high <= 5.0
        covered.append(est.low <= y_all.mean() <= est.high)
    assert np.mean(covered) >= 0.93
