"""Fitting the reference judge's faithfulness combiners: weighted logistic regression, every coefficient >= 0.

`fit_balanced` is `scripts/fit_reference_judge.py`'s fit (each data set weighs the same); `refit` is `judges
align`'s: an L2 penalty towards the current coefficients (the current model is the prior), faithful and unfaithful
labels weighing the same, the intercept unpenalized. Deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from judges.reference import coverage, feature_set
from judges.reference_model import FEATURE_SETS, FaithfulnessModels
from judgewatch.contract.items import JudgeItem

MIN_PER_CLASS = 5  # faithful and unfaithful labels each feature set needs before it is refit


def fit_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float, prior: np.ndarray | None = None
) -> np.ndarray:
    """Coefficients then intercept, maximizing the weighted log-likelihood minus l2/2 x |coefficients - prior|^2
    (Newton's method; `prior` holds coefficients then intercept, zero when absent)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    penalty = np.diag(np.r_[np.full(d, l2), 0.0])
    centre = np.zeros(d + 1) if prior is None else prior
    w = np.zeros(d + 1)  # Newton's usual start (p = 1/2 everywhere), whatever the prior: it never overshoots from here
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        gradient = xb.T @ (weights * (p - y)) + penalty @ (w - centre)
        hessian = (xb * (weights * p * (1.0 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def fit_non_negative(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float, prior: np.ndarray | None = None
) -> np.ndarray:
    """As `fit_logistic`, with every coefficient >= 0 (more support never lowers the score): a feature whose
    coefficient comes out negative is left out (its coefficient 0) and the rest refitted."""
    kept = list(range(x.shape[1]))
    while True:
        centre = None if prior is None else prior[[*kept, -1]]
        w = fit_logistic(x[:, kept], y, weights, l2, centre)
        if (w[:-1] >= 0).all():
            full = np.zeros(x.shape[1] + 1)
            full[kept], full[-1] = w[:-1], w[-1]
            return full
        kept.pop(int(np.argmin(w[:-1])))


def fit_balanced(parts: Sequence[tuple[np.ndarray, np.ndarray]], l2: float) -> np.ndarray:
    """Coefficients then intercept, fitted on every (features, labels) part, each part weighing the same."""
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts]).astype(float)
    weights = np.concatenate([np.full(len(p[1]), 1.0 / len(p[1])) for p in parts]) * len(y) / len(parts)
    return fit_non_negative(x, y, weights, l2)


def class_weights(y: np.ndarray) -> np.ndarray:
    """Weights under which the faithful and the unfaithful labels weigh the same (mean weight 1): the level cuts
    read the probability as evidence, not as how rare faithful answers are in the labelled traffic."""
    positives = float(y.sum())
    return np.where(y == 1, len(y) / (2 * positives), len(y) / (2 * (len(y) - positives)))


@dataclass(frozen=True)
class Refit:
    """The refitted combiners as `reference_model.json` holds them, and how many labels each was refit on."""

    document: dict[str, object]
    labels: dict[str, int]  # feature set -> labels it was refit on; 0: too few on one side, kept as it was


def refit(
    models: FaithfulnessModels, labelled: Sequence[tuple[JudgeItem, bool]], fit_items: Iterable[str], l2: float = 1.0
) -> Refit:
    """`models` refitted on (item, faithful?) labels, by the feature set each item's language uses. Items the judge
    gives no faithfulness (no references, no claim) are left out; `fit_items` names the labelled items (the
    document's `review_labels`, with those of the refit `models` started from)."""
    rows: dict[str, list[tuple[list[float], bool]]] = {name: [] for name in FEATURE_SETS}
    for item, faithful in labelled:
        cov = coverage(item, models)
        if cov.faithfulness is not None:
            name = feature_set(item)
            rows[name].append(([cov.inputs[f] for f in FEATURE_SETS[name]], faithful))
    fitted: dict[str, dict[str, object]] = {}
    counts: dict[str, int] = {}
    for name, model in models.models.items():
        ys = [y for _, y in rows[name]]
        current = np.array([*model.coefficients.values(), model.intercept])
        counts[name] = len(ys) if min(sum(ys), len(ys) - sum(ys)) >= MIN_PER_CLASS else 0
        if counts[name]:
            x, y = np.array([r for r, _ in rows[name]]), np.array(ys, dtype=float)
            current = fit_non_negative(x, y, class_weights(y), l2, current)
        coefficients = zip(FEATURE_SETS[name], current[:-1], strict=True)
        fitted[name] = {
            "coefficients": {f: round(float(c), 4) for f, c in coefficients},
            "intercept": round(float(current[-1]), 4),
        }
    document: dict[str, object] = {
        "version": models.version.split("+")[0] + "+aligned",
        "models": fitted,
        # the labels of this refit and of the one it started from; the shipped fit's items the judge adds itself
        "fit_items": {"review_labels": sorted(models.fit_items.get("review_labels", frozenset()) | set(fit_items))},
    }
    return Refit(document, counts)
