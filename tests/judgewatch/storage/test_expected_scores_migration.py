"""m015 gives a store made before probability-weighted scores their columns; its old verdicts read as integers."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, ScoreReading, Verdict, VerdictStatus
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.verdicts import get_criterion_scores, get_verdicts, store_judged

JUDGE = JudgeIdentity(kind="openai", name="m", config_hash="j" * 16)
RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)


def test_an_existing_store_gains_the_expected_score_columns_and_its_verdicts_read_as_integers(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        before = next(i for i, m in enumerate(MIGRATIONS) if m.__name__.endswith("_verdict_expected_scores"))
        migrate(engine)  # today's writer stores the old verdict (it needs later tables), then m015 is undone
        item = JudgeItem(id="x", question="q", answer="a", reference_facts=["f"])
        old = Verdict(item_id="x", status=VerdictStatus.scored, scores={"relevance": 4}, judge=JUDGE, rubric=RUBRIC)
        with session_scope(engine, write=True) as session:
            store_judged(session=session, source="s", run_id=None, judged=[(item, old)])
        with engine.begin() as conn:  # the tables as a database created before that migration has them
            for table, column in (("verdict", "expected_scores"), ("verdict", "score_reading")):
                conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
            conn.execute(text("ALTER TABLE criterion_score DROP COLUMN expected"))
            conn.execute(text("DELETE FROM _migrations WHERE name = :n"), {"n": MIGRATIONS[before].__name__})
        assert migrate(engine) == [MIGRATIONS[before].__name__]
        assert {"expected_scores", "score_reading"} <= {c["name"] for c in inspect(engine).get_columns("verdict")}
        assert "expected" in {c["name"] for c in inspect(engine).get_columns("criterion_score")}
        with session_scope(engine) as session:
            (record,) = get_verdicts(session=session)
            verdict = record.to_verdict()
            (row,) = get_criterion_scores(session=session, verdict_ids=[record.id])
        assert verdict.scores == {"relevance": 4} and verdict.expected_scores == {}
        assert verdict.score_reading is ScoreReading.integer and (row.score, row.expected) == (4, None)
    finally:
        engine.dispose()
