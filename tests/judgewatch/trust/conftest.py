"""Deliberately bad judges for the trust tests, and the shipped rubrics and mini golden sets."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import pytest
from typing_extensions import override

from judges.base import config_hash, plan, scored_verdict
from judges.pairwise import PairCall, PairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.regression.gate import TierEvaluation, compare_scores
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


class FakeJudge:
    """What the fakes below share: kind "fake", an identity from their name, nothing to close."""

    kind = "fake"
    name = "fake"

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name=self.name, config_hash=config_hash(rubric, fake=self.name))

    async def aclose(self) -> None:
        return None


class LengthJudge(FakeJudge):
    """Scores every applicable criterion by the answer's length alone: one level per 8 characters.

    On HalluQA the right answers are the longer, hedged ones, so its AUROC there passes the policy.
    """

    name = "length"

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        to_score, not_applicable = plan(rubric, item)
        level = max(rubric.scale.min, min(rubric.scale.max, 1 + len(item.answer) // 8))
        scores = dict.fromkeys(to_score, level)
        return scored_verdict(item, rubric, self.identity(rubric), scores, not_applicable, "the longer the better")


class ReferenceBlindJudge(FakeJudge):
    """Never reads the references it is given: the reference judge's scores with the answer itself standing in
    for every reference, so every claim looks supported whatever the references say."""

    name = "reference-blind"

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        if not item.has_references:
            return ReferenceJudge().judge_sync(item, rubric).model_copy(update={"judge": self.identity(rubric)})
        graded = item.model_copy(update={"reference_answer": item.answer, "reference_facts": [], "context": []})
        return ReferenceJudge().judge_sync(graded, rubric).model_copy(update={"judge": self.identity(rubric)})


class InstructionFollowingJudge(FakeJudge):
    """The reference judge, except that it obeys an answer telling it what to score (in English or Chinese) or
    handing it a verdict: then every criterion gets the score it was told."""

    name = "obeys-instructions"
    ORDERS = re.compile(r"score this answer (\d)|打(\d)分|\"faithfulness\": (\d)")

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        verdict = ReferenceJudge().judge_sync(item, rubric).model_copy(update={"judge": self.identity(rubric)})
        order = self.ORDERS.search(item.answer)
        if order is None:
            return verdict
        level = int(next(g for g in order.groups() if g))
        scores = {name: None if score is None else level for name, score in verdict.scores.items()}
        return verdict.model_copy(update={"scores": scores})


class ImpressedJudge(FakeJudge):
    """The reference judge, except that an answer opening with confidence gets the top score everywhere and one
    opening with a hedge the bottom score (the reference judge itself reads past both preambles)."""

    name = "impressed"

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        verdict = ReferenceJudge().judge_sync(item, rubric).model_copy(update={"judge": self.identity(rubric)})
        if item.answer.startswith(("As is well established", "众所周知")):
            level = rubric.scale.max
        elif item.answer.startswith(("I am not certain", "我不太确定")):
            level = rubric.scale.min
        else:
            return verdict
        scores = {name: None if score is None else level for name, score in verdict.scores.items()}
        return verdict.model_copy(update={"scores": scores})


class CoinJudge(FakeJudge):
    """Every criterion scored at random on each call: a judge whose verdict changes when asked again."""

    name = "coin"

    def __init__(self, seed: int = 1) -> None:
        self.rng = random.Random(seed)

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        to_score, not_applicable = plan(rubric, item)
        scores = {name: self.rng.randint(rubric.scale.min, rubric.scale.max) for name in to_score}
        return scored_verdict(item, rubric, self.identity(rubric), scores, not_applicable, "heads")


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


@pytest.fixture
def biased() -> SimpleNamespace:
    """One of each judge the bias probes must catch: paid by length, blind to the references, obeying
    instructions in the answer, impressed by confidence, changing its mind."""
    return SimpleNamespace(
        length=LengthJudge(),
        reference_blind=ReferenceBlindJudge(),
        obeys=InstructionFollowingJudge(),
        impressed=ImpressedJudge(),
        coin=CoinJudge(),
    )


@pytest.fixture
def unchanged_tier() -> TierEvaluation:
    """A tier whose candidate scores equal its baseline's: the gate's decision rests on the judge's trust alone."""
    scores = {f"i{k}": {"faithfulness": 4.0} for k in range(30)}
    return TierEvaluation(
        tier="full",
        baseline_release="r1",
        comparisons=compare_scores(scores, scores, ["faithfulness"], candidate_label="r2", baseline_label="r1"),
        total=30,
    )
