"""Krippendorff's alpha for several annotators with missing values, with a bootstrap interval over units
(Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability": a coincidence matrix, alpha = 1 - D_o / D_e;
units with fewer than two values are not pairable and are ignored)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgewatch.stats.estimate import Estimate, percentile_bounds

AlphaLevel = Literal["nominal", "ordinal", "interval"]

_BOOT_CELLS = 20_000_000  # bound on resampling-weight cells held in memory at once


def _unit_value_counts(data: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-unit counts of each distinct value (units x values), for pairable units only; and the values."""
    values = np.unique(data[~np.isnan(data)])
    units = data.shape[1]
    present = ~np.isnan(data)
    unit_ix = np.broadcast_to(np.arange(units), data.shape)[present]
    value_ix = np.searchsorted(values, data[present])
    counts = np.bincount(unit_ix * values.size + value_ix, minlength=units * values.size)
    counts = counts.reshape(units, values.size).astype(np.float64)
    return counts[counts.sum(axis=1) >= 2], values


def _squared_distance(
    level: AlphaLevel, values: NDArray[np.float64], marginals: NDArray[np.float64]
) -> NDArray[np.float64]:
    """delta^2 per (c, k), batched over leading axes of `marginals` (..., V)."""
    v = values.size
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(v), (*marginals.shape[:-1], v, v))
    if level == "interval":
        pos = np.broadcast_to(values, marginals.shape)
    elif level == "ordinal":
        # ordinal distance between c and k is the interval distance between their mid-ranks in the pooled values
        pos = np.cumsum(marginals, axis=-1) - marginals / 2.0
    else:
        raise ValueError(f"unknown level {level!r}; use 'nominal', 'ordinal' or 'interval'")
    return (pos[..., :, None] - pos[..., None, :]) ** 2


def _alpha_from_coincidences(
    coincidences: NDArray[np.float64], values: NDArray[np.float64], level: AlphaLevel
) -> NDArray[np.float64]:
    """alpha = 1 - (n - 1) * sum(o * d2) / sum(n_c * n_k * d2), for coincidence matrices (..., V, V)."""
    marginals = coincidences.sum(axis=-1)
    n = marginals.sum(axis=-1)
    d2 = _squared_distance(level, values, marginals)
    observed = np.einsum("...ck,...ck->...", coincidences, d2)
    expected = np.einsum("...c,...k,...ck->...", marginals, marginals, d2)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def krippendorff_alpha(
    reliability_data: ArrayLike,
    *,
    level: AlphaLevel = "ordinal",
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate:
    """Krippendorff's alpha of a (coders x units) matrix, NaN = missing, with a 95% bootstrap interval over units; `n`
    counts the pairable units. `level` picks the distance: nominal (categories), ordinal (ranks, e.g. 1-5 scores) or
    interval."""
    data = np.asarray(reliability_data, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"reliability data must be coders x units, got shape {data.shape}")
    _squared_distance(level, np.zeros(1), np.zeros(1))  # reject an unknown level early
    counts, values = _unit_value_counts(data)
    units, v = counts.shape
    if units == 0 or v == 0:
        return Estimate(np.nan, np.nan, np.nan, units)
    # each unit's share of the coincidence matrix, flattened so resampling is one matrix product
    scale = 1.0 / (counts.sum(axis=1) - 1.0)
    per_unit = counts[:, :, None] * counts[:, None, :]
    per_unit[:, np.arange(v), np.arange(v)] -= counts
    per_unit = (per_unit * scale[:, None, None]).reshape(units, v * v)
    point = float(_alpha_from_coincidences(per_unit.sum(axis=0).reshape(v, v), values, level))

    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOT_CELLS // units)
    replicates = []
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        weights = rng.multinomial(units, np.full(units, 1.0 / units), size=size).astype(np.float64)
        coincidences = (weights @ per_unit).reshape(size, v, v)
        replicates.append(_alpha_from_coincidences(coincidences, values, level))
    low, high = percentile_bounds(np.concatenate(replicates), 0.95)
    return Estimate(point, low, high, units)
