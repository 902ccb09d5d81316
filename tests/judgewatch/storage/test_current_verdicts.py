"""One current verdict per interaction and rubric: a normal verdict supersedes a fallback or endpoint-failure one
(kept as history), whatever the order they are stored in; m011 does the same for verdicts stored before it."""

from __future__ import annotations

from sqlalchemy import Engine, select, update

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.verdicts import VerdictRecord, is_current, upsert_verdicts, verdict_id

CONFIGURED = JudgeIdentity(kind="openai", name="judge-model", endpoint="http://judge/v1", config_hash="c" * 16)
OTHER = JudgeIdentity(kind="openai", name="other-model", endpoint="http://other/v1", config_hash="o" * 16)
FALLBACK = JudgeIdentity(kind="reference", name="reference-overlap", config_hash="f" * 16)
RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)
SOURCE = "test:current"
IID = interaction_id(SOURCE, "a")


def verdict(judge: JudgeIdentity, *, fallback: bool = False) -> Verdict:
    return Verdict(
        item_id="a",
        status=VerdictStatus.scored,
        scores={"relevance": 4},
        overall=4.0,
        judge=judge,
        rubric=RUBRIC,
        fallback_from=["openai:judge-model@http://judge/v1"] if fallback else [],
    )


def store(engine: Engine, *verdicts: Verdict) -> None:
    with session_scope(engine) as session:
        item = JudgeItem(id="a", question="q", answer="a")
        upsert_interactions(session=session, interactions=[Interaction.from_item(item, source=SOURCE)])
    for v in verdicts:  # one batch each: the order they are stored in matters
        with session_scope(engine) as session:
            upsert_verdicts(session=session, run_id=None, verdicts=[(IID, v)])


def superseded(engine: Engine) -> dict[str, str | None]:
    tbl = table(VerdictRecord)
    with session_scope(engine) as session:
        return dict(session.execute(select(tbl.c.judge_config_hash, tbl.c.superseded_by)).tuples().all())


def vid(judge: JudgeIdentity) -> str:
    return verdict_id(IID, RUBRIC.hash, judge.config_hash)


def test_the_configured_judge_supersedes_the_fallback_verdict_stored_before_it(engine: Engine) -> None:
    store(engine, verdict(FALLBACK, fallback=True), verdict(CONFIGURED))
    assert superseded(engine) == {FALLBACK.config_hash: vid(CONFIGURED), CONFIGURED.config_hash: None}


def test_a_later_fallback_verdict_never_replaces_a_normal_one(engine: Engine) -> None:
    store(engine, verdict(CONFIGURED), verdict(FALLBACK, fallback=True))
    assert superseded(engine) == {FALLBACK.config_hash: vid(CONFIGURED), CONFIGURED.config_hash: None}


def test_an_endpoint_failure_is_superseded_by_the_fallback_verdict_that_replaced_it(engine: Engine) -> None:
    down = Verdict.unscored("a", UnscoredReason.endpoint_down, judge=CONFIGURED, rubric=RUBRIC, detail="refused")
    store(engine, down, verdict(FALLBACK, fallback=True))
    assert superseded(engine) == {CONFIGURED.config_hash: vid(FALLBACK), FALLBACK.config_hash: None}
    store(engine, verdict(CONFIGURED))  # the judge is back: its verdict replaces both
    assert superseded(engine) == {CONFIGURED.config_hash: None, FALLBACK.config_hash: vid(CONFIGURED)}


def test_two_judges_working_normally_each_keep_their_verdict(engine: Engine) -> None:
    store(engine, verdict(CONFIGURED), verdict(OTHER))
    assert superseded(engine) == {CONFIGURED.config_hash: None, OTHER.config_hash: None}
    with session_scope(engine) as session:
        assert len(list(session.scalars(select(VerdictRecord).where(is_current())))) == 2


def test_m011_supersedes_the_fallback_verdicts_stored_before_it(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        m011 = next(n for n, m in enumerate(MIGRATIONS) if m.__name__ == "m011_verdict_superseded_by")
        migrate(engine, MIGRATIONS[:m011])  # later migrations may follow m011: stop right before it
        store(engine, verdict(FALLBACK, fallback=True), verdict(CONFIGURED))
        tbl = table(VerdictRecord)
        with session_scope(engine) as session:  # as a store from before m011 has them: every verdict current
            session.execute(update(tbl).values(superseded_by=None))
        assert migrate(engine)[0] == "m011_verdict_superseded_by"
        assert superseded(engine) == {FALLBACK.config_hash: vid(CONFIGURED), CONFIGURED.config_hash: None}
    finally:
        engine.dispose()
