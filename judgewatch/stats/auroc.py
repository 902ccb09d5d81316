"""AUROC of a score separating known-good from known-bad answers, with a seeded bootstrap interval.

AUROC is the Mann-Whitney probability that a random good answer scores above a random bad one, ties counting
one half: 0.5 is chance, 1.0 perfect separation. Integer judge scores tie often, so ties must count half
(a constant scorer gets exactly 0.5, never more). NaN scores (unscored) are left out; the caller reports how
many there were beside the AUROC, never dropping them silently.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from judgewatch.stats.estimate import Estimate, as_float_array, percentile_bounds

logger = logging.getLogger(__name__)


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


def _batched_auroc(pos: NDArray[np.float64], neg: NDArray[np.float64]) -> NDArray[np.float64]:
    """AUROC per row of (replicates x n) arrays, NaN entries ignored (exact pairwise count, O(n^2) per row)."""
    greater = (pos[:, :, None] > neg[:, None, :]).sum(axis=(1, 2))
    equal = (pos[:, :, None] == neg[:, None, :]).sum(axis=(1, 2))
    n_pos = np.isfinite(pos).sum(axis=1)
    n_neg = np.isfinite(neg).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), (greater + 0.5 * equal) / (n_pos * n_neg), np.nan)


def auroc_interval(
    good: ArrayLike,
    bad: ArrayLike,
    *,
    paired: bool = True,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """AUROC with a percentile-bootstrap interval; `n` counts the scored (good, bad) answers used together.

    `paired=True` (good[i] and bad[i] answer the same question, NaN where unscored) resamples questions, so
    the interval reflects that both answers of a question share its difficulty; `paired=False` resamples each
    side on its own. Fewer than two scored answers on a side: no interval (NaN bounds).
    """
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
    reps: list[NDArray[np.float64]] = []
    # Bounded memory: (chunk x n_pos x n_neg) comparison cells at a time.
    chunk = max(1, 4_000_000 // max(1, pos.size * neg.size))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        if paired:
            idx = rng.integers(0, pos.size, size=(size, pos.size))
            reps.append(_batched_auroc(pos[idx], neg[idx]))
        else:
            reps.append(
                _batched_auroc(
                    pos[rng.integers(0, pos.size, size=(size, pos.size))],
                    neg[rng.integers(0, neg.size, size=(size, neg.size))],
                )
            )
    low, high = percentile_bounds(np.concatenate(reps), level)
    return Estimate(point, low, high, n)
