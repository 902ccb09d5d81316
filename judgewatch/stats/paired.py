"""Paired comparison for the release gate: candidate minus baseline on the same items, with a bootstrap interval.

A release regresses on a criterion when the whole interval of (candidate - baseline) lies below -margin."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from judgewatch.stats.estimate import paired_arrays, t_bounds, z_value

logger = logging.getLogger(__name__)

BootstrapMethod = Literal["BCa", "percentile"]

_RESAMPLE_CELLS = 10_000_000  # bound on bootstrap values held in memory at once


@dataclass(frozen=True, slots=True)
class PairedDiff:
    """Mean of candidate - baseline over items scored on both sides; `n_dropped` pairs where either side was unscored
    (NaN) or missing. `method`: "BCa"/"percentile" (bootstrap), "t" (too few pairs to bootstrap), "constant" (every
    difference equal: zero width), "none" (fewer than two pairs: no interval). `sd`: the differences' standard
    deviation (NaN below two pairs), what the gate's power rests on (`stats.power`)."""

    estimate: float
    low: float
    high: float
    n: int
    n_dropped: int
    method: str
    sd: float = float("nan")


def align_scores(
    candidate: Mapping[str, float | None], baseline: Mapping[str, float | None]
) -> tuple[list[str], NDArray[np.float64], NDArray[np.float64]]:
    """Align per-item scores by item id (sorted union); a side without the item, or with None, gets NaN."""
    ids = sorted(set(candidate) | set(baseline))

    def column(scores: Mapping[str, float | None]) -> NDArray[np.float64]:
        return np.array([np.nan if (v := scores.get(i)) is None else v for i in ids], dtype=np.float64)

    return ids, column(candidate), column(baseline)


def _bootstrap(
    d: NDArray[np.float64], level: float, method: BootstrapMethod, n_resamples: int, seed: int
) -> tuple[float, float]:
    batch = max(1, _RESAMPLE_CELLS // d.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate BCa shows up as NaN bounds, handled by the caller
        ci = sps.bootstrap(
            (d,),
            np.mean,
            vectorized=True,
            axis=-1,
            n_resamples=n_resamples,
            batch=batch,
            confidence_level=level,
            method=method,
            rng=np.random.default_rng(seed),
        ).confidence_interval
    return float(ci.low), float(ci.high)


def paired_mean_diff(
    candidate: ArrayLike,
    baseline: ArrayLike,
    *,
    level: float = 0.95,
    method: BootstrapMethod = "BCa",
    n_resamples: int = 9999,
    seed: int = 0,
    min_bootstrap_n: int = 10,
) -> PairedDiff:
    """Mean difference of scores aligned item by item (`align_scores`), with a seeded bootstrap over whole pairs (what
    makes it paired); NaN = unscored, dropped pairwise and counted. Fewer than `min_bootstrap_n` pairs get a Student-t
    interval instead, since a bootstrap of a handful of values understates its own spread."""
    x, y, dropped = paired_arrays(candidate, baseline, ("candidate", "baseline"))
    z_value(level)
    n = x.size
    if n == 0:
        return PairedDiff(np.nan, np.nan, np.nan, 0, dropped, "none")
    d = x - y
    mean = float(d.mean())
    if n == 1:
        return PairedDiff(mean, -np.inf, np.inf, 1, dropped, "none")
    sd = float(d.std(ddof=1))
    if np.all(d == d[0]):
        return PairedDiff(mean, mean, mean, n, dropped, "constant", sd)
    if n < min_bootstrap_n:
        t_low, t_high = t_bounds(mean, sd, n, level)
        return PairedDiff(mean, float(t_low), float(t_high), n, dropped, "t", sd)
    low, high = _bootstrap(d, level, method, n_resamples, seed)
    used: str = method
    if method == "BCa" and not (np.isfinite(low) and np.isfinite(high)):
        logger.info("BCa interval undefined for %d pairs; using the percentile bootstrap", n)
        (low, high), used = _bootstrap(d, level, "percentile", n_resamples, seed), "percentile"
    return PairedDiff(mean, low, high, n, dropped, used, sd)


def regressed(diff_ci_high: float, margin: float) -> bool:
    """True when the interval of candidate - baseline lies entirely below -margin (its upper bound is). An undefined
    bound (NaN) never counts as a regression: the caller reports "could not evaluate" instead."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    return bool(diff_ci_high < -margin)
