"""The project's PPI++ (`stats.ppi.ppi_mean`) against the reference implementation, ppi-python (`ppi_py`), on the
same arrays (unweighted: every label routed with the same probability, where the two methods coincide).

- Point estimates at a fixed judge weight: equal to rounding (1e-12). Both are mean(lam f over all items) +
  mean(y - lam f over the labels); the project passes its judge scores of every item, labels included, as ppi_py's
  "unlabeled" set, which is what the formula reads.
- The tuned judge weight: the project tunes it for labels drawn from the judged items (lam = Cov(f, y) / Var(f));
  ppi_py for a disjoint unlabeled set (Cov / ((1 + n / N) Var)). They agree as n / N -> 0: within 0.02 at 1%.
- Intervals: the project's adds the small-sample corrections of docs/statistics.md ("Intervals that stay
  honest with few labels": z^2 pseudo-labels at the scale's ends, HC3, a t quantile, the labeled items' covariance
  with the all-items mean). At n = 20,000 labels among N = 2,000,000 they weigh 0.02% (pseudo-labels), 0.005%
  (HC3), under 0.01% (t) and about n / N = 1% (the covariance, of the judge part only), so the standard errors
  must agree within 1% and the bounds within 3e-4 points; at 200 labels the project's interval may only be wider.
"""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.ppi import ppi_mean

ppi_py = pytest.importorskip("ppi_py")  # a dev dependency (pyproject.toml), absent from a production install

pytestmark = pytest.mark.slow  # importing ppi_py (numba, statsmodels, scikit-learn) takes seconds


def arrays(n: int, n_all: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human labels and judge scores on n uniformly chosen items of n_all, and the judge's scores on all of them."""
    rng = np.random.default_rng(seed)
    human = np.clip(np.round(rng.normal(3.4, 1.0, n_all)), 1, 5)
    judge = np.clip(human + np.round(rng.normal(0.3, 0.8, n_all)), 1, 5)
    labeled = rng.choice(n_all, n, replace=False)
    return human[labeled], judge[labeled], judge


@pytest.mark.parametrize("lam", [1.0, 0.5, 0.0])
def test_point_estimates_equal_ppi_python_at_a_fixed_judge_weight(lam: float) -> None:
    y, f, f_all = arrays(200, 20_000, seed=1)
    ours = ppi_mean(y, f, f_all, lam=lam)
    theirs = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, f_all, lam=lam))[0])
    assert ours.estimate == pytest.approx(theirs, rel=1e-12, abs=1e-12)


def test_the_tuned_estimate_matches_ppi_python_when_labels_are_few_among_many_items() -> None:
    y, f, f_all = arrays(20_000, 2_000_000, seed=2)
    ours = ppi_mean(y, f, f_all)
    theirs = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, f_all))[0])
    at_ours = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, f_all, lam=ours.lam))[0])
    assert ours.estimate == pytest.approx(at_ours, rel=1e-12)
    assert abs(ours.estimate - theirs) < 1e-3 and 0.0 < ours.lam < 1.0


@pytest.mark.parametrize("lam", [1.0, 0.5, None])
def test_intervals_match_ppi_python_where_the_small_sample_corrections_vanish(lam: float | None) -> None:
    y, f, f_all = arrays(20_000, 2_000_000, seed=3)
    ours = ppi_mean(y, f, f_all, lam=lam)
    low, high = (float(np.ravel(b)[0]) for b in ppi_py.ppi_mean_ci(y, f, f_all, alpha=0.05, lam=ours.lam))
    theirs_se = (high - low) / (2 * 1.959963984540054)
    assert ours.se == pytest.approx(theirs_se, rel=0.01)
    assert ours.low == pytest.approx(low, abs=3e-4) and ours.high == pytest.approx(high, abs=3e-4)


def test_with_few_labels_the_project_interval_is_never_the_narrower() -> None:
    y, f, f_all = arrays(200, 20_000, seed=4)
    ours = ppi_mean(y, f, f_all, lam=1.0)
    low, high = (float(np.ravel(b)[0]) for b in ppi_py.ppi_mean_ci(y, f, f_all, alpha=0.05, lam=1.0))
    assert ours.high - ours.low >= high - low
