"""Interactions and verdicts in the store: idempotent upserts, faithful round trips, "already judged?", tz-aware
timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import Engine, func, select

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import (
    JudgeIdentity,
    PromptTrim,
    RubricIdentity,
    ScoreReading,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.verdicts import (
    CriterionScore,
    VerdictRecord,
    count_by_status,
    count_by_unscored_reason,
    get_criterion_scores,
    get_verdicts,
    judged_interactions,
    store_judged,
    upsert_verdicts,
)

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
        tokens={"prompt": 100, "completion": 20, "cached": 64},
        attempts=2,
        fallback_from=["openai:http://down/v1"],
    )


def unscored(item_id: str) -> Verdict:
    return Verdict.unscored(item_id, UnscoredReason.timeout, judge=JUDGE, rubric=RUBRIC, detail="no reply after 60.0 s")


def store_items(engine: Engine, ids: list[str]) -> None:
    items = [JudgeItem(id=i, question=f"q{i}", answer=f"a{i}", reference_facts=["f"]) for i in ids]
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=[Interaction.from_item(i, source=SOURCE) for i in items])


def count(engine: Engine, model: type) -> int:
    with session_scope(engine) as session:
        return session.execute(select(func.count()).select_from(table(model))).scalar_one()


def test_upserting_the_same_verdicts_twice_stores_no_duplicates(engine: Engine) -> None:
    ids = [f"item-{n}" for n in range(50)]
    store_items(engine, ids)
    pairs = [(interaction_id(SOURCE, i), scored(i)) for i in ids]
    for _ in range(2):
        with session_scope(engine) as session:
            assert upsert_verdicts(session=session, run_id=None, verdicts=pairs) == 50
    assert count(engine, VerdictRecord) == 50
    assert count(engine, CriterionScore) == 150


def test_upsert_replaces_a_changed_status_and_its_criterion_scores(engine: Engine) -> None:
    store_items(engine, ["a"])
    iid = interaction_id(SOURCE, "a")
    with session_scope(engine) as session:
        upsert_verdicts(session=session, run_id=None, verdicts=[(iid, scored("a"))])
    with session_scope(engine) as session:
        first = get_verdicts(session=session)[0]
        first_created = first.created_at
        upsert_verdicts(session=session, run_id=None, verdicts=[(iid, unscored("a"))])
    with session_scope(engine) as session:
        records = get_verdicts(session=session)
        assert len(records) == 1
        assert records[0].status == "unscored" and records[0].unscored_reason == "timeout"
        assert records[0].created_at == first_created  # first stored, kept
        assert records[0].updated_at >= first_created
        assert get_criterion_scores(session=session, verdict_ids=[records[0].id]) == []
        assert count_by_status(session=session) == {"unscored": 1}


def test_a_different_judge_configuration_is_a_new_verdict_not_an_overwrite(engine: Engine) -> None:
    store_items(engine, ["a"])
    iid = interaction_id(SOURCE, "a")
    other = JUDGE.model_copy(update={"config_hash": "k" * 16})
    with session_scope(engine) as session:
        upsert_verdicts(session=session, run_id=None, verdicts=[(iid, scored("a")), (iid, scored("a", judge=other))])
    assert count(engine, VerdictRecord) == 2


def test_unscored_verdicts_keep_their_reason_and_detail(engine: Engine) -> None:
    store_items(engine, ["a", "b"])
    verdicts = [
        unscored("a"),
        Verdict.unscored("b", UnscoredReason.parse_error, judge=JUDGE, rubric=RUBRIC, detail="x" * 9000),
    ]
    with session_scope(engine) as session:
        upsert_verdicts(
            session=session, run_id=None, verdicts=[(interaction_id(SOURCE, v.item_id), v) for v in verdicts]
        )
    with session_scope(engine) as session:
        back = {r.item_id: r.to_verdict() for r in get_verdicts(session=session)}
        assert count_by_unscored_reason(session=session) == {"timeout": 1, "parse_error": 1}
    assert back["a"].unscored_reason is UnscoredReason.timeout
    assert back["a"].detail == "no reply after 60.0 s"
    assert back["a"].scores == {} and back["a"].overall is None
    assert back["b"].detail is not None and 100 < len(back["b"].detail) <= 4000  # bounded, not dropped


def test_a_stored_verdict_reads_back_as_the_same_verdict(engine: Engine) -> None:
    store_items(engine, ["a"])
    original = scored("a")
    with session_scope(engine) as session:
        upsert_verdicts(session=session, run_id=None, verdicts=[(interaction_id(SOURCE, "a"), original)])
    with session_scope(engine) as session:
        assert get_verdicts(session=session)[0].to_verdict() == original


def test_what_was_trimmed_to_fit_the_window_reads_back_with_the_verdict(engine: Engine) -> None:
    store_items(engine, ["a", "b"])
    trim = PromptTrim(
        passages_given=30,
        passages_kept=6,
        passages_partial=1,
        prompt_tokens_full=7102,
        prompt_tokens_sent=1873,
        window=2048,
        reply_tokens=160,
    )
    trimmed = scored("a").model_copy(update={"trimmed": trim})
    with session_scope(engine) as session:
        pairs = [(interaction_id(SOURCE, "a"), trimmed), (interaction_id(SOURCE, "b"), scored("b"))]
        upsert_verdicts(session=session, run_id=None, verdicts=pairs)
    with session_scope(engine) as session:
        back = {r.item_id: r.to_verdict() for r in get_verdicts(session=session)}
    assert back["a"] == trimmed and back["a"].trimmed == trim
    assert back["b"].trimmed is None


def test_per_criterion_statistics_are_a_plain_group_by(engine: Engine) -> None:
    ids = ["a", "b", "c"]
    store_items(engine, ids)
    pairs = [(interaction_id(SOURCE, i), scored(i, relevance=r)) for i, r in zip(ids, [1, 3, 5], strict=True)]
    with session_scope(engine) as session:
        upsert_verdicts(session=session, run_id=None, verdicts=pairs)
        c = table(CriterionScore).c
        rows = session.execute(
            select(c.criterion, func.avg(c.score), func.count(c.score)).group_by(c.criterion).order_by(c.criterion)
        ).all()
    means = {name: (float(mean) if mean is not None else None, n) for name, mean, n in rows}
    assert means == {"completeness": (None, 0), "faithfulness": (3.0, 3), "relevance": (3.0, 3)}


def test_timestamps_are_timezone_aware_utc_after_reading_back(engine: Engine) -> None:
    happened = datetime(2026, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=8)))
    item = JudgeItem(id="a", question="q", answer="a")
    interaction = Interaction.from_item(item, source=SOURCE)
    interaction.created_at = happened
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=[interaction])
        upsert_verdicts(session=session, run_id=None, verdicts=[(interaction.id, scored("a"))])
    with session_scope(engine) as session:
        back = session.get(Interaction, interaction.id)
        verdict = get_verdicts(session=session)[0]
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
        upsert_interactions(session=session, interactions=[interaction])
    newer = item.model_copy(update={"answer": "new answer"})
    with session_scope(engine) as session:
        store_judged(session=session, source=SOURCE, run_id=None, judged=[(newer, scored("a"))])
    with session_scope(engine) as session:
        back = session.get(Interaction, interaction.id)
        assert back is not None
        assert (back.answer, back.tier, back.release, back.meta) == ("new answer", "quantized", "r1", {"k": 1})
        assert get_verdicts(session=session)[0].interaction_id == interaction.id


def test_already_judged_lists_the_interactions_with_a_verdict_under_this_rubric_and_judge(engine: Engine) -> None:
    store_items(engine, ["a", "b", "c", "d"])
    other = JUDGE.model_copy(update={"config_hash": "k" * 16})
    verdicts = [
        (interaction_id(SOURCE, "a"), scored("a")),
        (interaction_id(SOURCE, "b"), unscored("b")),  # timeout: retried when asked to
        (interaction_id(SOURCE, "c"), scored("c", judge=other)),  # another judge configuration
    ]
    with session_scope(engine) as session:
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
    ids = [interaction_id(SOURCE, i) for i in "abcd"]
    with session_scope(engine) as session:
        done = judged_interactions(
            session=session, interaction_ids=ids, rubric_hash=RUBRIC.hash, judge_config_hash=JUDGE.config_hash
        )
        retrying = judged_interactions(
            session=session,
            interaction_ids=ids,
            rubric_hash=RUBRIC.hash,
            judge_config_hash=JUDGE.config_hash,
            retry_reasons={"timeout"},
        )
        stored = {v.interaction_id: v.id for v in get_verdicts(session=session, judge_config_hash=JUDGE.config_hash)}
        other_rubric = judged_interactions(
            session=session, interaction_ids=ids, rubric_hash="x" * 16, judge_config_hash=JUDGE.config_hash
        )
    assert done == {ids[0]: stored[ids[0]], ids[1]: stored[ids[1]]}
    assert retrying == {ids[0]: stored[ids[0]]}
    assert other_rubric == {}


def test_probability_weighted_scores_read_back_and_sit_beside_each_criterions_integer(engine: Engine) -> None:
    store_items(engine, ["a", "b"])
    weighted = scored("a").model_copy(
        update={"expected_scores": {"relevance": 3.72, "faithfulness": 3.05}, "score_reading": ScoreReading.expected}
    )
    plain = scored("b")
    with session_scope(engine) as session:
        pairs = [(interaction_id(SOURCE, v.item_id), v) for v in (weighted, plain)]
        upsert_verdicts(session=session, run_id=None, verdicts=pairs)
    with session_scope(engine) as session:
        records = {r.item_id: r for r in get_verdicts(session=session)}
        rows = get_criterion_scores(session=session, verdict_ids=[records["a"].id, records["b"].id])
    assert records["a"].to_verdict() == weighted and records["b"].to_verdict() == plain
    assert records["b"].to_verdict().score_reading is ScoreReading.integer
    by_key = {(r.verdict_id, r.criterion): (r.score, r.expected) for r in rows}
    assert by_key[(records["a"].id, "relevance")] == (4, 3.72)
    assert by_key[(records["a"].id, "completeness")] == (None, None)
    assert by_key[(records["b"].id, "relevance")] == (4, None)
