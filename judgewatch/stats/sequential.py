"""Asymptotic confidence sequences (Waudby-Smith et al. 2024) for numbers a service looks at every period: they hold
at every look at once (docs/statistics.md, "Numbers checked every period", gives the boundary). The sum's variance v
is t sigma^2 for t observations (`shift_p_values`) or the sum of per-period squared standard errors (`batch_cs`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from judgewatch.stats.estimate import as_float_array

T_STAR = 250.0  # labels at which a drift stretch's CS is tightest (tuning only: never the guarantee)


def rho2(v_star: float, alpha: float) -> float:
    """rho^2 for a CS tightest when the sum's variance reaches `v_star` (the choice WS et al. 2024 give)."""
    log_term = -2.0 * np.log(alpha)
    return float((log_term + np.log(log_term + 1.0)) / v_star)


def boundary(v: ArrayLike, alpha: ArrayLike, rho_sq: float, *, one_sided: bool = False) -> NDArray[np.float64]:
    """The normal-mixture bound on a centred sum with variance `v` (docs/statistics.md); vectorized."""
    scaled = np.asarray(v, dtype=np.float64) * rho_sq + 1.0
    a = np.asarray(alpha, dtype=np.float64)
    log = np.log1p(np.sqrt(scaled) / (2.0 * a)) if one_sided else np.log(np.sqrt(scaled) / a)
    return np.sqrt(2.0 * scaled / rho_sq * log)


@dataclass(frozen=True, slots=True)
class ConfidenceSequence:
    """A confidence sequence read at each look: the running mean and its anytime-valid bounds."""

    mean: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]


def batch_cs(estimates: ArrayLike, ses: ArrayLike, *, alpha: float = 0.05) -> ConfidenceSequence:
    """Two-sided CS for the running mean of per-period estimates with their standard errors (the martingale form).
    Covers, at every period t together, the average of the first t periods' own means; tightest after 30 periods like
    the first (rho is fixed by the first period alone)."""
    x, se = as_float_array(estimates, "estimates"), as_float_array(ses, "ses")
    if x.size != se.size or x.size == 0 or not (np.all(np.isfinite(x)) and np.all(se > 0)):
        raise ValueError("batch_cs needs one finite estimate and one positive standard error per period")
    t = np.arange(1, x.size + 1)
    mean = np.cumsum(x) / t
    half = boundary(np.cumsum(se**2), alpha, rho2(30.0 * se[0] ** 2, alpha)) / t
    return ConfidenceSequence(mean, mean - half, mean + half)


def _sd(
    total: NDArray[np.float64], squares: NDArray[np.float64], n: NDArray[np.float64], bounds: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and standard deviation of n values from their sum and sum of squares, the spread counted as though
    one more value had been seen, half at each end of `bounds`: values that all agree never give zero width."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / n
        spread = np.maximum(squares - total * mean, 0.0) + 0.5 * ((bounds[0] - mean) ** 2 + (bounds[1] - mean) ** 2)
        return mean, np.sqrt(spread / (n + 1.0))


@dataclass(frozen=True, slots=True)
class Stretches:
    """The stretches a drift monitor compares: stretch k runs from `start[k]` to the look, its reference is the
    values in [`ref_start[k]`, `start[k]`), and it spends `weight[k]` of alpha (the weights sum to at most 1)."""

    start: NDArray[np.int64]
    ref_start: NDArray[np.int64]
    weight: NDArray[np.float64]


def window_stretches(window: ArrayLike, reference_windows: int) -> Stretches:
    """One stretch per window k >= 1 that holds values (`window`: each value's window number from the series'
    first window, ascending), referenced to the `reference_windows` windows before it, spending 1 / (k (k + 1))."""
    w = np.asarray(window, dtype=np.int64)
    if w.size and np.any(np.diff(w) < 0):
        raise ValueError("values must be in time order (window numbers ascending)")
    ks = np.unique(w[w >= 1])
    start = np.searchsorted(w, ks, side="left")
    ref_start = np.searchsorted(w, ks - reference_windows, side="left")
    return Stretches(start, ref_start, 1.0 / (ks * (ks + 1.0)))


def shift_p_values(
    values: ArrayLike,
    stretches: Stretches,
    looks: ArrayLike,
    *,
    bounds: tuple[float, float],
    one_sided: bool = False,
    min_reference: int = 20,
    min_current: int = 10,
    t_star: float = T_STAR,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Anytime-valid p-value, at each look (the number of values seen), that some stretch's mean moved from its
    reference's (one-sided: fell below it), and which stretch gives it (-1: none testable); the method is
    docs/statistics.md's "The drift check". `t_star`: the stretch length (values) where its CS is tightest."""
    x = as_float_array(values, "values")
    n_look = np.asarray(looks, dtype=np.int64)[:, None]
    s, r = stretches.start[None, :], stretches.ref_start[None, :]
    total, squares = np.concatenate([[0.0], np.cumsum(x)]), np.concatenate([[0.0], np.cumsum(x * x)])
    n_ref = (s - r).astype(np.float64)
    n_cur = np.maximum(n_look - s, 0).astype(np.float64)
    ref_mean, ref_sd = _sd(total[s] - total[r], squares[s] - squares[r], n_ref, bounds)
    end = np.minimum(n_look, x.size)
    cur_mean, cur_sd = _sd(total[end] - total[s], squares[end] - squares[s], n_cur, bounds)
    gap = ref_mean - cur_mean if one_sided else np.abs(ref_mean - cur_mean)
    testable = (n_ref >= min_reference) & (n_cur >= min_current) & (gap > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref_se, rho_sq = ref_sd / np.sqrt(n_ref), rho2(t_star, 0.05)

        def alarms(b: NDArray[np.float64]) -> NDArray[np.bool_]:
            z = special.ndtri(1.0 - (b / 2 if one_sided else b / 4))
            reach = z * ref_se + cur_sd * boundary(n_cur, b / 2, rho_sq, one_sided=one_sided) / n_cur
            return reach < gap

        lo, hi = np.full(gap.shape, -40.0), np.zeros(gap.shape)  # log10 of b: bisect where the alarm starts
        for _ in range(40):
            mid = (lo + hi) / 2
            fire = alarms(10.0**mid)
            hi, lo = np.where(fire, mid, hi), np.where(fire, lo, mid)
    p_k = np.where(testable & alarms(np.ones(gap.shape)), 10.0**hi, 1.0)
    spent = np.minimum(p_k / stretches.weight[None, :], 1.0)
    if spent.shape[1] == 0:
        return np.ones(n_look.shape[0]), np.full(n_look.shape[0], -1)
    best = np.argmin(spent, axis=1)
    p = spent[np.arange(spent.shape[0]), best]
    return p, np.where(p < 1.0, best, -1)
