"""The anchor set: frozen, re-judged exactly once per new judge configuration, compared with the previous one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, select
from typing_extensions import override

from judges.base import Judge, scored_verdict
from judgewatch.calibration.anchors import compare_on_anchors, ensure_anchor_verdicts, freeze_anchor_set
from judgewatch.calibration.score_frame import load_scores
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.storage.calibration import AnchorSetFrozen, anchor_interaction_ids, create_anchor_set
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.testing.synthetic_labels import SyntheticSpec, write_synthetic

from .conftest import JUDGE_A


class ShiftedJudge(Judge):
    """A judge that scores each answer `shift` points off judge A's stored score; counts its calls."""

    kind = "fake"

    def __init__(self, name: str, a_scores: dict[str, dict[str, int]], shift: int, *, fail_first: int = 0) -> None:
        self.name, self.a_scores, self.shift, self.fail_first = name, a_scores, shift, fail_first
        self.calls: list[str] = []

    @override
    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name=self.name, config_hash=self.name.ljust(16, "0")[:16])

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.calls.append(item.answer)
        if len(self.calls) <= self.fail_first:
            return Verdict.unscored(
                item.id, UnscoredReason.timeout, judge=self.identity(rubric), rubric=rubric.identity, detail="slow"
            )
        base = self.a_scores[item.answer]
        scores = {c: min(5, max(1, s + self.shift)) for c, s in base.items()}
        return scored_verdict(item, rubric, self.identity(rubric), scores, [], "shifted")

    async def aclose(self) -> None:
        pass


@pytest.fixture
def judged_by_a(engine: Engine, rubric: Rubric) -> dict[str, dict[str, int]]:
    """Two tiers judged by judge A; returns A's scores by answer text."""
    spec = SyntheticSpec(judge=JUDGE_A, days=1, per_day=40, review_share=0.0, start=datetime(2026, 1, 1, tzinfo=UTC))
    write_synthetic(engine, rubric, spec)
    frame = load_scores(engine, rubric_name="answer_quality")
    with session_scope(engine) as session:
        rows = session.execute(select(Interaction.id, Interaction.answer)).all()  # type: ignore[call-overload]
    text = dict(rows)
    assert len(text) == 80
    out: dict[str, dict[str, int]] = {}
    for row in frame.itertuples():
        out.setdefault(text[row.interaction_id], {})[row.criterion] = int(row.judge)
    return out


async def test_anchor_set_is_rejudged_once_per_new_judge_config_and_compared_with_the_previous(
    engine: Engine, rubric: Rubric, judged_by_a: dict[str, dict[str, int]]
) -> None:
    anchor = freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=20)
    assert anchor.n_items == 20
    with session_scope(engine) as session:
        ids = anchor_interaction_ids(session=session, name="anchors")
    frame = load_scores(engine, rubric_name="answer_quality", interaction_ids=ids)
    assert frame.drop_duplicates("interaction_id")["tier"].value_counts().to_dict() == {"full": 10, "quantized": 10}

    harsher = ShiftedJudge("judge-b", judged_by_a, shift=-1)
    first = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=harsher, rubric=rubric)
    assert (first.judged_now, len(harsher.calls), first.n_items) == (20, 20, 20)
    again = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=harsher, rubric=rubric)
    assert (again.judged_now, len(harsher.calls), again.run_id) == (0, 20, None)

    comparison = compare_on_anchors(engine, anchor_set="anchors", categories=rubric.scale.levels, n_boot=200)
    assert comparison is not None
    assert (comparison.new_config_hash, comparison.old_config_hash) == (first.judge_config_hash, JUDGE_A.config_hash)
    assert [s.criterion for s in comparison.criteria] == ["completeness", "faithfulness", "relevance"]
    for shift in comparison.criteria:
        assert shift.n == 20
        assert -1.0 <= shift.mean_shift.estimate < -0.5  # one point lower, except where already at 1
        assert shift.mean_shift.high < 0
        assert shift.mean_new == pytest.approx(shift.mean_old + shift.mean_shift.estimate)
        assert 0.3 < shift.weighted_kappa.estimate < 1.0 and shift.exact.estimate < 0.5

    same = ShiftedJudge("judge-c", judged_by_a, shift=0)  # yet another configuration: judged once too
    third = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=same, rubric=rubric)
    assert third.judged_now == 20
    latest = compare_on_anchors(engine, anchor_set="anchors", categories=rubric.scale.levels, n_boot=200)
    assert latest is not None and latest.old_config_hash == first.judge_config_hash
    assert all(s.mean_shift.estimate > 0.5 for s in latest.criteria)
    versus_a = compare_on_anchors(
        engine, anchor_set="anchors", new_config_hash=third.judge_config_hash, old_config_hash=JUDGE_A.config_hash
    )
    assert versus_a is not None and all(s.weighted_kappa.estimate == 1.0 for s in versus_a.criteria)


async def test_only_transient_failures_on_the_anchors_are_judged_again(
    engine: Engine, rubric: Rubric, judged_by_a: dict[str, dict[str, int]]
) -> None:
    freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=10)
    flaky = ShiftedJudge("judge-d", judged_by_a, shift=0, fail_first=3)
    first = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=flaky, rubric=rubric)
    assert first.judged_now == 10
    second = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=flaky, rubric=rubric)
    assert second.judged_now == 3 and len(flaky.calls) == 13
    third = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=flaky, rubric=rubric)
    assert third.judged_now == 0


@pytest.mark.usefixtures("judged_by_a")
def test_an_anchor_set_is_frozen(engine: Engine) -> None:
    anchor = freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=6)
    with session_scope(engine, write=True) as session:
        ids = anchor_interaction_ids(session=session, name="anchors")
        assert create_anchor_set(session=session, name="anchors", rubric_name="answer_quality",
                                 interaction_ids=list(reversed(ids))).items_hash == anchor.items_hash  # fmt: skip
        with pytest.raises(AnchorSetFrozen, match="frozen"):
            create_anchor_set(session=session, name="anchors", rubric_name="answer_quality", interaction_ids=ids[:3])
    again = freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=6)
    assert again.items_hash == anchor.items_hash
