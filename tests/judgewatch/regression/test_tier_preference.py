"""Tier gap on the same items: the pair judge asks both orders, a disagreement is a tie, verdicts are -1/0/+1."""

from __future__ import annotations

from sqlalchemy import Engine
from typing_extensions import override

from judges.base import config_hash
from judges.pairwise import PairCall, PairwiseJudge, ReferencePairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason
from judgewatch.judging.run import JudgingRun
from judgewatch.regression.tier_preference import (
    TierPairJudge,
    pair_interactions,
    pair_source,
    pairwise_counterpart,
    read_preferences,
)
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import regression_source
from judgewatch.storage.runs import RunKind

FACTS = ["Paris is the capital of France."]


class Scripted(PairwiseJudge):
    """A pairwise judge answering from a script keyed by (answer A, answer B)."""

    kind = "fake"

    def __init__(self, script: dict[tuple[str, str], PairCall]) -> None:
        self.script = script

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind="fake", name="scripted", config_hash=config_hash(rubric, fake="scripted"))

    @override
    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        return self.script[(answer_a, answer_b)]

    async def aclose(self) -> None:
        return None


def item(answer: str) -> JudgeItem:
    return JudgeItem(id="q1", question="Capital of France?", answer=answer, reference_facts=FACTS, language="en")


async def test_agreeing_orders_give_the_winner_and_disagreeing_orders_a_tie() -> None:
    rubric = load_rubric("pairwise_preference")
    a, b = PairCall("A", "first"), PairCall("B", "second")
    better = TierPairJudge(Scripted({("x", "y"): a, ("y", "x"): b}), {"q1": "y"})
    assert (await better.judge(item("x"), rubric)).scores == {"faithfulness": 1}
    worse = TierPairJudge(Scripted({("x", "y"): b, ("y", "x"): a}), {"q1": "y"})
    assert (await worse.judge(item("x"), rubric)).scores == {"faithfulness": -1}
    position = TierPairJudge(Scripted({("x", "y"): a, ("y", "x"): a}), {"q1": "y"})  # always "A"
    tied = await position.judge(item("x"), rubric)
    assert tied.scores == {"faithfulness": 0} and "orders disagree" in tied.reason


async def test_an_unscored_order_leaves_the_pair_unscored_with_its_reason() -> None:
    rubric = load_rubric("pairwise_preference")
    down = PairCall(None, unscored_reason=UnscoredReason.timeout, detail="slow")
    judge = TierPairJudge(Scripted({("x", "y"): PairCall("A"), ("y", "x"): down}), {"q1": "y"})
    verdict = await judge.judge(item("x"), rubric)
    assert verdict.status.value == "unscored" and verdict.unscored_reason == UnscoredReason.timeout
    missing = await judge.judge(item("x").model_copy(update={"id": "q2"}), rubric)
    assert missing.unscored_reason == UnscoredReason.judge_error and "q2" in (missing.detail or "")


def test_the_reference_judge_has_the_reference_pairwise_counterpart() -> None:
    assert isinstance(pairwise_counterpart(ReferenceJudge()), ReferencePairwiseJudge)


def _answers(release: str, tier: str, answers: dict[str, str]) -> list[Interaction]:
    rows = []
    for key, answer in answers.items():
        row = Interaction.from_item(
            JudgeItem(id=key, question=f"Capital? ({key})", answer=answer, reference_facts=FACTS, language="en"),
            source=regression_source(release, tier, "set"),
        )
        row.tier, row.release = tier, release
        rows.append(row)
    return rows


async def test_stored_pair_verdicts_count_worse_tied_better_with_a_sign_test(engine: Engine) -> None:
    good, bad = "Paris is the capital of France.", "Lyon, a city in the south."
    quantized = _answers("r1", "quantized", {f"q{i}": bad if i < 8 else good for i in range(10)})
    full = _answers("r1", "full", {f"q{i}": good for i in range(10)})
    pairs = pair_interactions("r1", "set", quantized, full)
    assert {p.source for p in pairs} == {pair_source("r1", "quantized", "full", "set")} and len(pairs) == 10
    assert all(p.tier is None and p.meta["second_answer"] == good for p in pairs)  # never a tier's own estimate
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=[*quantized, *full, *pairs])
    rubric = load_rubric("pairwise_preference")
    judge = TierPairJudge(ReferencePairwiseJudge(), {p.source_id: p.meta["second_answer"] for p in pairs})
    with JudgingRun(engine, kind=RunKind.regression, name="pairs", identity="pairs", rubric=rubric, judge=judge) as run:
        await run.judge_stored([(p.id, p.to_item()) for p in pairs])
    with session_scope(engine) as session:
        (row,) = read_preferences(
            session=session,
            release="r1",
            candidate="quantized",
            reference="full",
            datasets=["set"],
            rubric=rubric,
            judge_config_hash=judge.identity(rubric).config_hash,
        )
    assert (row.pairs, row.unscored, row.shares.counts) == (10, 0, (8, 2, 0))
    assert row.shares.worse.low < 0.8 < row.shares.worse.high
    assert row.shares.p_value == 2 / 2**8  # 8 worse, 0 better: exact two-sided sign test
