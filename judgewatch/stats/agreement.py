"""Agreement between two raters (judge vs human, or human vs human), each with a confidence interval.

Pairs where either rating is NaN (unscored, not labeled) are dropped; `n` counts the pairs used. Kappas and AC1
get a seeded bootstrap over items: resampling items with replacement is drawing the K x K table from a
multinomial on its cell shares, so each replicate costs O(K^2), not O(n)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from judgewatch.stats.estimate import (
    SCALE_STEP,
    Estimate,
    paired_arrays,
    percentile_bounds,
    t_bounds,
    wilson_bounds,
    z_value,
)

KappaWeights = Literal["quadratic", "linear"]


@dataclass(frozen=True, slots=True, eq=False)
class ConfusionMatrix:
    """Counts of (rater a = row, rater b = column) over `categories`, in the given (ordinal) order."""

    categories: tuple[float, ...]
    counts: NDArray[np.int64]

    @property
    def n(self) -> int:
        return int(self.counts.sum())


def _cells(
    x: NDArray[np.float64], y: NDArray[np.float64], categories: Sequence[float] | None
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """(the K x K table cell of each pair, row-major; the categories); ValueError on a rating outside them."""
    cats = np.unique(np.concatenate([x, y])) if categories is None else np.asarray(categories, dtype=float)
    if cats.ndim != 1 or np.unique(cats).size != cats.size:
        raise ValueError(f"categories must be distinct values, got {categories!r}")
    k = cats.size
    values = np.concatenate([x, y])
    sorter = np.argsort(cats)
    idx = sorter[np.clip(np.searchsorted(cats, values, sorter=sorter), 0, max(k - 1, 0))] if k else values
    if values.size and (k == 0 or np.any(cats[idx] != values)):
        unknown = sorted(set(values.tolist()) - set(cats.tolist()))
        raise ValueError(f"ratings {unknown} are not among categories {cats.tolist()}")
    ix, iy = np.split(np.asarray(idx, dtype=np.intp), 2)
    return ix * k + iy, cats


def confusion_matrix(a: ArrayLike, b: ArrayLike, categories: Sequence[float] | None = None) -> ConfusionMatrix:
    """Cross-tabulate two raters; categories default to the sorted union of observed values."""
    x, y, _ = paired_arrays(a, b)
    cells, cats = _cells(x, y, categories)
    k = cats.size
    counts = np.bincount(cells, minlength=k * k).reshape(k, k).astype(np.int64)
    return ConfusionMatrix(tuple(float(c) for c in cats), counts)


def exact_agreement(a: ArrayLike, b: ArrayLike, *, level: float = 0.95) -> Estimate:
    """Share of pairs rated identically, with a Wilson score interval."""
    x, y, _ = paired_arrays(a, b)
    n = x.size
    if n == 0:
        return Estimate(np.nan, np.nan, np.nan, 0)
    hits = int(np.sum(x == y))
    low, high = wilson_bounds(hits, n, level)
    return Estimate(hits / n, float(low), float(high), n)


def disagreement_weights(k: int, weights: KappaWeights | None) -> NDArray[np.float64]:
    """K x K disagreement weights: 0/1 (Cohen), |i-j|/(K-1) (linear) or ((i-j)/(K-1))^2 (quadratic)."""
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(np.float64)
    dist = np.abs(i - j) / max(k - 1, 1)
    if weights == "linear":
        return dist
    if weights == "quadratic":
        return dist**2
    raise ValueError(f"unknown kappa weights {weights!r}; use 'quadratic', 'linear' or None")


def kappa_from_tables(tables: ArrayLike, w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weighted kappa `1 - sum(w*observed) / sum(w*expected)` for tables of shape (..., K, K); NaN if undefined."""
    t = np.asarray(tables, dtype=np.float64)
    total = t.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = t / total
        rows, cols = p.sum(axis=-1), p.sum(axis=-2)
        observed = np.einsum("...ij,ij->...", p, w)
        expected = np.einsum("...i,...j,ij->...", rows, cols, w)
        kappa = 1.0 - observed / expected
    return np.where(expected > 0, kappa, np.nan)


def _bootstrapped(
    cm: ConfusionMatrix,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    level: float,
    n_boot: int,
    seed: int,
) -> Estimate:
    """`statistic` of the table with a percentile bootstrap interval over items (tables drawn multinomially)."""
    n, k = cm.n, len(cm.categories)
    point = float(statistic(cm.counts.astype(np.float64)))
    z_value(level)  # validate before spending time on replicates
    draws = np.random.default_rng(seed).multinomial(n, cm.counts.ravel() / n, size=n_boot).reshape(n_boot, k, k)
    low, high = percentile_bounds(statistic(draws.astype(np.float64)), level)
    return Estimate(point, low, high, n)


