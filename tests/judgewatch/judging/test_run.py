"""One judging run: its record, skipping what is already judged, the counts, success and failure."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import Engine, func, select

from judges.base import config_hash, plan, scored_verdict
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.judging.run import JudgingRun
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.runs import EvalRun, RunKind, get_run
from judgewatch.storage.verdicts import get_verdicts, verdict_id

SOURCE = "test:run"


class CountingJudge:
    """Scores every item 3, except the ids in `timeout_ids` (unscored: timeout); counts its calls per item."""

    kind = "fake"

    def __init__(self, timeout_ids: frozenset[str] = frozenset()) -> None:
        self.timeout_ids = timeout_ids
        self.calls: Counter[str] = Counter()

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind="fake", name="counting", config_hash=config_hash(rubric, counting=1))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.calls[item.id] += 1
        if item.id in self.timeout_ids:
            return Verdict.unscored(
                item.id, UnscoredReason.timeout, judge=self.identity(rubric), rubric=rubric.identity
            )
        to_score, not_applicable = plan(rubric, item)
        return scored_verdict(item, rubric, self.identity(rubric), dict.fromkeys(to_score, 3), not_applicable, "ok")

    async def aclose(self) -> None:
        return None


def stored_items(engine: Engine, ids: list[str]) -> list[tuple[str, JudgeItem]]:
    """Store interactions for `ids`; the (interaction id, item) pairs a run judges."""
    items = [JudgeItem(id=i, question=f"q {i}?", answer=f"a {i}.", reference_facts=["fact"]) for i in ids]
    rows = [Interaction.from_item(item, source=SOURCE) for item in items]
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=rows)
    return [(row.id, row.to_item()) for row in rows]


def a_run(
    engine: Engine | None,
    rubric: Rubric,
    judge: CountingJudge,
    *,
    identity: str = "r1",
    lazy: bool = False,
    retry_reasons: frozenset[str] = frozenset(),
) -> JudgingRun:
    return JudgingRun(
        engine,
        kind=RunKind.regression,
        name="r1/full/set",
        identity=identity,
        rubric=rubric,
        judge=judge,  # type: ignore[arg-type]  # a Judge by shape (kind, identity, judge, aclose)
        lazy=lazy,
        retry_reasons=retry_reasons,
    )


def run_count(engine: Engine) -> int:
    with session_scope(engine) as session:
        return int(session.execute(select(func.count()).select_from(table(EvalRun))).scalar_one())


async def test_a_run_is_recorded_running_then_completed_with_its_counts(engine: Engine, rubric: Rubric) -> None:
    items = stored_items(engine, ["a", "b", "c"])
    with a_run(engine, rubric, CountingJudge()) as run:
        assert run.run_id is not None
        with session_scope(engine) as session:
            record = get_run(session=session, run_id=run.run_id)
            assert record is not None and record.status == "running" and record.heartbeat_at is not None
        batch = await run.judge_stored(items)
        run.extra["routed_to_review"] = 1
    with session_scope(engine) as session:
        record = get_run(session=session, run_id=run.run_id)
    assert record is not None and record.status == "completed" and record.finished_at is not None
    assert record.counts["judged_now"] == 3 and record.counts["already_judged"] == 0 and record.counts["reused"] == 0
    assert record.counts["by_status"] == {"scored": 3} and record.counts["routed_to_review"] == 1
    assert record.counts["stored"] == 3 and record.counts["items"] == 3
    assert batch.judged_now == 3 and set(batch.verdict_ids) == {key for key, _ in items}


async def test_a_run_left_by_an_exception_is_recorded_failed_with_the_counts_so_far(
    engine: Engine, rubric: Rubric
) -> None:
    items = stored_items(engine, ["a", "b"])
    with pytest.raises(RuntimeError, match="flow broke"), a_run(engine, rubric, CountingJudge()) as run:
        await run.judge_stored(items)
        raise RuntimeError("flow broke")
    with session_scope(engine) as session:
        record = get_run(session=session, run_id=run.run_id or "")
    assert record is not None and record.status == "failed" and record.counts["judged_now"] == 2


async def test_items_already_judged_under_this_rubric_and_judge_are_skipped(engine: Engine, rubric: Rubric) -> None:
    items = stored_items(engine, ["a", "b", "c", "d"])
    judge = CountingJudge()
    with a_run(engine, rubric, judge) as first:
        await first.judge_stored(items[:2])
    with a_run(engine, rubric, judge) as again:
        batch = await again.judge_stored(items)
    assert judge.calls == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert batch.already_judged == 2 and batch.judged_now == 2 and again.already_judged == 2
    config = judge.identity(rubric).config_hash
    assert batch.verdict_ids == {key: verdict_id(key, rubric.content_hash, config) for key, _ in items}
    assert again.run_id == first.run_id  # the same input, rubric and judge: the same run, restarted
    with session_scope(engine) as session:
        assert len(get_verdicts(session=session)) == 4


async def test_forced_items_are_judged_again_even_with_a_verdict(engine: Engine, rubric: Rubric) -> None:
    items = stored_items(engine, ["a", "b"])
    judge = CountingJudge()
    with a_run(engine, rubric, judge) as run:
        await run.judge_stored(items)
        batch = await run.judge_stored(items, force={items[0][0]})
    assert judge.calls == {"a": 2, "b": 1} and batch.judged_now == 1 and batch.already_judged == 1


async def test_verdicts_unscored_for_a_retry_reason_are_judged_again(engine: Engine, rubric: Rubric) -> None:
    items = stored_items(engine, ["a", "b"])
    flaky = CountingJudge(timeout_ids=frozenset({"b"}))
    with a_run(engine, rubric, flaky, retry_reasons=frozenset({"timeout"})) as run:
        await run.judge_stored(items)
    assert run.summary.by_unscored_reason == {"timeout": 1}
    with a_run(engine, rubric, flaky, retry_reasons=frozenset({"timeout"})) as again:
        batch = await again.judge_stored(items)
    assert flaky.calls == {"a": 1, "b": 2} and batch.judged_now == 1
    with a_run(engine, rubric, flaky) as strict:  # without retry reasons an unscored verdict counts as judged
        assert (await strict.judge_stored(items)).judged_now == 0


async def test_a_lazy_run_with_nothing_to_judge_leaves_no_record(engine: Engine, rubric: Rubric) -> None:
    items = stored_items(engine, ["a"])
    with a_run(engine, rubric, CountingJudge()) as run:
        await run.judge_stored(items)
    assert run_count(engine) == 1
    with a_run(engine, rubric, CountingJudge(), lazy=True) as lazy:
        assert lazy.already_judged_ids([items[0][0]]) and lazy.run_id is None
    with a_run(engine, rubric, CountingJudge(), lazy=True, identity="other") as lazy:
        pass
    assert lazy.run_id is None and run_count(engine) == 1


async def test_new_items_are_stored_as_interactions_of_their_source_keyed_by_interaction_id(
    engine: Engine, rubric: Rubric
) -> None:
    items = [JudgeItem(id=f"n{i}", question="q?", answer="a.", reference_facts=["f"]) for i in range(3)]
    delivered: list[str] = []
    with a_run(engine, rubric, CountingJudge()) as run:
        result = await run.judge_new(items, source="file:/x.jsonl", on_verdict=lambda v: delivered.append(v.item_id))
    assert delivered == ["n0", "n1", "n2"] and [v.item_id for v in result.verdicts] == delivered
    with session_scope(engine) as session:
        stored = {v.interaction_id for v in get_verdicts(session=session, run_id=run.run_id)}
        assert session.get(Interaction, interaction_id("file:/x.jsonl", "n1")) is not None
    assert stored == {interaction_id("file:/x.jsonl", f"n{i}") for i in range(3)}
    assert run.judged_now == 3 and run.counts()["stored"] == 3


async def test_without_a_store_a_run_only_judges_and_counts(rubric: Rubric) -> None:
    judge = CountingJudge()
    items = [JudgeItem(id="x", question="q?", answer="a.")]
    with a_run(None, rubric, judge) as run:
        await run.judge_new(items, source="golden:x")
        batch = await run.judge_stored([("iid-x", items[0])])
    assert run.run_id is None and judge.calls == {"x": 2} and batch.already_judged == 0
    assert run.summary.items == 2 and run.counts()["judged_now"] == 2
