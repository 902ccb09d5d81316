"""Prediction-powered inference for a mean: many judge scores plus few human labels, one valid interval.

Estimator (PPI, Angelopoulos et al., Science 2023; power tuning from PPI++, arXiv 2311.01453), written for
judgewatch's sampling: the judge scored all N items, and a subset S of n of them was routed to humans, item i
with a stored inclusion probability pi_i (uniform 10% routing, or targeted picks with their own pi_i):

    theta = lam * mean_{all N}(f) + sum_S w_i (y_i - lam * f_i) / sum_S w_i,      w_i = 1 / pi_i

f = judge score, y = human label. The second term is the Hajek (ratio-form Horvitz-Thompson) estimate of the
judge's error, so items routed with a higher probability do not pull the estimate towards themselves; with
equal pi_i it is exactly the PPI++ point estimate. The estimand is the mean human score of the N items' population.

Variance: theta is, to first order, the mean over the N items of u_i = lam * f_i + R + L_i w_i (r_i - R), with
L_i = 1 if labeled, r_i = y_i - lam * f_i and R the rectifier; under independent (Poisson) routing
Var(theta) ~ Var(u) / N. lam minimises Var(u), estimated on S with weights w and clipped to [0, 1] (0: the
human-only estimate, 1: plain PPI). The interval is the bounded-score Student-t one of docs/statistics.md
(pseudo-labels at the scale's ends, HC3 residuals, n - 1 degrees of freedom, cut to the scale); below
`min_labels` labels there is none (NaN bounds)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgewatch.stats.estimate import (
    SCALE_BOUNDS,
    Estimate,
    as_float_array,
    bounded_label_phase,
    bounded_t_interval,
    effective_labels,
    on_scale,
    score_bounds,
    t_interval,
    z_value,
)


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered mean: `n` human labels, `n_all` judge scores. `effective_n` is how many human labels the
    human-only estimate would need for the same standard error; `lam` is the weight given to the judge (0 = ignored, 1 =
    plain PPI)."""

    estimate: float
    low: float
    high: float
    n: int
    n_all: int
    effective_n: float
    lam: float
    se: float