def weighted_kappa(
    a: ArrayLike,
    b: ArrayLike,
    *,
    categories: Sequence[float] | None = None,
    weights: KappaWeights | None = "quadratic",
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Weighted kappa for ordinal scores (quadratic by default; `weights=None`: Cohen's kappa, nominal categories),
    percentile bootstrap interval over items; NaN when chance agreement is 1. Pass the full scale as `categories` (e.g.
    `range(1, 6)`): weights are spaced over the scale's positions, so leaving out an unused category changes them."""
    cm = confusion_matrix(a, b, categories)
    if cm.n == 0:
        return Estimate(np.nan, np.nan, np.nan, 0)
    w = disagreement_weights(len(cm.categories), weights)
    return _bootstrapped(cm, lambda t: kappa_from_tables(t, w), level, n_boot, seed)


cohen_kappa = partial(weighted_kappa, weights=None)  # Cohen's kappa: nominal categories, every disagreement alike


@dataclass(frozen=True, slots=True)
class KappaComparison:
    """Two raters' weighted kappas with a reference rater on the same items, and their difference (b - a);
    `n_effective`: Kish's effective number of items under the item weights (n when they are equal)."""

    a: Estimate
    b: Estimate
    difference: Estimate
    n_effective: float


def compare_kappas(
    reference: ArrayLike,
    a: ArrayLike,
    b: ArrayLike,
    *,
    categories: Sequence[float],
    item_weights: ArrayLike | None = None,
    weights: KappaWeights = "quadratic",
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> KappaComparison:
    """Weighted kappas of `a` and `b` with `reference` on the items all three rated, and kappa(b) - kappa(a), from the
    same resamples of items: the two kappas are correlated, so the difference is resampled in pairs (Vanbelle and
    Albert 2008). `item_weights` (1/p of an item's inclusion probability) weigh each item's cell in the tables."""
    r, x, y = (np.asarray(v, dtype=float) for v in (reference, a, b))
    keep = ~(np.isnan(r) | np.isnan(x) | np.isnan(y))
    n = int(keep.sum())
    if n == 0:
        empty = Estimate(np.nan, np.nan, np.nan, 0)
        return KappaComparison(empty, empty, empty, 0.0)
    z_value(level)
    k = len(categories)
    w = disagreement_weights(k, weights)
    mass = np.ones(n) if item_weights is None else np.asarray(item_weights, dtype=float)[keep]
    cells_a, _ = _cells(r[keep], x[keep], categories)
    cells_b, _ = _cells(r[keep], y[keep], categories)
    onehot = np.zeros((2, n, k * k))
    onehot[0, np.arange(n), cells_a] = onehot[1, np.arange(n), cells_b] = mass
    counts = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    kappas = [kappa_from_tables((counts @ onehot[j]).reshape(n_boot, k, k), w) for j in (0, 1)]
    points = [float(kappa_from_tables(onehot[j].sum(axis=0).reshape(k, k), w)) for j in (0, 1)]
    ka, kb, kd = (Estimate(p, *percentile_bounds(reps, level), n) for p, reps in (
        (points[0], kappas[0]), (points[1], kappas[1]), (points[1] - points[0], kappas[1] - kappas[0])))  # fmt: skip
    return KappaComparison(ka, kb, kd, float(mass.sum() ** 2 / (mass**2).sum()))


def ac1_from_tables(tables: ArrayLike) -> NDArray[np.float64]:
    """Gwet's AC1 for tables of shape (..., K, K): chance agreement from the categories' mean prevalence."""
    t = np.asarray(tables, dtype=np.float64)
    k = t.shape[-1]
    total = t.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = t / total[..., None, None]
        observed = np.trace(p, axis1=-2, axis2=-1)
        prevalence = (p.sum(axis=-1) + p.sum(axis=-2)) / 2.0
        chance = (prevalence * (1.0 - prevalence)).sum(axis=-1) / max(k - 1, 1)
        ac1 = (observed - chance) / (1.0 - chance)
    return np.where((total > 0) & (chance < 1), ac1, np.nan)


def gwet_ac1(
    a: ArrayLike,
    b: ArrayLike,
    *,
    categories: Sequence[float] | None = None,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Gwet's AC1 (Gwet 2008), percentile bootstrap interval over items. Unlike kappa, its chance agreement does not
    approach 1 when nearly every rating falls in one category, so it stays readable where prevalence is extreme (kappa
    collapses there: high agreement, near-zero kappa)."""
    cm = confusion_matrix(a, b, categories)
    if cm.n == 0 or len(cm.categories) < 2:
        return Estimate(np.nan, np.nan, np.nan, cm.n)
    return _bootstrapped(cm, ac1_from_tables, level, n_boot, seed)


def spearman(a: ArrayLike, b: ArrayLike, *, level: float = 0.95) -> Estimate:
    """Spearman's rho with a Fisher-z interval, SE = sqrt(1.06 / (n - 3)) (Fieller, Hartley & Pearson 1957)."""
    x, y, _ = paired_arrays(a, b)
    n = x.size
    if n < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return Estimate(np.nan, np.nan, np.nan, n)
    rho = float(sps.spearmanr(x, y).statistic)
    if n < 4:
        return Estimate(rho, np.nan, np.nan, n)
    z = np.arctanh(np.clip(rho, -1 + 1e-12, 1 - 1e-12))
    half = z_value(level) * np.sqrt(1.06 / (n - 3))
    return Estimate(rho, float(np.tanh(z - half)), float(np.tanh(z + half)), n)


def bias(judge: ArrayLike, human: ArrayLike, *, level: float = 0.95) -> Estimate:
    """Mean of (judge - human) over items both scored, with a Student-t interval (paired differences) whose spread
    is floored at one scale point over the n pairs (`SCALE_STEP / sqrt(n)`)."""
    x, y, _ = paired_arrays(judge, human, ("judge", "human"))
    n = x.size
    if n == 0:
        return Estimate(np.nan, np.nan, np.nan, 0)
    d = x - y
    mean = float(d.mean())
    if n < 2:
        return Estimate(mean, np.nan, np.nan, n)
    # at least one scale point of spread over the n pairs: agreeing labels never give a zero-width interval
    low, high = t_bounds(mean, max(float(d.std(ddof=1)), SCALE_STEP / np.sqrt(n)), n, level)
    return Estimate(mean, float(low), float(high), n)
