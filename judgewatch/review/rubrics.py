"""The rubric a review item is labeled against: the rubric file by name, or a review-only built-in rubric
(`pandalm_preference`: PandaLM-style A/B pairs on one three-point scale, 1 = response 1 better, 2 = tie, 3 =
response 2 better)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from judgewatch.contract.rubric import Criterion, Rubric, RubricError, Scale, load_rubric

PANDALM_PREFERENCE = "pandalm_preference"


@lru_cache(maxsize=1)
def pandalm_preference_rubric() -> Rubric:
    """Review-only rubric (no judge prompt): which of two responses follows the instruction better."""
    return Rubric(
        name=PANDALM_PREFERENCE,
        version="1.0.0",
        description="Compare two responses to one instruction; the answer shows both.",
        kind="pairwise",
        scale=Scale(min=1, max=3),
        criteria=[
            Criterion(
                name="preference",
                description="Which response follows the instruction better?",
                anchors={
                    1: "Response 1 is better.",
                    2: "Tie: both are of similar quality.",
                    3: "Response 2 is better.",
                },
            )
        ],
        templates={"en": "(review only: this rubric has no judge prompt)"},
    )


_BUILTIN = {PANDALM_PREFERENCE: pandalm_preference_rubric}


class RubricResolver:
    """Loads each rubric once per process: the file in `rubrics_dir` first, then the built-ins."""

    def __init__(self, rubrics_dir: Path | None = None) -> None:
        self._dir = rubrics_dir
        self._cache: dict[str, Rubric] = {}

    def get(self, name: str) -> Rubric:
        if name not in self._cache:
            try:
                self._cache[name] = load_rubric(name, self._dir)
            except RubricError:
                if name not in _BUILTIN:
                    raise
                self._cache[name] = _BUILTIN[name]()
        return self._cache[name]