def _finite(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = as_float_array(values, name)
    # a non-finite sum is the cheap sign of a NaN/inf; only then pay for the element-wise check
    if not np.isfinite(arr.sum()) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN/inf: decide how unscored items enter before estimating")
    return arr


def _dot(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Inner product without BLAS: a threaded BLAS dot stalls on a busy machine and buys nothing here."""
    return float(np.einsum("i,i->", a, b))


def _weights(inclusion_prob: ArrayLike | None, n: int, total: float) -> NDArray[np.float64]:
    """Inverse-probability weights of the labeled items, rescaled to sum to `total`."""
    if inclusion_prob is None:
        return np.full(n, total / n)
    pi = _finite(inclusion_prob, "inclusion_prob")
    if pi.size != n:
        raise ValueError(f"inclusion_prob has {pi.size} entries for {n} labeled items")
    if np.any((pi <= 0) | (pi > 1)):
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    w = 1.0 / pi
    return w * (total / w.sum())


def _tuned_lambda(y: NDArray[np.float64], f: NDArray[np.float64], w: NDArray[np.float64]) -> float:
    """Variance-minimising judge weight, clipped to [0, 1]; 0 when the judge carries no usable signal."""
    fc = f - np.average(f, weights=w)
    yc = y - np.average(y, weights=w)
    k = w * (w - 1.0)
    denom = _dot(k, fc * fc)
    if denom <= 0 or not np.isfinite(denom):
        return 0.0
    return float(np.clip(_dot(k, fc * yc) / denom, 0.0, 1.0))


def ppi_mean(
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_all: ArrayLike,
    *,
    inclusion_prob: ArrayLike | None = None,
    lam: float | None = None,
    level: float = 0.95,
    min_labels: int = 2,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> PPIEstimate:
    """PPI++ estimate and small-sample interval for the mean human score (see the module docstring). y, yhat: human
    labels and judge scores on the n labeled items (same order); yhat_all: judge scores on all N items, the labeled
    ones included. inclusion_prob: each labeled item's routing probability (None = uniform). lam: fixed judge weight,
    or None to tune it. min_labels: fewer labels give NaN bounds (never below 2). bounds: the range a label can take
    (the rubric's scale; for per-item differences of two tiers, (low - high, high - low)), widened to every observed
    score."""
    hum, fl, fa = _finite(y, "y"), _finite(yhat, "yhat"), _finite(yhat_all, "yhat_all")
    n, n_all = hum.size, fa.size
    if fl.size != n:
        raise ValueError(f"y and yhat differ in length: {n} vs {fl.size}")
    if n > n_all:
        raise ValueError(f"yhat_all ({n_all}) must include the {n} labeled items")
    z_value(level)
    if n == 0:
        return PPIEstimate(np.nan, np.nan, np.nan, 0, n_all, 0.0, np.nan, np.nan)
    w = _weights(inclusion_prob, n, float(n_all))
    lam_ = _tuned_lambda(hum, fl, w) if lam is None else float(lam)

    resid = hum - lam_ * fl
    rectifier = _dot(w, resid) / float(w.sum())
    f_sum = float(fa.sum())
    f_mean = f_sum / n_all
    scale = score_bounds(bounds, hum)
    estimate = on_scale(lam_ * f_mean + rectifier, scale)
    if n < max(min_labels, 2):
        return PPIEstimate(estimate, np.nan, np.nan, n, n_all, np.nan, lam_, np.nan)

    # u_i - theta = lam (f_i - mean f) + L_i w_i d_i; the labels' part with the pseudo-labels at the bounds
    labels = bounded_label_phase(w, resid, lam_ * f_mean, scale, level)
    # sum of squares about the mean without an N-sized temporary (scores are small numbers: no cancellation)
    spread = lam_ * lam_ * max(_dot(fa, fa) - f_sum * f_mean, 0.0) / (n_all * n_all)
    cross = 2.0 * lam_ * _dot(fl - f_mean, labels.deviations) / (n_all * labels.total)
    se = float(np.sqrt(max(spread + cross + labels.variance / labels.total**2, 0.0)))
    effective_n = effective_labels(w, hum, se, scale, level)
    ci = bounded_t_interval(lam_ * f_mean + labels.rectifier, se, n - 1, level, n, scale)
    return PPIEstimate(estimate, ci.low, ci.high, n, n_all, effective_n, lam_, se)


def classical_mean(
    y: ArrayLike,
    *,
    inclusion_prob: ArrayLike | None = None,
    level: float = 0.95,
    min_labels: int = 2,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> PPIEstimate:
    """Human-only interval (what PPI is compared against): the weighted mean of the labels alone, by the same
    bounded-score interval as `ppi_mean`."""
    hum = _finite(y, "y")
    zeros = np.zeros_like(hum)
    return ppi_mean(
        hum, zeros, zeros, inclusion_prob=inclusion_prob, lam=0.0, level=level, min_labels=min_labels, bounds=bounds
    )


def ppi_diff_unpaired(a: PPIEstimate, b: PPIEstimate, *, level: float = 0.95) -> Estimate:
    """Difference a - b of two tiers' means estimated on independent items; standard errors add in quadrature. Degrees
    of freedom: the smaller side's labels - 1 (conservative against Welch-Satterthwaite). When the same items were
    answered by both tiers, `ppi_mean` of the per-item differences (labels, labeled judge scores, all judge scores) is
    the paired estimate, and a far narrower one when items drive the scores."""
    se = float(np.hypot(a.se, b.se))
    return t_interval(a.estimate - b.estimate, se, min(a.n, b.n) - 1, level, a.n + b.n)
