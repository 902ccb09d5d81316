"""Which judge series the tier numbers rest on: the one the latest gate used, else the latest that graded tiers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from judgewatch.calibration.judge_series import default_series, tiered_series
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import GateDecision, record_gate_decision
from judgewatch.testing.synthetic_labels import SyntheticSpec, write_synthetic

from .conftest import JUDGE_A

JUDGE_B = JudgeIdentity(kind="fake", name="judge-b", endpoint="http://judge-b/v1", config_hash="b" * 16)
UNTIERED = JudgeIdentity(kind="openai", name="smollm2", endpoint="http://x/v1", config_hash="c" * 16)
START = datetime(2026, 1, 1, tzinfo=UTC)


def gate(engine: Engine, release: str, config: str, at: datetime) -> None:
    decision = GateDecision(id=release, release=release, exit_code=0, outcome="pass", summary="pass",
                            judge_config_hash=config, decided_at=at)  # fmt: skip
    with session_scope(engine, write=True) as session:
        record_gate_decision(session=session, decision=decision)


def test_the_default_series_follows_the_latest_gate_whose_judge_graded_tiers(engine: Engine, rubric: Rubric) -> None:
    for judge in (JUDGE_A, JUDGE_B):  # B's verdicts are stored last: the newest tiered series
        write_synthetic(engine, rubric, SyntheticSpec(judge=judge, days=1, per_day=10, review_share=0.0, start=START))
    assert [s.judge.config_hash for s in tiered_series(engine, rubric_name="answer_quality")] == ["b" * 16, "a" * 16]

    choice = default_series(engine, rubric_name="answer_quality")
    assert choice is not None and choice.series.judge == JUDGE_B and "no gate used one" in choice.reason

    gate(engine, "r7", JUDGE_A.config_hash, START + timedelta(days=3))
    choice = default_series(engine, rubric_name="answer_quality")
    assert choice is not None and choice.series.judge.config_hash == JUDGE_A.config_hash
    assert choice.reason.startswith("the judge the latest gate used (release r7, 2026-01-04")

    # a newer gate that refused an untrustworthy judge graded nothing: the page keeps the judge that did
    gate(engine, "r8", UNTIERED.config_hash, START + timedelta(days=4))
    choice = default_series(engine, rubric_name="answer_quality")
    assert choice is not None and choice.series.judge.config_hash == JUDGE_A.config_hash
    assert "the newer gate of release r8 rests on a judge that graded no tiered items" in choice.reason


def test_an_empty_store_has_no_default_series(engine: Engine) -> None:
    assert default_series(engine, rubric_name="answer_quality") is None
