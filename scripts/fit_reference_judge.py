"""Refit the reference judge's faithfulness models on the development data, from the repository alone.

- `default` (inputs of `judges._claims.features`): the four development domains of bench/reference_domains.py,
  each weighing the same; bench/reference_judge_quality.py measures it left out, domain by domain.
- `zh` (inputs of `judges._claims.unsegmented_features`): HalluQA's development half by category but question_ids
  1-40, each category weighing the same (135 of its 184 questions are "Misleading").
The mini golden sets (the demo's and the gate's trust sets) are never fitted on. Logistic regression (Newton steps,
L2 on the coefficients, not the intercept), every coefficient >= 0; the file names every item fitted on
(`fit_items`) for trust validation's in-sample check. Deterministic.

Run: .venv/bin/python scripts/fit_reference_judge.py [--out judges/reference_model.json] [--l2 1.0]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python scripts/x.py`: the repo root, for bench.*

from bench.reference_domains import DATASETS, Case, auroc, domains, fit, golden_id, matrix
from judges._claims import item_features, item_unsegmented
from judges.reference_model import FEATURE_SETS, MODEL_PATH, parse_models

# bump with every refit that changes the coefficients (it is in the judge's config hash);
# 3.0.1: the mini golden sets (the demo's and the gate's trust sets) left out of the fit
VERSION = "3.0.1"
# domain (bench/reference_domains.py) -> the data set its ids belong to, as `fit_items` names it
DATA_SETS = {
    "halueval": "halueval_qa",
    "halluqa": "halluqa",
    "begin_cmu": "begin_dev/cmu-dog",
    "begin_tc": "begin_dev/topicalchat",
}


def fit_model(
    sets: Mapping[str, Sequence[Case]], inputs: Callable[[Case], Mapping[str, float]], names: Sequence[str], l2: float
) -> dict[str, object]:
    """One model's JSON: fitted on `sets` (each weighs the same in the fit), with its development AUROC per set."""
    coef = fit(sets, inputs, names, l2)
    development = {}
    for label, cases in sets.items():
        x, right = matrix(cases, inputs, names)
        development[label] = round(auroc(x @ coef[:-1] + coef[-1], right), 4)
    return {
        "fitted_on": {label: f"{len(cases)} answers" for label, cases in sets.items()},
        "coefficients": {name: round(float(c), 4) for name, c in zip(names, coef[:-1], strict=True)},
        "intercept": round(float(coef[-1]), 4),
        "development_auroc": development,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the coefficients")
    args = parser.parse_args()

    default_sets = domains()
    categories = json.loads((DATASETS / "halluqa_upstream" / "HalluQA.json").read_text(encoding="utf-8"))
    category = {f"q{row['question_id']}": row["Category"] for row in categories}
    zh_dev = default_sets["halluqa"]
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
                **fit_model(default_sets, lambda c: item_features(c.item), tuple(FEATURE_SETS["default"]), args.l2),
            },
            "zh": {
                "used_for": "faithfulness of Chinese items (judges.reference.UNSEGMENTED_LANGUAGES)",
                **fit_model(zh_sets, lambda c: item_unsegmented(c.item), tuple(FEATURE_SETS["zh"]), args.l2),
            },
        },
        # every model's fit data lies within these (the zh model's is the halluqa domain's)
        "fit_items": {
            DATA_SETS[domain]: sorted({golden_id(c) for c in cases}) for domain, cases in default_sets.items()
        },
    }
    parse_models(document)  # what the judge will read
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({**document, "fit_items": {k: f"{len(v)} items" for k, v in document["fit_items"].items()}}))


if __name__ == "__main__":
    main()
