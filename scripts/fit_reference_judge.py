"""Refit the reference judge's faithfulness models on the development halves, from the repository alone.

Development halves (the benchmark's splits, bench/reference_judge_quality.py), the held-out halves never read:
- `default` model (features of `judges.reference.features`): HaluEval QA one-turn items 0-249 and HalluQA
  question_id <= 225 (the 2.1.0 data, so its coefficients are 2.1.0's); each data set weighs the same.
- `zh` model (features of `judges.reference.unsegmented_features`): HalluQA's development half by category
  (question_id <= 225, and the even question_ids above: every category on both sides); each category weighs
  the same, whatever its size (175 of its 224 questions are "Misleading").
Logistic regression (Newton steps, L2 penalty on the coefficients, not the intercept), every coefficient >= 0.
Deterministic: the same repository gives the same file.

Run: .venv/bin/python scripts/fit_reference_judge.py [--out judges/reference_model.json] [--l2 1.0]
"""

from __future__ import annotations

import argparse
import json
import json as _json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from bench.reference_judge_quality import DATASETS, Case, auroc, by_category_dev, halluqa_cases, halueval_cases
from judges._claims import features, item_evidence, item_unsegmented
from judges.reference_model import FEATURE_SETS, MODEL_PATH, parse_models

VERSION = "2.2.0"  # bump with every refit that changes the coefficients (it is in the judge's config hash)


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


def fit_model(
    sets: Mapping[str, Sequence[Case]], inputs: Callable[[Case], Mapping[str, float]], names: Sequence[str], l2: float
) -> dict[str, object]:
    """One model's JSON: fitted on `sets` (each weighs the same in the fit), with its development AUROC per set."""
    rows: list[list[float]] = []
    labels: list[float] = []
    weights: list[float] = []
    parts: dict[str, slice] = {}
    for label, cases in sets.items():
        start = len(rows)
        for case in cases:
            values = inputs(case)
            rows.append([values[name] for name in names])
            labels.append(float(case.right))
            weights.append(1.0 / len(cases))
        parts[label] = slice(start, len(rows))
    x, y = np.array(rows), np.array(labels)
    coef = fit_non_negative(x, y, np.array(weights) * len(rows) / len(sets), l2)
    z = x @ coef[:-1] + coef[-1]
    return {
        "fitted_on": {label: f"{len(cases)} answers" for label, cases in sets.items()},
        "coefficients": {name: round(float(c), 4) for name, c in zip(names, coef[:-1], strict=True)},
        "intercept": round(float(coef[-1]), 4),
        "development_auroc": {label: round(auroc(z[part], y[part] > 0), 4) for label, part in parts.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the coefficients")
    args = parser.parse_args()

    halluqa = halluqa_cases(DATASETS / "halluqa_upstream")[0]
    categories = _json.loads((DATASETS / "halluqa_upstream" / "HalluQA.json").read_text(encoding="utf-8"))
    category = {f"q{row['question_id']}": row["Category"] for row in categories}
    default_sets = {
        "halueval_qa one-turn items 0-249": [c for c in halueval_cases(DATASETS / "halueval_upstream") if c.dev],
        "halluqa question_id <= 225": [c for c in halluqa if c.dev],
    }
    zh_dev = [c for c in halluqa if by_category_dev(c)]
    zh_sets = {
        f"halluqa {name}, question_id <= 225 or even": [c for c in zh_dev if category[c.group] == name]
        for name in sorted({category[c.group] for c in zh_dev})
    }
    document = {
        "version": VERSION,
        "l2": args.l2,
        "models": {
            "default": {
                "used_for": "faithfulness of items outside judges.reference.UNSEGMENTED_LANGUAGES",
                **fit_model(
                    default_sets, lambda c: features(*item_evidence(c.item)), tuple(FEATURE_SETS["default"]), args.l2
                ),
            },
            "zh": {
                "used_for": "faithfulness of Chinese items (judges.reference.UNSEGMENTED_LANGUAGES)",
                **fit_model(zh_sets, lambda c: item_unsegmented(c.item), tuple(FEATURE_SETS["zh"]), args.l2),
            },
        },
    }
    parse_models(document)  # what the judge will read
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
