"""The small result record every statistic returns, and the interval helpers they share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

MIN_LABELS = 5  # default minimum of human labels under which no interval is given (Settings.min_labels)
SCALE_STEP = 1.0  # one point of the rubric's integer scale: the smallest disagreement a label can show
SCALE_BOUNDS = (1.0, 5.0)  # the default rubric scale (contract.rubric.Scale): a score's range when none is given


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its confidence interval and the number of units it rests on. `low`/`high` are NaN when no
    interval exists (too few units, undefined statistic)."""

    estimate: float
    low: float
    high: float
    n: int


def z_value(level: float) -> float:
    """Two-sided standard-normal quantile for a confidence `level` in (0, 1)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    return float(special.ndtri(0.5 + level / 2.0))


def t_interval(estimate: float, se: float, df: float, level: float, n: int = 0) -> Estimate:
    """Student-t interval `estimate ± t(df) * se` (the normal, Wald one when `df` is infinite; NaN when df < 1)."""
    if not np.isfinite(se) or df < 1:
        return Estimate(float(estimate), np.nan, np.nan, n)
    half = t_quantile(df, level) * se
    return Estimate(float(estimate), float(estimate - half), float(estimate + half), n)


def t_quantile(df: float, level: float) -> float:
    """Two-sided Student-t quantile (the normal one when `df` is infinite); NaN below one degree of freedom."""
    if not np.isfinite(df):
        return z_value(level)
    return float(special.stdtrit(df, 0.5 + level / 2.0)) if df >= 1 else float("nan")


def interval_reason(n: int, need: int) -> str:
    """ "" when `n` labels are enough for an interval, else what the estimate reads in its place."""
    return "" if n >= need else f"too few labels (n={n}, need {need})"


def percentile_bounds(replicates: NDArray[np.float64], level: float) -> tuple[float, float]:
    """Percentile-bootstrap bounds, ignoring replicates where the statistic was undefined (NaN)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return np.nan, np.nan
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def wilson_bounds(successes: ArrayLike, n: ArrayLike, level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval for proportions `successes / n` (vectorized; NaN where n == 0)."""
    k = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    z = z_value(level)
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / m
        denom = 1.0 + z2 / m
        center = (p + z2 / (2.0 * m)) / denom
        half = z * np.sqrt(p * (1.0 - p) / m + z2 / (4.0 * m * m)) / denom
    return np.clip(center - half, 0.0, 1.0), np.clip(center + half, 0.0, 1.0)


def t_bounds(
    mean: ArrayLike, sd: ArrayLike, n: ArrayLike, level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Student-t interval `mean ± t(n-1) * sd / sqrt(n)` (vectorized; NaN where n < 2)."""
    mu = np.asarray(mean, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(m >= 2, m - 1.0, np.nan)
        half = special.stdtrit(df, 0.5 + level / 2.0) * np.asarray(sd, dtype=np.float64) / np.sqrt(m)
    return mu - half, mu + half


def score_bounds(bounds: tuple[float, float], *observed: NDArray[np.float64]) -> tuple[float, float]:
    """The range a score can take: `bounds` (the rubric's scale), widened to every observed value, so a scale
    given too narrow never makes the bounded interval invalid on data beyond it."""
    low, high = float(bounds[0]), float(bounds[1])
    for arr in observed:
        if arr.size:
            low, high = min(low, float(arr.min())), max(high, float(arr.max()))
    if not high > low:
        raise ValueError(f"score bounds must be ordered, got {bounds}")
    return low, high


def on_scale(estimate: float, scale: tuple[float, float]) -> float:
    """`estimate` brought onto `scale`: the mean of scores on a scale lies on it, and a PPI estimate can
    overshoot it when the judge's error on the labels is large (projecting onto the possible values never moves
    an estimate further from the truth)."""
    return min(max(estimate, scale[0]), scale[1])


def difference_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """The range of a per-item difference of two scores on the scale `bounds`."""
    width = float(bounds[1]) - float(bounds[0])
    return -width, width


@dataclass(frozen=True, slots=True)
class LabelPhase:
    """The labeled part of a (prediction-powered) mean, with `pseudo_labels` added at the scale's two ends. `rectifier`:
    the weighted mean residual with the pseudo-labels in; `deviations`: each real label's weight x HC3-scaled deviation
    from it; `variance`: the sum of squared weighted deviations, pseudo-labels included; `total`: the labels' weight
    total, pseudo-labels included (the label phase's denominator)."""

    rectifier: float
    deviations: NDArray[np.float64]
    variance: float
    total: float


def bounded_label_phase(
    weights: NDArray[np.float64], resid: NDArray[np.float64], anchor: float, bounds: tuple[float, float], level: float
) -> LabelPhase:
    """The label phase of a mean of bounded scores with Agresti-Coull pseudo-labels at the bounds (docs/statistics.md,
    "Intervals that stay honest with few labels"). resid: label - lam * judge score; anchor: lam * the judge's mean,
    the judge part of a pseudo-label's residual (so pseudo-labels carry no judge signal)."""
    kappa = z_value(level) ** 2  # pseudo-labels, half at each end of the scale
    used = int(np.count_nonzero(weights > 0))
    each = float(weights.sum()) / max(used, 1)  # a pseudo-label weighs as an average label
    pseudo = np.array([bounds[0] - anchor, bounds[1] - anchor])
    total = float(weights.sum()) + kappa * each
    rectifier = (float(weights @ resid) + 0.5 * kappa * each * float(pseudo.sum())) / total
    lever = 1.0 / np.maximum(1.0 - weights / total, 1e-9)  # HC3: each label's residual over 1 - its weight share
    dev = weights * (resid - rectifier) * lever
    spread = float(dev @ dev) + 0.5 * kappa * each * each * float(((pseudo - rectifier) ** 2).sum())
    return LabelPhase(rectifier, dev, spread, total)


def effective_labels(
    weights: NDArray[np.float64], labels: NDArray[np.float64], se: float, scale: tuple[float, float], level: float
) -> float:
    """How many labels the labels-only estimate would need for standard error `se`: n x (se labels-only / se)^2,
    the labels-only estimate taken with the same weights and pseudo-labels (inf when `se` is 0)."""
    alone = bounded_label_phase(weights, labels, 0.0, scale, level)
    return float(labels.size * (np.sqrt(alone.variance) / alone.total / se) ** 2) if se > 0 else float("inf")


def bounded_t_interval(
    centre: float, se: float, df: float, level: float, n: int, bounds: tuple[float, float]
) -> Estimate:
    """`t_interval` around `centre`, cut to the scale's `bounds` (the mean of bounded scores lies within them). A centre
    beyond the scale (a PPI estimate can overshoot it when the judge's error on the labels is large) is first brought to
    the scale's edge, so the interval is never empty nor a point."""
    ci = t_interval(min(max(centre, bounds[0]), bounds[1]), se, df, level, n)
    return Estimate(float(centre), max(ci.low, bounds[0]), min(ci.high, bounds[1]), n)


def as_float_array(values: ArrayLike, name: str) -> NDArray[np.float64]:
    """1-D float array (None becomes NaN), with a readable error for other shapes."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def paired_arrays(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str] = ("a", "b")
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Align two equal-length score arrays, drop pairs where either is NaN; return them and the drop count."""
    x, y = as_float_array(a, names[0]), as_float_array(b, names[1])
    if x.shape != y.shape:
        raise ValueError(f"{names[0]} and {names[1]} differ in length: {x.size} vs {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep], int(x.size - keep.sum())


def two_sided_p(estimate: float, se: float, df: float | None = None) -> float:
    """Two-sided p-value of H0 "the true value is 0": normal, or Student-t with `df` degrees of freedom."""
    if not (np.isfinite(estimate) and np.isfinite(se)) or se < 0:
        return float("nan")
    if se == 0:
        return 1.0 if estimate == 0 else 0.0
    if df is None or not np.isfinite(df):
        return float(2.0 * special.ndtr(-abs(estimate) / se))
    return float(2.0 * special.stdtr(df, -abs(estimate) / se)) if df >= 1 else float("nan")
