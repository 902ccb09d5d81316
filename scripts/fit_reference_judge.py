"""Refit the reference judge's faithfulness model on the development halves, from the repository alone.

Development halves (the benchmark's split, bench/reference_judge_quality.py): HaluEval QA one-turn items 0-249
and HalluQA question_id <= 225; the other halves are never read here, so the benchmark's held-out figures stay
held out. Logistic regression (Newton steps, L2 penalty on the coefficients, not the intercept) over the
features of `judges.reference.features`, every coefficient >= 0; each data set weighs the same in the fit,
whatever its size.
Deterministic: the same repository gives the same file.

Run: .venv/bin/python scripts/fit_reference_judge.py [--out judges/reference_model.json] [--l2 1.0]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.reference_judge_quality import DATASETS, auroc, halluqa_cases, halueval_cases
from judges.reference import features, item_evidence
from judges.reference_model import CLEAN, MODEL_PATH, parse_model

VERSION = "2.1.0"  # bump with every refit that changes the coefficients (it is in the judge's config hash)


def fit_logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float) -> np.ndarray:
    """Coefficients then intercept, maximizing the weighted L2-penalized log-likelihood (Newton's method)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    penalty = np.diag(np.r_[np.full(d, l2), 0.0])
    w = np.zeros(d + 1)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        gradient = xb.T @ (weights * (p - y)) + penalty @ w
        hessian = (xb * (weights * p * (1.0 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def fit_non_negative(x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float) -> np.ndarray:
    """As `fit_logistic`, with every coefficient >= 0 (more support never lowers the score): a feature whose
    coefficient comes out negative is left out and the rest refitted."""
    kept = list(range(x.shape[1]))
    while True:
        w = fit_logistic(x[:, kept], y, weights, l2)
        if (w[:-1] >= 0).all():
            full = np.zeros(x.shape[1] + 1)
            full[kept], full[-1] = w[:-1], w[-1]
            return full
        kept.pop(int(np.argmin(w[:-1])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the coefficients")
    args = parser.parse_args()

    sets = {
        "halueval_qa one-turn items 0-249": [c for c in halueval_cases(DATASETS / "halueval_upstream") if c.dev],
        "halluqa question_id <= 225": [c for c in halluqa_cases(DATASETS / "halluqa_upstream")[0] if c.dev],
    }
    names = tuple(CLEAN)
    rows: list[list[float]] = []
    labels: list[float] = []
    weights: list[float] = []
    parts: dict[str, slice] = {}
    for label, cases in sets.items():
        start = len(rows)
        for case in cases:
            values = features(*item_evidence(case.item))
            rows.append([values[name] for name in names])
            labels.append(float(case.right))
            weights.append(1.0 / len(cases))
        parts[label] = slice(start, len(rows))
    x, y = np.array(rows), np.array(labels)
    coef = fit_non_negative(x, y, np.array(weights) * len(rows) / len(sets), args.l2)
    z = x @ coef[:-1] + coef[-1]
    document = {
        "version": VERSION,
        "used_for": "faithfulness of items outside judges.reference.LEXICAL_LANGUAGES (Chinese keeps 1.1.0's)",
        "fitted_on": {label: f"{len(cases)} answers" for label, cases in sets.items()},
        "l2": args.l2,
        "coefficients": {name: round(float(c), 4) for name, c in zip(names, coef[:-1], strict=True)},
        "intercept": round(float(coef[-1]), 4),
        "development_auroc": {label: round(auroc(z[part], y[part] > 0), 4) for label, part in parts.items()},
    }
    parse_model(document)  # what the judge will read
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
