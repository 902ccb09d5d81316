"""The reference judge's faithfulness combiners: logistic regressions over its evidence features, read from JSON.

`reference_model.json` (written by `scripts/fit_reference_judge.py`, measured by `bench/reference_judge_quality.py`)
holds one model per feature set, `default` and `zh` (Chinese), the items they were fit on (so validation can leave
them out), and a version; the version and a digest of every coefficient are in the judge's config hash.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

MODEL_PATH = Path(__file__).with_name("reference_model.json")
# The features a clean answer has (fully supported by one sentence, as a span, agreeing in stance), per model:
# each feature's contribution to a verdict is measured from here, so the reason can name the one that cost most.
FEATURE_SETS: Mapping[str, Mapping[str, float]] = {
    "default": MappingProxyType({"sentence_support": 1.0, "consistency": 1.0, "asserts": 1.0}),
    "zh": MappingProxyType({"support": 1.0, "polarity": 1.0, "fact_recall": 1.0}),
}


@dataclass(frozen=True)
class FaithfulnessModel:
    """P(faithful) = sigmoid(intercept + sum of coefficient x feature)."""

    version: str
    coefficients: Mapping[str, float]
    intercept: float
    clean: Mapping[str, float]  # the feature set's clean values (FEATURE_SETS)

    @property
    def digest(self) -> str:
        payload = json.dumps({"c": dict(self.coefficients), "b": self.intercept}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(c * values[name] for name, c in self.coefficients.items())
        return 1.0 / (1.0 + math.exp(-z))

    def costs(self, values: Mapping[str, float]) -> dict[str, float]:
        """Log-odds each feature takes away from a clean answer's (positive = it lowered the score)."""
        return {name: c * (self.clean[name] - values[name]) for name, c in self.coefficients.items()}


@dataclass(frozen=True)
class FaithfulnessModels:
    """Every fitted model of one file, by feature set; `for_language` picks the one an item's language uses."""

    version: str
    models: Mapping[str, FaithfulnessModel]
    fit_items: Mapping[str, frozenset[str]] = field(default_factory=dict)  # data set -> ids of the items fit on

    def fit_item_ids(self) -> frozenset[str]:
        """Every item id any model of the file was fit on (all data sets together)."""
        return frozenset().union(*self.fit_items.values())

    @property
    def digest(self) -> str:
        payload = json.dumps({name: model.digest for name, model in self.models.items()}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def for_language(self, language: str) -> FaithfulnessModel:
        return self.models.get(language, self.models["default"])


def parse_model(data: Mapping[str, object], version: str = "", feature_set: str = "default") -> FaithfulnessModel:
    """One model of the JSON document (`coefficients` by feature name, `intercept`); ValueError if incomplete."""
    clean = FEATURE_SETS[feature_set]
    coefficients = data["coefficients"]
    if not isinstance(coefficients, Mapping) or set(coefficients) != set(clean):
        raise ValueError(f"{feature_set}: coefficients must name exactly {sorted(clean)}, got {coefficients!r}")
    intercept = data["intercept"]
    if not isinstance(intercept, int | float):
        raise ValueError(f"{feature_set}: intercept must be a number, got {intercept!r}")
    return FaithfulnessModel(
        version=version or str(data.get("version", "")),
        coefficients={name: float(coefficients[name]) for name in clean},
        intercept=float(intercept),
        clean=clean,
    )


def parse_models(data: Mapping[str, object]) -> FaithfulnessModels:
    """Every model of the JSON document (`version`, `models` by feature set: `default` and `zh`, `fit_items`: data
    set -> list of item ids)."""
    models = data["models"]
    if not isinstance(models, Mapping) or set(models) != set(FEATURE_SETS):
        raise ValueError(f"models must name exactly the feature sets {sorted(FEATURE_SETS)}, got {models!r}")
    fit_items = data.get("fit_items")
    if not isinstance(fit_items, Mapping) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in fit_items.values()
    ):
        raise ValueError(f"fit_items must map each data set to a list of item ids, got {type(fit_items).__name__}")
    version = str(data["version"])
    parsed = {name: parse_model(models[name], version, name) for name in FEATURE_SETS}
    return FaithfulnessModels(version, parsed, {str(name): frozenset(ids) for name, ids in fit_items.items()})


@cache
def load_models(path: Path = MODEL_PATH) -> FaithfulnessModels:
    """The fitted models (read once per process)."""
    return parse_models(json.loads(path.read_text(encoding="utf-8")))
