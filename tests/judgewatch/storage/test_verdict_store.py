"""The verdict store: idempotent upserts, faithful round trips, quarantine, runs, tz-aware timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import Engine, func, select

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import (
    JudgeIdentity,
    RubricIdentity,
    TokenUsage,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from judgewatch.storage import verdict_store as store
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, interaction_id
from judgewatch.storage.migrations import table
from judgewatch.storage.quarantine import QuarantineRecord
from judgewatch.storage.runs import RunKind, RunStatus
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord

JUDGE = JudgeIdentity(kind="fake", name="fake-judge", endpoint="http://x/v1", config_hash="j" * 16)
RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)
SOURCE = "test:items"


def scored(item_id: str, relevance: int = 4, judge: JudgeIdentity = JUDGE) -> Verdict:
    return Verdict(
        item_id=item_id,
        status=VerdictStatus.scored,
        scores={"relevance": relevance, "faithfulness": 3, "completeness": None},
        not_applicable=["completeness"],
        overall=(relevance + 3) / 2,
        reason="fine",
        judge=judge,
        rubric=RUBRIC,
        latency_ms=12.5,
        tokens=TokenUsage(prompt=100, completion=20, cached=64),
        attempts=2,
        fallback_from=["openai:http://down/v1"],
    )


def unscored(item_id: str) -> Verdict:
    return Verdict.unscored(item_id, UnscoredReason.timeout, judge=JUDGE, rubric=RUBRIC, detail="no reply after 60.0 s")


def store_items(engine: Engine, ids: list[str]) -> None:
    items = [JudgeItem(id=i, question=f"q{i}", answer=f"a{i}", reference_facts=["f"]) for i in ids]
    with session_scope(engine) as session:
        store.upsert_interactions(
            session=session, interactions=[Interaction.from_item(i, source=SOURCE) for i in items]
        )


def count(engine: Engine, model: type) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(table(model))).scalar_one()


def test_upserting_the_same_verdicts_twice_stores_no_duplicates(engine: Engine) -> None:
    ids = [f"item-{n}" for n in range(50)]
    store_items(engine, ids)
    pairs = [(interaction_id(SOURCE, i), scored(i)) for i in ids]
    for _ in range(2):
        with session_scope(engine) as session:
            assert store.upsert_verdicts(session=session, run_id=None, verdicts=pairs) == 50
    assert count(engine, VerdictRecord) == 50
    assert count(engine, CriterionScore) == 150


def test_upsert_replaces_a_changed_status_and_its_criterion_scores(engine: Engine) -> None:
    store_items(engine, ["a"])
    iid = interaction_id(SOURCE, "a")
    with session_scope(engine) as session:
        store.upsert_verdicts(session=session, run_id=None, verdicts=[(iid, scored("a"))])
    with session_scope(engine) as session:
        first = store.get_verdicts(session=session)[0]
        first_created = first.created_at
        store.upsert_verdicts(session=session, run_id=None, verdicts=[(iid, unscored("a"))])
    with session_scope(engine) as session:
        records = store.get_verdicts(session=session)
        assert len(records) == 1
        assert records[0].status == "unscored" and records[0].unscored_reason == "timeout"
        assert records[0].created_at == first_created  # first stored, kept
        assert records[0].updated_at >= first_created
        assert store.get_criterion_scores(session=session, verdict_ids=[records[0].id]) == []
        assert store.count_by_status(session=session) == {"unscored": 1}


def test_a_different_judge_configuration_is_a_new_verdict_not_an_overwrite(engine: Engine) -> None:
    store_items(engine, ["a"])
    iid = interaction_id(SOURCE, "a")
    other = JUDGE.model_copy(update={"config_hash": "k" * 16})
    with session_scope(engine) as session:
        store.upsert_verdicts(
            session=session, run_id=None, verdicts=[(iid, scored("a")), (iid, scored("a", judge=other))]
        )
    assert count(engine, VerdictRecord) == 2


def test_unscored_verdicts_keep_their_reason_and_detail(engine: Engine) -> None:
    store_items(engine, ["a", "b"])
    verdicts = [
        unscored("a"),
        Verdict.unscored("b", UnscoredReason.parse_error, judge=JUDGE, rubric=RUBRIC, detail="x" * 9000),
    ]
    with session_scope(engine) as session:
        store.upsert_verdicts(
            session=session, run_id=None, verdicts=[(interaction_id(SOURCE, v.item_id), v) for v in verdicts]
        )
    with session_scope(engine) as session:
        back = {r.item_id: r.to_verdict() for r in store.get_verdicts(session=session)}
        assert store.count_by_unscored_reason(session=session) == {"timeout": 1, "parse_error": 1}
    assert back["a"].unscored_reason is UnscoredReason.timeout
    assert back["a"].detail == "no reply after 60.0 s"
    assert back["a"].scores == {} and back["a"].overall is None
    assert back["b"].detail is not None and 100 < len(back["b"].detail) <= 4000  # bounded, not dropped


def test_a_stored_verdict_reads_back_as_the_same_verdict(engine: Engine) -> None:
    store_items(engine, ["a"])
    original = scored("a")
    with session_scope(engine) as session:
        store.upsert_verdicts(session=session, run_id=None, verdicts=[(interaction_id(SOURCE, "a"), original)])
    with session_scope(engine) as session:
        assert store.get_verdicts(session=session)[0].to_verdict() == original


def test_per_criterion_statistics_are_a_plain_group_by(engine: Engine) -> None:
    ids = ["a", "b", "c"]
    store_items(engine, ids)
    pairs = [(interaction_id(SOURCE, i), scored(i, relevance=r)) for i, r in zip(ids, [1, 3, 5], strict=True)]
    with session_scope(engine) as session:
        store.upsert_verdicts(session=session, run_id=None, verdicts=pairs)
        c = table(CriterionScore).c
        rows = session.execute(
            select(c.criterion, func.avg(c.score), func.count(c.score)).group_by(c.criterion).order_by(c.criterion)
        ).all()
    means = {name: (float(mean) if mean is not None else None, n) for name, mean, n in rows}
    assert means == {"completeness": (None, 0), "faithfulness": (3.0, 3), "relevance": (3.0, 3)}


def test_quarantined_rows_round_trip_with_a_bounded_excerpt(engine: Engine) -> None:
    records = [
        QuarantineRecord(
            source="file:/x/items.jsonl",
            position="items.jsonl:7",
            line=7,
            reason="field 'reference_facts': expected a list of strings",
            raw='{"id": 7}',
        ),
        QuarantineRecord(
            source="file:/x/items.jsonl", position="items.jsonl:9", line=9, reason="not valid JSON", raw="界" * 5000
        ),
    ]
    for _ in range(2):
        with session_scope(engine) as session:
            store.quarantine_rows(session=session, records=records)
    with session_scope(engine) as session:
        back = store.get_quarantined(session=session, source="file:/x/items.jsonl")
    assert [(r.line, r.reason) for r in back] == [(7, records[0].reason), (9, "not valid JSON")]
    assert back[0].raw == '{"id": 7}'
    assert len(back[1].raw.encode()) <= 2048
    assert back[0].message == "line 7: field 'reference_facts': expected a list of strings"


def test_timestamps_are_timezone_aware_utc_after_reading_back(engine: Engine) -> None:
    happened = datetime(2026, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=8)))
    item = JudgeItem(id="a", question="q", answer="a")
    interaction = Interaction.from_item(item, source=SOURCE)
    interaction.created_at = happened
    with session_scope(engine) as session:
        store.upsert_interactions(session=session, interactions=[interaction])
        store.upsert_verdicts(session=session, run_id=None, verdicts=[(interaction.id, scored("a"))])
    with session_scope(engine) as session:
        back = session.get(Interaction, interaction.id)
        verdict = store.get_verdicts(session=session)[0]
    assert back is not None
    assert back.created_at == happened and back.created_at.tzinfo is not None
    assert back.created_at.utcoffset() == timedelta(0)
    assert verdict.created_at.tzinfo is not None
    assert abs(verdict.created_at - datetime.now(UTC)) < timedelta(minutes=5)


def test_judging_an_item_again_keeps_the_interactions_serving_metadata(engine: Engine) -> None:
    item = JudgeItem(id="a", question="q", answer="old answer")
    interaction = Interaction.from_item(item, source=SOURCE)
    interaction.tier, interaction.release, interaction.meta = "quantized", "r1", {"k": 1}
    with session_scope(engine) as session:
        store.upsert_interactions(session=session, interactions=[interaction])
    newer = item.model_copy(update={"answer": "new answer"})
    with session_scope(engine) as session:
        store.store_judged(session=session, source=SOURCE, run_id=None, judged=[(newer, scored("a"))])
    with session_scope(engine) as session:
        back = session.get(Interaction, interaction.id)
        assert back is not None
        assert (back.answer, back.tier, back.release, back.meta) == ("new answer", "quantized", "r1", {"k": 1})
        assert store.get_verdicts(session=session)[0].interaction_id == interaction.id


def test_starting_the_same_run_twice_is_one_run_and_finishing_records_counts(engine: Engine) -> None:
    def start() -> str:
        with session_scope(engine) as session:
            run = store.start_run(
                session=session,
                kind=RunKind.file,
                name="items.jsonl",
                identity="sha:abc",
                rubric=RUBRIC,
                judge_config_hash=JUDGE.config_hash,
                params={"concurrency": 8},
            )
            return run.id

    first = start()
    with session_scope(engine) as session:
        store.finish_run(session=session, run_id=first, status=RunStatus.completed, counts={"scored": 3})
        run = store.get_run(session=session, run_id=first)
        assert run is not None and run.status == "completed" and run.counts == {"scored": 3}
        assert run.finished_at is not None and run.finished_at.tzinfo is not None
    assert start() == first
    with session_scope(engine) as session:
        run = store.get_run(session=session, run_id=first)
        assert run is not None and run.status == "running" and run.finished_at is None
        assert run.params == {"concurrency": 8}
