"""The reference judge's faithfulness combiner: a logistic regression over its evidence features, read from JSON.

The coefficients live in `reference_model.json` beside this module, written by `scripts/fit_reference_judge.py`
from the development halves of the golden sets in the repository (HaluEval QA items 0-249, HalluQA
question_id <= 225) and measured on the other halves by `bench/reference_judge_quality.py`. The file's
version and a digest of its coefficients are part of the judge's config hash, so a refit is a new judge.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MODEL_PATH = Path(__file__).with_name("reference_model.json")
# The features a clean answer has (fully supported by one sentence, as a span, agreeing in stance): each
# feature's contribution to a verdict is measured from here, so the reason can name the one that cost most.
CLEAN = {
    "sentence_support": 1.0,
    "span_support": 1.0,
    "consistency": 1.0,
    "shared_negation": 0.0,
    "slot_entity": 1.0,
    "slot_quantity": 1.0,
}


@dataclass(frozen=True)
class FaithfulnessModel:
    """P(faithful) = sigmoid(intercept + sum of coefficient x feature)."""

    version: str
    coefficients: Mapping[str, float]
    intercept: float

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(self.coefficients)

    @property
    def digest(self) -> str:
        payload = json.dumps({"c": dict(self.coefficients), "b": self.intercept}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(c * values[name] for name, c in self.coefficients.items())
        return 1.0 / (1.0 + math.exp(-z))

    def costs(self, values: Mapping[str, float]) -> dict[str, float]:
        """Log-odds each feature takes away from a clean answer's (positive = it lowered the score)."""
        return {name: c * (CLEAN[name] - values[name]) for name, c in self.coefficients.items()}


def parse_model(data: Mapping[str, object]) -> FaithfulnessModel:
    """The model in a JSON document (`version`, `coefficients` by feature name, `intercept`); KeyError if incomplete."""
    coefficients = data["coefficients"]
    if not isinstance(coefficients, Mapping) or set(coefficients) != set(CLEAN):
        raise ValueError(f"coefficients must name exactly the features {sorted(CLEAN)}, got {coefficients!r}")
    intercept = data["intercept"]
    if not isinstance(intercept, int | float):
        raise ValueError(f"intercept must be a number, got {intercept!r}")
    return FaithfulnessModel(
        version=str(data["version"]),
        coefficients={name: float(coefficients[name]) for name in CLEAN},
        intercept=float(intercept),
    )


@cache
def load_model(path: Path = MODEL_PATH) -> FaithfulnessModel:
    """The fitted model (read once per process)."""
    return parse_model(json.loads(path.read_text(encoding="utf-8")))
