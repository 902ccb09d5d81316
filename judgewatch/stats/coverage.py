"""Empirical check of PPI on fully human-labeled data: draw random "reviewed" subsets, estimate the known
full-data human mean from the judge on all items plus humans on the subset, and count how often the PPI and
human-only intervals cover it and how their widths compare."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judgewatch.stats.estimate import as_float_array
from judgewatch.stats.ppi import classical_mean, ppi_mean


@dataclass(frozen=True, slots=True)
class SubsetCoverage:
    """Share of draws whose interval covered the full-data mean, and PPI/human-only width ratios."""

    truth: float
    draws: int
    subset_size: int
    ppi_coverage: float
    classical_coverage: float
    median_width_ratio: float
    median_lam: float


def subset_coverage(
    human: ArrayLike, judge: ArrayLike, *, fraction: float = 0.1, draws: int = 1000, level: float = 0.95, seed: int = 0
) -> SubsetCoverage:
    """Draw `draws` uniform subsets of round(fraction * N) items (seeded) and score both intervals."""
    y, f = as_float_array(human, "human"), as_float_array(judge, "judge")
    if y.shape != f.shape or not (np.all(np.isfinite(y)) and np.all(np.isfinite(f))):
        raise ValueError("human and judge must be equal-length and fully scored for a coverage check")
    size = round(fraction * y.size)
    if not 2 <= size <= y.size:
        raise ValueError(f"fraction {fraction} of {y.size} items leaves {size} labels")
    truth = float(y.mean())
    rng = np.random.default_rng(seed)
    covered = np.zeros(draws, dtype=bool)
    classical_covered = np.zeros(draws, dtype=bool)
    ratios = np.zeros(draws)
    lams = np.zeros(draws)
    for k in range(draws):
        pick = rng.choice(y.size, size=size, replace=False)
        ppi = ppi_mean(y[pick], f[pick], f, level=level)
        human_only = classical_mean(y[pick], level=level)
        covered[k] = ppi.low <= truth <= ppi.high
        classical_covered[k] = human_only.low <= truth <= human_only.high
        width = human_only.high - human_only.low
        ratios[k] = (ppi.high - ppi.low) / width if width > 0 else np.nan
        lams[k] = ppi.lam
    return SubsetCoverage(
        truth=truth,
        draws=draws,
        subset_size=size,
        ppi_coverage=float(covered.mean()),
        classical_coverage=float(classical_covered.mean()),
        median_width_ratio=float(np.nanmedian(ratios)),
        median_lam=float(np.median(lams)),
    )
