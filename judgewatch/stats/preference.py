"""Pairwise preference on the same items: worse / tied / better shares (Wilson intervals), the net preference
(better - worse), and the two-sided exact sign test on the items that are not tied."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from judgewatch.stats.estimate import Estimate, t_interval, wilson_bounds


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact binomial test of better vs worse at 1/2 (ties dropped); NaN without a non-tied pair."""
    if better < 0 or worse < 0:
        raise ValueError(f"counts must be >= 0, got better={better} worse={worse}")
    if better + worse == 0:
        return math.nan
    return float(stats.binomtest(better, better + worse, 0.5, alternative="two-sided").pvalue)


@dataclass(frozen=True, slots=True)
class PreferenceShares:
    """Of `n` scored pairs: worse / tied / better shares of the candidate, net preference and sign-test p."""

    n: int
    worse: Estimate
    tied: Estimate
    better: Estimate
    net: Estimate  # better share - worse share, Wald interval of the multinomial contrast
    p_value: float  # two-sided exact sign test on the non-tied pairs; NaN when every pair is tied

    @property
    def counts(self) -> tuple[int, int, int]:
        return self.worse.n, self.tied.n, self.better.n


def _share(k: int, n: int, level: float) -> Estimate:
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, k)
    low, high = wilson_bounds(k, n, level)
    return Estimate(k / n, float(low), float(high), k)


def preference_shares(worse: int, tied: int, better: int, *, level: float = 0.95) -> PreferenceShares:
    """Shares with intervals from the three counts (see the module docstring). Each `Estimate.n` is its count."""
    if min(worse, tied, better) < 0:
        raise ValueError(f"counts must be >= 0, got worse={worse} tied={tied} better={better}")
    n = worse + tied + better
    if n == 0:
        net = Estimate(math.nan, math.nan, math.nan, 0)
    else:
        pb, pw = better / n, worse / n
        se = math.sqrt(max(pb + pw - (pb - pw) ** 2, 0.0) / n) if n > 1 else math.nan
        net = t_interval(pb - pw, se if np.isfinite(se) and se > 0 else math.nan, math.inf, level, n)
    return PreferenceShares(
        n, _share(worse, n, level), _share(tied, n, level), _share(better, n, level), net, sign_test(better, worse)
    )
