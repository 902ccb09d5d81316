"""Run records: a deterministic id, restart on the same input, counts, status and heartbeat on finish."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, update

from judgewatch.contract.verdicts import RubricIdentity
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.runs import (
    EvalRun,
    RunKind,
    RunStatus,
    beat_run,
    expire_runs,
    finish_run,
    get_run,
    list_runs,
    start_run,
)
from judgewatch.storage.types import utcnow

RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)
JUDGE_CONFIG_HASH = "j" * 16


def test_starting_the_same_run_twice_is_one_run_and_finishing_records_counts(engine: Engine) -> None:
    def start() -> str:
        with session_scope(engine) as session:
            run = start_run(
                session=session,
                kind=RunKind.file,
                name="items.jsonl",
                identity="sha:abc",
                rubric=RUBRIC,
                judge_config_hash=JUDGE_CONFIG_HASH,
                params={"concurrency": 8},
            )
            return run.id

    first = start()
    with session_scope(engine) as session:
        finish_run(session=session, run_id=first, status=RunStatus.completed, counts={"scored": 3})
        run = get_run(session=session, run_id=first)
        assert run is not None and run.status == "completed" and run.counts == {"scored": 3}
        assert run.finished_at is not None and run.finished_at.tzinfo is not None
    assert start() == first
    with session_scope(engine) as session:
        run = get_run(session=session, run_id=first)
        assert run is not None and run.status == "running" and run.finished_at is None
        assert run.params == {"concurrency": 8}


def test_a_heartbeat_records_that_the_run_is_alive_and_its_counts_so_far(engine: Engine) -> None:
    with session_scope(engine) as session:
        run = start_run(session=session, kind=RunKind.sampling, name="s", identity="x", rubric=RUBRIC)
        started = run.heartbeat_at
    assert started is not None and started.tzinfo is not None
    with session_scope(engine) as session:
        beat_run(session=session, run_id=run.id, counts={"judged_now": 5})
    with session_scope(engine) as session:
        back = get_run(session=session, run_id=run.id)
    assert back is not None and back.heartbeat_at is not None and back.heartbeat_at >= started
    assert back.status == "running" and back.counts == {"judged_now": 5}


def test_only_running_runs_silent_past_the_expiry_are_marked_abandoned(engine: Engine) -> None:
    ids = {}
    with session_scope(engine) as session:
        for name in ("live", "silent", "done"):
            ids[name] = start_run(session=session, kind=RunKind.file, name=name, identity=name).id
        finish_run(session=session, run_id=ids["done"], status=RunStatus.completed.value)
    tbl = table(EvalRun)
    long_ago = utcnow() - timedelta(hours=1)
    with session_scope(engine) as session:  # "done" finished long ago, "silent" last beat long ago
        session.execute(update(tbl).where(tbl.c.id.in_([ids["silent"], ids["done"]])).values(heartbeat_at=long_ago))
    with session_scope(engine) as session:
        assert expire_runs(session=session, expiry_s=300) == [ids["silent"]]
    with session_scope(engine) as session:
        listed = {run.name: run.status for run in list_runs(session=session)}
        assert expire_runs(session=session, expiry_s=300) == []  # once is enough
    assert listed == {"live": "running", "silent": "abandoned", "done": "completed"}
