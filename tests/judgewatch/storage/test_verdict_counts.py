"""The verdict counts kept at write time equal a recount from the verdict table, whatever was written: new verdicts,
fallbacks, supersedes and re-judges in place; `written` counts every write and never goes down; m013 backfills."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, insert

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.types import utcnow
from judgewatch.storage.verdict_counts import Key, Sums, recount, stored_counts
from judgewatch.storage.verdicts import VerdictRecord, upsert_verdicts, verdict_row

CONFIGURED = JudgeIdentity(kind="openai", name="judge-model", endpoint="http://judge/v1", config_hash="c" * 16)
OTHER = JudgeIdentity(kind="openai", name="other-model", endpoint="http://other/v1", config_hash="o" * 16)
FALLBACK = JudgeIdentity(kind="reference", name="reference", config_hash="f" * 16)
RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)
SOURCE = "traffic:counts"
LINK = "openai:judge-model@http://user:secret@judge/v1"


def scored(item: str, judge: JudgeIdentity, *, fallback: bool = False, latency_ms: float = 80.0) -> Verdict:
    return Verdict(
        item_id=item,
        status=VerdictStatus.scored,
        scores={"relevance": 4},
        overall=4.0,
        judge=judge,
        rubric=RUBRIC,
        latency_ms=latency_ms,
        fallback_from=[LINK] if fallback else [],
    )


def unscored(item: str, reason: UnscoredReason) -> Verdict:
    return Verdict.unscored(item, reason, judge=CONFIGURED, rubric=RUBRIC, detail="x")


def add_items(engine: Engine, names: list[str]) -> None:
    with session_scope(engine) as session:
        rows = [Interaction.from_item(JudgeItem(id=n, question="q", answer="a"), source=SOURCE) for n in names]
        for row in rows:
            row.tier = "quantized"
        upsert_interactions(session=session, interactions=rows)


def write(engine: Engine, *verdicts: Verdict) -> None:
    with session_scope(engine) as session:
        upsert_verdicts(
            session=session, run_id=None, verdicts=[(interaction_id(SOURCE, v.item_id), v) for v in verdicts]
        )


def assert_counts_match_a_recount(engine: Engine, writes: int) -> dict[Key, Sums]:
    with session_scope(engine) as session:
        kept, fresh = stored_counts(session=session), recount(session=session)
    assert {k: s.current for k, s in kept.items() if s.current} == {k: s.current for k, s in fresh.items() if s.current}
    assert sum(s.written for s in kept.values()) == writes  # every write counted once, re-judges included
    for key, sums in fresh.items():  # a stored verdict was written at least once under its present values
        assert kept[key].written >= sums.written
    return kept


def by(kept: dict[Key, Sums], field: str, **where: str) -> int:
    names = ("judge", "rubric", "tier", "source", "status", "reason", "from_judge", "latency_bucket")
    return sum(getattr(s, field) for k, s in kept.items() if all(k[names.index(n)] == v for n, v in where.items()))


def test_counts_follow_writes_fallbacks_supersedes_and_rejudges(engine: Engine) -> None:
    add_items(engine, ["a", "b", "c"])
    write(engine, unscored("a", UnscoredReason.endpoint_down), scored("b", CONFIGURED))
    write(engine, unscored("c", UnscoredReason.parse_error))
    kept = assert_counts_match_a_recount(engine, writes=3)
    assert by(kept, "current", status="unscored") == 2
    assert by(kept, "current", tier="quantized", source="traffic") == 3

    write(engine, scored("a", FALLBACK, fallback=True))  # the offline judge stands in: the failure is superseded
    kept = assert_counts_match_a_recount(engine, writes=4)
    assert by(kept, "current", reason="endpoint_down") == 0
    assert by(kept, "written", reason="endpoint_down") == 1  # a counter keeps what was written
    assert by(kept, "written", judge="reference", from_judge="judge-model") == 1

    write(engine, scored("a", CONFIGURED, latency_ms=7000))  # the judge is back: re-judged in place, supersedes both
    write(engine, scored("c", CONFIGURED))  # the parse error re-judged in place
    kept = assert_counts_match_a_recount(engine, writes=6)
    assert by(kept, "current") == 3
    assert by(kept, "current", judge="reference") == 0
    assert by(kept, "current", status="unscored") == 0
    assert by(kept, "written", status="unscored") == 2
    assert by(kept, "written", judge="judge-model", status="scored") == 3
    assert by(kept, "written", latency_bucket=7) == 1  # 7 s falls in the (5 s, 10 s] bucket
    assert by(kept, "latency_sum_s") == pytest.approx(7.0 + 3 * 0.08)  # the unscored writes took 0 s

    write(engine, scored("b", OTHER), scored("b", CONFIGURED))  # a second judge keeps its own verdict; b again
    kept = assert_counts_match_a_recount(engine, writes=8)
    assert by(kept, "current") == 4


def test_concurrent_writers_of_the_same_interactions_count_each_change_once(engine: Engine) -> None:
    items = [f"x{k}" for k in range(40)]
    add_items(engine, items)
    errors: list[BaseException] = []

    def writer(judge: JudgeIdentity, fallback: bool) -> None:
        try:
            for start in range(0, len(items), 10):
                write(engine, *(scored(n, judge, fallback=fallback) for n in items[start : start + 10]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(CONFIGURED, False)),
        threading.Thread(target=writer, args=(FALLBACK, True)),
        threading.Thread(target=writer, args=(OTHER, False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    kept = assert_counts_match_a_recount(engine, writes=3 * len(items))
    assert by(kept, "current") == 2 * len(items)  # the fallback verdicts are superseded, in whatever order


def test_m013_backfills_the_counts_from_verdicts_stored_before_it(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate(engine, MIGRATIONS[: next(i for i, m in enumerate(MIGRATIONS) if m.__name__ == "m013_verdict_counts")])
        add_items(engine, ["a", "b"])
        rows = [
            verdict_row(interaction_id(SOURCE, "a"), scored("a", CONFIGURED), run_id=None, now=utcnow()),
            verdict_row(interaction_id(SOURCE, "b"), unscored("b", UnscoredReason.timeout), run_id=None, now=utcnow()),
            verdict_row(interaction_id(SOURCE, "b"), scored("b", FALLBACK, fallback=True), run_id=None, now=utcnow()),
        ]
        rows[1]["superseded_by"] = rows[2]["id"]
        with engine.begin() as conn:
            conn.execute(insert(table(VerdictRecord)), rows)
        assert migrate(engine)[0] == "m013_verdict_counts"
        kept = assert_counts_match_a_recount(engine, writes=3)
        assert (by(kept, "current", status="scored"), by(kept, "current", status="unscored")) == (2, 0)
        write(engine, scored("b", CONFIGURED))  # after the backfill the writer keeps them
        assert_counts_match_a_recount(engine, writes=4)
    finally:
        engine.dispose()
