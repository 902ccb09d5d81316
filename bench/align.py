"""Benchmark: does `judgewatch judges align` lift the offline reference judge above plain word recall out of domain?

On BEGIN's two development domains, the `default` combiner fitted without BEGIN is refit on one domain's labels by
`judges.reference_fit.refit` (what `judges align` runs) and measured on the other (bench/README.md, "Judge aligned
with its reviewers"). Limit: the refit's AUROC over word recall's on each held-out domain, > 1.

Run: .venv/bin/python bench/align.py [--bootstrap 2000] [--shares 0.1,0.25] [--draws 100]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/x.py`: the repo root, for bench.*

from bench.reference_domains import auroc, domains, fit, paired_bootstrap
from judges._claims import item_features, word_recall
from judges.reference_fit import refit
from judges.reference_model import FEATURE_SETS, FaithfulnessModels, load_models, parse_model

SEED = 20261129
LIMIT = 1.0
BEGIN = ("begin_cmu", "begin_tc")


def never_saw_begin() -> FaithfulnessModels:
    """The shipped models with the `default` combiner refitted on the development domains but BEGIN."""
    names = tuple(FEATURE_SETS["default"])
    sets = {name: cases for name, cases in domains().items() if name not in BEGIN}
    coef = fit(sets, lambda c: item_features(c.item), names, 1.0)
    shipped = load_models()
    default = {"coefficients": dict(zip(names, map(float, coef[:-1]), strict=True)), "intercept": float(coef[-1])}
    models = {**shipped.models, "default": parse_model(default, "never-saw-begin")}
    return FaithfulnessModels("never-saw-begin", models, shipped.fit_items)


def aligned_models(document: dict[str, object]) -> FaithfulnessModels:
    return FaithfulnessModels("aligned", {"default": parse_model(document["models"]["default"])}, {})  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--shares", default="0.1,0.25", help="shares of the label domain to refit on")
    parser.add_argument("--draws", type=int, default=100)
    args = parser.parse_args()
    sets = domains()
    current = never_saw_begin()

    def probabilities(models: FaithfulnessModels, cases: list) -> np.ndarray:  # type: ignore[type-arg]
        model = models.for_language("default")
        return np.array([model.probability(item_features(c.item)) for c in cases])

    pooled = [c for name in BEGIN for c in sets[name]]
    right = np.array([c.right for c in pooled])
    recall = np.array([word_recall(c.item.answer, c.item) for c in pooled])
    print(
        f"current judge (never saw BEGIN) on both BEGIN domains, {right.sum()} right / {len(right) - right.sum()} "
        f"wrong: AUROC {auroc(probabilities(current, pooled), right):.3f}, word recall {auroc(recall, right):.3f}"
    )
    ratios = {}
    for held_out in BEGIN:
        [labels] = [name for name in BEGIN if name != held_out]
        fit_on = sets[labels]
        result = refit(current, [(c.item, c.right) for c in fit_on], [c.item.id for c in fit_on])
        cases = sets[held_out]
        right = np.array([c.right for c in cases])
        scores = probabilities(aligned_models(result.document), cases)
        baseline = np.array([word_recall(c.item.answer, c.item) for c in cases])
        bounds = paired_bootstrap(scores, baseline, right, [c.group for c in cases], args.bootstrap, SEED)
        refit_auroc, recall_auroc = auroc(scores, right), auroc(baseline, right)
        ratios[held_out] = refit_auroc / recall_auroc
        low, high = bounds["difference"]
        (model_low, model_high), current_auroc = bounds["model"], auroc(probabilities(current, cases), right)
        print(
            f"held out {held_out} ({right.sum()} right / {len(right) - right.sum()} wrong), refit on {labels}'s "
            f"{result.labels['default']} labels: refit {refit_auroc:.3f} [{model_low:.3f}-{model_high:.3f}], "
            f"word recall {recall_auroc:.3f}, current {current_auroc:.3f}; "
            f"refit - recall {refit_auroc - recall_auroc:+.3f} [{low:+.3f}, {high:+.3f}]"
        )
    rng = np.random.default_rng(SEED)
    for held_out in BEGIN:
        [labels] = [name for name in BEGIN if name != held_out]
        cases, right = sets[held_out], np.array([c.right for c in sets[held_out]])
        recall_auroc = auroc(np.array([word_recall(c.item.answer, c.item) for c in cases]), right)
        for share in map(float, args.shares.split(",")):
            size, found = int(share * len(sets[labels])), []
            for _ in range(args.draws):
                drawn = [sets[labels][i] for i in rng.choice(len(sets[labels]), size, replace=False)]
                result = refit(current, [(c.item, c.right) for c in drawn], [])
                if result.labels["default"]:
                    found.append(auroc(probabilities(aligned_models(result.document), cases), right))
            above = sum(a > recall_auroc for a in found)
            print(
                f"held out {held_out}, refit on {share:.0%} of {labels} ({size} labels), {args.draws} draws: "
                f"{len(found)} refit, mean AUROC {np.mean(found):.3f}, above word recall ({recall_auroc:.3f}) in "
                f"{above} ({above / args.draws:.0%} of the draws)"
            )
    met = all(r > LIMIT for r in ratios.values())
    figures = ", ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items())
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"align-refit held-out AUROC over word recall: {figures} (limit > {LIMIT:g}): {'met' if met else 'NOT met'}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
