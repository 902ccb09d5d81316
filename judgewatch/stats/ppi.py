"""Prediction-powered inference (PPI, Angelopoulos et al., Science 2023; power tuning from PPI++, arXiv 2311.01453)
for a mean: many judge scores plus few human labels, one valid interval. Two estimators, one per population:

`ppi_mean` (golden items, release quality): the judge scored all N items, and a subset S of n of them was routed
to humans, item i with a stored inclusion probability pi_i (uniform 10% routing, or targeted picks with their own):

    theta = lam * mean_{all N}(f) + sum_S w_i (y_i - lam * f_i) / sum_S w_i,      w_i = 1 / pi_i

f = judge score, y = human label. The second term is the Hajek (ratio-form Horvitz-Thompson) estimate of the
judge's error, so items routed with a higher probability do not pull the estimate towards themselves; with
equal pi_i it is exactly the PPI++ point estimate. Variance: theta is, to first order, the mean over the N items
of u_i = lam * f_i + R + L_i w_i (r_i - R), with L_i = 1 if labeled, r_i = y_i - lam * f_i and R the rectifier;
under independent (Poisson) routing Var(theta) ~ Var(u) / N. lam minimises Var(u), estimated on S with weights w
and clipped to [0, 1] (0: the human-only estimate, 1: plain PPI). Degrees of freedom: n - 1.

`survey_ppi_mean` (production traffic, two-phase sampling): an interaction is *sampled* with probability pi_i (its
stratum's rate, stored on the pick) and judged; a judged interaction is *routed* to people with probability rho_i
(stored on the review item), both independent hash-based draws. The estimand is the mean human score over every
interaction the strata could pick, so each judged item stands for 1 / pi_i interactions and each labeled one for
1 / (pi_i rho_i):

    theta = lam * F + R,   F = sum_S m f / pi / sum_S m / pi,   R = sum_L m (y - lam f) / (pi rho) / sum_L m / (pi rho)

F is the Hajek mean of the judge scores, R the Hajek estimate of the judge's error with the combined probability,
m an optional weight moving the estimand to a stated reference mix (post-stratification). Variance
(linearization, Poisson design): with u_i = m_i lam (f_i - F) on S and v_i = m_i (r_i - R) on L,
    N^2 Var ~ sum_S u^2 (1 - pi) / pi^2 + sum_L v^2 / (pi rho)^2 + 2 sum_L u v (1 - pi) / (pi^2 rho)
The label phase carries no finite-population factor (labels are noisy measurements). lam minimises it (closed
form, clipped to [0, 1]; plain PPI below MIN_LABELS_TO_TUNE labels). Degrees of freedom: the labels' Kish
effective number - 1.

Both intervals are the bounded-score Student-t one of docs/statistics.md (pseudo-labels at the scale's ends, HC3
residuals, cut to the scale); below `min_labels` labels there is none (NaN bounds)."""

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
    two_sided_p,
    z_value,
)

MIN_LABELS_TO_TUNE = 30  # survey_ppi_mean: fewer labels, the judge weight is not tuned on them (lam = 1, plain PPI)


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


@dataclass(frozen=True, slots=True)
class SurveyEstimate:
    """A population mean from a weighted sample: `n_sampled` judge scores, `n_labeled` of them with a label.
    `population` is the number of interactions the sample stands for (sum of 1/pi); `effective_n` how many labels the
    human-only estimate would need for the same standard error."""

    estimate: float
    low: float
    high: float
    se: float
    n_sampled: int
    n_labeled: int
    effective_n: float
    lam: float
    population: float


@dataclass(frozen=True, slots=True)
class Difference:
    """`a - b` of two independent estimates, with its interval and two-sided p-value (H0: no difference). The p-value
    uses the same t distribution as the interval (normal when no degrees of freedom are given)."""

    estimate: float
    low: float
    high: float
    se: float
    p_value: float


def _probabilities(values: ArrayLike, name: str, size: int) -> NDArray[np.float64]:
    arr = as_float_array(values, name)
    if arr.size != size:
        raise ValueError(f"{name} has {arr.size} entries for {size} items")
    if arr.size and (not np.all(np.isfinite(arr)) or np.any((arr <= 0) | (arr > 1))):
        raise ValueError(f"{name}: probabilities must lie in (0, 1]")
    return arr


def _nan(n_sampled: int, n_labeled: int, population: float, lam: float = np.nan) -> SurveyEstimate:
    return SurveyEstimate(np.nan, np.nan, np.nan, np.nan, n_sampled, n_labeled, 0.0, lam, population)


