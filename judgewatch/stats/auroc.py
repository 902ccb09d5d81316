"""AUROC of a score separating known-good from known-bad answers, with a seeded bootstrap interval. Ties count one
half (integer judge scores tie often: a constant scorer gets exactly 0.5); NaN scores (unscored) are left out, and
the caller reports how many there were."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from judgewatch.stats.estimate import Estimate, as_float_array, percentile_bounds


def auroc(good: ArrayLike, bad: ArrayLike) -> float:
    """P(good > bad) + 0.5 P(good == bad) over the finite scores; NaN when either side has none."""
    pos = as_float_array(good, "good")
    neg = as_float_array(bad, "bad")
    pos, neg = pos[np.isfinite(pos)], neg[np.isfinite(neg)]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    ranks = sps.rankdata(np.concatenate([pos, neg]))  # average ranks: a tie counts one half
    u = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def _level_onehot(values: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """(n x L) indicator of each value's level; all-zero rows for NaN (unscored) values."""
    onehot = np.zeros((values.size, levels.size))
    finite = np.isfinite(values)
    onehot[np.flatnonzero(finite), np.searchsorted(levels, values[finite])] = 1.0
    return onehot


def _resample_counts(rng: np.random.Generator, n: int, size: int) -> NDArray[np.float64]:
    """(size x n) counts of how often each unit is drawn in each bootstrap replicate of n draws."""
    draws = rng.integers(0, n, size=(size, n))
    flat = (np.arange(size)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)


def _weighted_auroc(hist_good: NDArray[np.float64], hist_bad: NDArray[np.float64]) -> NDArray[np.float64]:
    """AUROC per row from (replicates x L) score histograms over ordered levels."""
    below = np.cumsum(hist_bad, axis=1) - hist_bad  # bad answers strictly below each level
    wins = (hist_good * (below + 0.5 * hist_bad)).sum(axis=1)
    total = hist_good.sum(axis=1) * hist_bad.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, wins / total, np.nan)


def auroc_interval(
    good: ArrayLike, bad: ArrayLike, *, paired: bool = True, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """AUROC with a percentile-bootstrap interval; `n` counts the scored (good, bad) answers used together.
    `paired=True` (good[i] and bad[i] answer the same question, NaN where unscored) resamples questions, so the interval
    reflects that both answers of a question share its difficulty; `paired=False` resamples each side on its own. Fewer
    than two scored answers on a side: no interval (NaN bounds)."""
    pos = as_float_array(good, "good")
    neg = as_float_array(bad, "bad")
    if paired and pos.size != neg.size:
        raise ValueError(f"paired AUROC needs one bad score per good score, got {pos.size} and {neg.size}")
    point = auroc(pos, neg)
    n_pos, n_neg = int(np.isfinite(pos).sum()), int(np.isfinite(neg).sum())
    n = n_pos + n_neg
    if n_pos < 2 or n_neg < 2 or resamples < 1:
        return Estimate(point, float("nan"), float("nan"), n)
    rng = np.random.default_rng(seed)
    # Each replicate is a vector of resampling counts; the AUROC follows from count-weighted histograms over
    # the observed score levels (few for integer scores), so a replicate costs O(n * L), not O(n^2).
    levels = np.unique(np.concatenate([pos[np.isfinite(pos)], neg[np.isfinite(neg)]]))
    good_levels, bad_levels = _level_onehot(pos, levels), _level_onehot(neg, levels)
    reps: list[NDArray[np.float64]] = []
    chunk = max(1, 2_000_000 // (pos.size + neg.size + levels.size))  # bounded memory per chunk
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        if paired:
            counts = _resample_counts(rng, pos.size, size)
            reps.append(_weighted_auroc(counts @ good_levels, counts @ bad_levels))
        else:
            good_counts = _resample_counts(rng, pos.size, size)
            bad_counts = _resample_counts(rng, neg.size, size)
            reps.append(_weighted_auroc(good_counts @ good_levels, bad_counts @ bad_levels))
    low, high = percentile_bounds(np.concatenate(reps), level)
    return Estimate(point, low, high, n)
