"""The small result record every statistic returns, and the interval helpers they share."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

logger = logging.getLogger(__name__)

MIN_LABELS = 5  # default minimum of human labels under which no interval is given (Settings.min_labels)
SCALE_STEP = 1.0  # one point of the rubric's integer scale: the smallest disagreement a label can show


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its confidence interval and the number of units it rests on.

    `low`/`high` are NaN when no interval exists (too few units, undefined statistic).
    """

    estimate: float
    low: float
    high: float
    n: int

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def z_value(level: float) -> float:
    """Two-sided standard-normal quantile for a confidence `level` in (0, 1)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    return float(special.ndtri(0.5 + level / 2.0))


def normal_interval(estimate: float, se: float, n: int, level: float) -> Estimate:
    """Wald interval `estimate ± z * se`; NaN bounds when the standard error is not finite."""
    if not np.isfinite(se):
        return Estimate(float(estimate), np.nan, np.nan, n)
    half = z_value(level) * se
    return Estimate(float(estimate), float(estimate - half), float(estimate + half), n)


def t_interval(estimate: float, se: float, df: float, level: float, n: int = 0) -> Estimate:
    """Student-t interval `estimate ± t(df) * se`: the small-sample form of `normal_interval` (NaN when df < 1)."""
    if not np.isfinite(se) or df < 1:
        return Estimate(float(estimate), np.nan, np.nan, n)
    half = t_quantile(df, level) * se
    return Estimate(float(estimate), float(estimate - half), float(estimate + half), n)


def t_quantile(df: float, level: float) -> float:
    """Two-sided Student-t quantile (the normal one when `df` is infinite); NaN below one degree of freedom."""
    if not np.isfinite(df):
        return z_value(level)
    return float(special.stdtrit(df, 0.5 + level / 2.0)) if df >= 1 else float("nan")


def too_few_labels(n: int, need: int) -> str:
    """What an estimate reads instead of an interval below the minimum number of labels."""
    return f"too few labels (n={n}, need {need})"


def interval_reason(n: int, need: int) -> str:
    """ "" when `n` labels are enough for an interval, else the `too_few_labels` sentence."""
    return "" if n >= need else too_few_labels(n, need)


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