def survey_ppi_mean(
    judge: ArrayLike,
    sample_prob: ArrayLike,
    human: ArrayLike,
    route_prob: ArrayLike,
    *,
    weight: ArrayLike | None = None,
    lam: float | None = None,
    level: float = 0.95,
    min_labels: int = 2,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> SurveyEstimate:
    """PPI++ mean over the population the sample was drawn from (see the module docstring). All arrays are aligned over
    the n sampled, judged items: `judge` their scores, `sample_prob` their sampling inclusion probabilities, `human` the
    label (NaN when not labeled), `route_prob` the routing probability (read only where labeled). `weight`: extra weight
    per item (reference-mix reweighting). `min_labels`: fewer labels (with a non-zero weight) give NaN bounds; `bounds`:
    the range a label can take (the rubric's scale), widened to every observed label."""
    f = as_float_array(judge, "judge")
    n = f.size
    if n and not np.all(np.isfinite(f)):
        raise ValueError("judge holds NaN/inf: only scored verdicts enter an estimate")
    pi = _probabilities(sample_prob, "sample_prob", n)
    y = as_float_array(human, "human")
    if y.size != n:
        raise ValueError(f"human has {y.size} entries for {n} items")
    m = np.ones(n) if weight is None else as_float_array(weight, "weight")
    if m.size != n or (n and (not np.all(np.isfinite(m)) or np.any(m < 0))):
        raise ValueError("weight must be one finite, non-negative value per item")
    z_value(level)
    lab = np.isfinite(y)
    n_lab = int(lab.sum())
    ds = m / pi
    population = float((1.0 / pi).sum())
    if n == 0 or ds.sum() <= 0:
        return _nan(n, n_lab, population)
    rho = _probabilities(np.asarray(route_prob, dtype=np.float64)[lab], "route_prob", n_lab)
    f_mean = float(ds @ f / ds.sum())
    a = m * (f - f_mean)  # judge deviations, every sampled item
    if n_lab == 0:
        return _nan(n, 0, population, lam if lam is not None else np.nan)
    pl, fl, yl, ml, al = pi[lab], f[lab], y[lab], m[lab], a[lab]
    dl = ml / (pl * rho)
    if dl.sum() <= 0:
        return _nan(n, n_lab, population)
    c = 1.0 / (pl * rho) ** 2  # label phase, per unit of squared deviation
    k = (1.0 - pl) / (pl * pl * rho)  # covariance of the two phases
    big_a = float(((1.0 - pi) / pi**2) @ (a * a))
    if lam is None and int((ml > 0).sum()) < MIN_LABELS_TO_TUNE:
        lam = 1.0  # tuning on a handful of labels overfits them and understates the variance: plain PPI
    if lam is None:
        f_lab = float(dl @ fl / dl.sum())
        a_l = ml * (fl - f_lab)
        b = ml * (yl - float(dl @ yl / dl.sum()))
        denom = big_a + float(c @ (a_l * a_l)) - 2.0 * float(k @ (al * a_l))
        numer = float(c @ (a_l * b)) - float(k @ (al * b))
        lam = float(np.clip(numer / denom, 0.0, 1.0)) if denom > 0 and np.isfinite(denom) else 0.0
    resid = yl - lam * fl
    rect = float(dl @ resid / dl.sum())
    scale = score_bounds(bounds, yl)
    estimate = on_scale(lam * f_mean + rect, scale)
    used = int((ml > 0).sum())  # labels in the estimate (a zero reference-mix weight leaves one out)
    if used < max(min_labels, 2):
        return SurveyEstimate(estimate, np.nan, np.nan, np.nan, n, n_lab, np.nan, lam, population)
    # the label phase with the pseudo-labels at the scale's ends (HC3-scaled residuals: the jackknife's
    # small-sample correction of a ratio estimator, whose plain linearization understates the variance)
    labels = bounded_label_phase(dl, resid, lam * f_mean, scale, level)
    # the judge phase is a mean over the sample (sum ds), the label phase a Hajek mean over the labels
    big_s, big_l = float(ds.sum()), labels.total
    cross = float(((1.0 - pl) / pl * al) @ labels.deviations)  # the two phases' covariance
    total = lam * lam * big_a / big_s**2 + labels.variance / big_l**2 + 2.0 * lam * cross / (big_s * big_l)
    se = float(np.sqrt(max(total, 0.0)))
    effective_n = effective_labels(dl, yl, se, scale, level)
    kish = float(dl.sum() ** 2 / (dl @ dl))  # the labels' effective number under their unequal weights
    ci = bounded_t_interval(lam * f_mean + labels.rectifier, se, kish - 1, level, n_lab, scale)
    return SurveyEstimate(estimate, ci.low, ci.high, se, n, n_lab, effective_n, lam, population)


def difference(
    a_est: float, a_se: float, b_est: float, b_se: float, *, level: float = 0.95, df: float | None = None
) -> Difference:
    """Difference of two estimates from independent samples: standard errors add in quadrature. `df`: degrees of freedom
    of the t interval (pass the smaller side's labels - 1); None: normal."""
    se = float(np.hypot(a_se, b_se))
    est = float(a_est - b_est)
    ci = t_interval(est, se, np.inf if df is None else df, level)
    return Difference(est, ci.low, ci.high, se, two_sided_p(est, se, df))
