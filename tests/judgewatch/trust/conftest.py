"""Deliberately bad judges for the trust tests, and the shipped rubrics and mini golden sets."""

from __future__ import annotations

import pytest
from typing_extensions import override

from judges.base import config_hash, plan, scored_verdict
from judges.pairwise import PairCall, PairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.regression.golden import GoldenSet, load_golden_set
from judgewatch.settings import REPO_ROOT

RUBRICS = REPO_ROOT / "rubrics"
DATASETS = REPO_ROOT / "datasets"


class ConstantJudge:
    """Gives every applicable criterion the same score, whatever the answer says."""

    kind = "fake"

    def __init__(self, score: int = 3) -> None:
        self.score = score

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name="constant", config_hash=config_hash(rubric, constant=self.score))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        to_score, not_applicable = plan(rubric, item)
        scores = dict.fromkeys(to_score, self.score)
        return scored_verdict(item, rubric, self.identity(rubric), scores, not_applicable, "always the same")

    async def aclose(self) -> None:
        return None


class MostlyUnscoredJudge:
    """The reference judge's verdict on one item in four; the rest come back unscored (parse_error)."""

    kind = "fake"

    def __init__(self) -> None:
        self.reference = ReferenceJudge()
        self.calls = 0

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name="mostly-unscored", config_hash=config_hash(rubric, fake="unscored"))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.calls += 1
        if self.calls % 4 == 0:
            verdict = self.reference.judge_sync(item, rubric)
            return verdict.model_copy(update={"judge": self.identity(rubric)})
        return Verdict.unscored(
            item.id, UnscoredReason.parse_error, judge=self.identity(rubric), rubric=rubric.identity, detail="1.1.1.1"
        )

    async def aclose(self) -> None:
        return None


class AlwaysAJudge(PairwiseJudge):
    """A pairwise judge that prefers whatever is shown first, like SmolLM2-135M did 100 times out of 100."""

    kind = "fake"

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name="always-a", config_hash=config_hash(rubric, fake="always-a"))

    @override
    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        return PairCall("A", "A comes first")

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="session")
def answer_quality() -> Rubric:
    return load_rubric("answer_quality", RUBRICS)


@pytest.fixture(scope="session")
def pairwise_rubric() -> Rubric:
    return load_rubric("pairwise_preference", RUBRICS)


@pytest.fixture(scope="session")
def halueval_mini() -> GoldenSet:
    return load_golden_set("halueval_qa_mini", datasets_dir=DATASETS)


@pytest.fixture(scope="session")
def halluqa_mini() -> GoldenSet:
    return load_golden_set("halluqa_mini", datasets_dir=DATASETS)


@pytest.fixture
def constant_judge() -> ConstantJudge:
    return ConstantJudge()


@pytest.fixture
def mostly_unscored_judge() -> MostlyUnscoredJudge:
    return MostlyUnscoredJudge()


@pytest.fixture
def always_a_judge() -> AlwaysAJudge:
    return AlwaysAJudge()
