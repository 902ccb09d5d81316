"""Unpaired comparison for the release gate: two tiers' mean scores on different items, with a Welch interval
(docs/release_gate.md). Items both answered enter both means; their positive correlation only widens the interval
(conservative)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judgewatch.stats.estimate import as_float_array, z_value
from judgewatch.stats.ppi import difference

MIN_SHARED = 0.5  # pair two tiers when the items both answered are at least this share of the larger tier's items


def shares_items(common: int, n_a: int, n_b: int, share: float = MIN_SHARED) -> bool:
    """Whether two tiers that answered `n_a` and `n_b` items, `common` of them both, are compared paired."""
    return common > 0 and common >= share * max(n_a, n_b)


@dataclass(frozen=True, slots=True)
class UnpairedDiff:
    """Mean of candidate minus mean of baseline, each over its own scored items. `n_dropped`: unscored values (NaN) left
    out on either side; `method`: "welch" (Welch t interval), "constant" (every score on both sides equal within each
    side: a zero-width interval, as a paired "constant"), "none" (fewer than two scores on a side: no interval). `n` is
    the smaller side, the count an interval rests on."""

    estimate: float
    low: float
    high: float
    n_candidate: int
    n_baseline: int
    n_dropped: int
    method: str
    df: float

    @property
    def n(self) -> int:
        return min(self.n_candidate, self.n_baseline)


def welch_mean_diff(candidate: ArrayLike, baseline: ArrayLike, *, level: float = 0.95) -> UnpairedDiff:
    """mean(candidate) - mean(baseline) from independent samples (NaN = unscored, left out and counted)."""
    z_value(level)
    x, y = as_float_array(candidate, "candidate"), as_float_array(baseline, "baseline")
    dropped = int(np.isnan(x).sum() + np.isnan(y).sum())
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    nx, ny = x.size, y.size
    if nx == 0 or ny == 0:
        return UnpairedDiff(np.nan, np.nan, np.nan, nx, ny, dropped, "none", np.nan)
    mean = float(x.mean() - y.mean())
    if min(nx, ny) < 2:
        return UnpairedDiff(mean, -np.inf, np.inf, nx, ny, dropped, "none", np.nan)
    va, vb = float(x.var(ddof=1)) / nx, float(y.var(ddof=1)) / ny
    if va + vb == 0:
        return UnpairedDiff(mean, mean, mean, nx, ny, dropped, "constant", np.inf)
    df = (va + vb) ** 2 / (va**2 / (nx - 1) + vb**2 / (ny - 1))  # Welch-Satterthwaite
    d = difference(float(x.mean()), np.sqrt(va), float(y.mean()), np.sqrt(vb), level=level, df=df)
    return UnpairedDiff(d.estimate, d.low, d.high, nx, ny, dropped, "welch", float(df))
