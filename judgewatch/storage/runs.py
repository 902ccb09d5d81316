"""EvalRun: one judging run (a file, a regression, a sampling pass...), with a deterministic id; its lifecycle's one
owner is `judgewatch.judging.run.JudgingRun`."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Field, Session, SQLModel

from judgewatch.contract.verdicts import RubricIdentity
from judgewatch.storage.db import select_matching, table, upsert
from judgewatch.storage.run_states import RunKind as RunKind  # re-exported: the kinds live beside the states
from judgewatch.storage.run_states import RunStatus as RunStatus
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow

logger = logging.getLogger(__name__)


def run_id(kind: str, identity: str, rubric_hash: str, judge_config_hash: str) -> str:
    """Same kind, input, rubric and judge configuration -> same run: running it again resumes, not duplicates."""
    return stable_id("run", kind, identity, rubric_hash, judge_config_hash)


class EvalRun(SQLModel, table=True):
    __tablename__ = "eval_run"

    id: str = Field(primary_key=True, max_length=32)
    kind: str = Field(index=True)  # a RunKind value
    name: str  # human name: input file, release, flow run...
    identity: str  # what makes the input this input: a file's content hash, a release id...
    rubric_name: str | None = None
    rubric_hash: str | None = None
    judge_config_hash: str | None = None
    status: str = RunStatus.running.value
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # Last sign of life of a running run: lets a later reader tell a live run from an abandoned one.
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    counts: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)


def start_run(
    *,
    session: Session,
    kind: str,
    name: str,
    identity: str,
    rubric: RubricIdentity | None = None,
    judge_config_hash: str | None = None,
    params: dict[str, Any] | None = None,
) -> EvalRun:
    """Create the run, or restart it (status running, counts cleared) when the same run is started again."""
    rid = run_id(kind, identity, rubric.hash if rubric else "", judge_config_hash or "")
    now = utcnow()
    row: dict[str, Any] = {
        "id": rid, "kind": kind, "name": name, "identity": identity, "rubric_name": rubric.name if rubric else None,
        "rubric_hash": rubric.hash if rubric else None, "judge_config_hash": judge_config_hash,
        "status": RunStatus.running.value, "started_at": now, "finished_at": None, "heartbeat_at": now, "counts": {},
        "params": params or {},
    }  # fmt: skip
    upsert(session, table(EvalRun), [row], update_columns=[c for c in row if c != "id"])
    session.flush()
    run = session.get(EvalRun, rid, populate_existing=True)
    if run is None:  # only a concurrent delete could get here
        raise LookupError(f"run {rid} vanished right after it was stored")
    return run


def beat_run(*, session: Session, run_id: str, counts: dict[str, Any] | None = None) -> None:
    """Record that the run is alive (and, when given, its counts so far)."""
    values: dict[str, Any] = {"heartbeat_at": utcnow()}
    if counts is not None:
        values["counts"] = counts
    tbl = table(EvalRun)
    session.execute(update(tbl).where(tbl.c.id == run_id).values(**values))


def finish_run(*, session: Session, run_id: str, status: str, counts: dict[str, Any] | None = None) -> None:
    tbl = table(EvalRun)
    now = utcnow()
    session.execute(
        update(tbl)
        .where(tbl.c.id == run_id)
        .values(status=status, finished_at=now, heartbeat_at=now, counts=counts or {})
    )


def get_run(*, session: Session, run_id: str) -> EvalRun | None:
    return session.get(EvalRun, run_id, populate_existing=True)


def expire_runs(*, session: Session, expiry_s: float) -> list[str]:
    """Mark `abandoned` the running runs with no heartbeat for `expiry_s` seconds; returns their ids. A process killed
    outright (SIGKILL, OOM, power loss) never finishes its run: without this it would stay "running" forever. Checked
    when runs are listed and when a run starts."""
    tbl = table(EvalRun)
    cutoff = utcnow() - timedelta(seconds=expiry_s)
    last_seen = tbl.c.heartbeat_at
    stale = (tbl.c.status == RunStatus.running.value) & (last_seen.is_(None) | (last_seen < cutoff))
    ids = list(session.scalars(select(tbl.c.id).where(stale)))
    if ids:
        session.execute(update(tbl).where(tbl.c.id.in_(ids), stale).values(status=RunStatus.abandoned.value))
        logger.warning("marked %d run(s) abandoned (no heartbeat for %gs): %s", len(ids), expiry_s, ", ".join(ids))
    return ids


def list_runs(
    *, session: Session, kind: str | None = None, status: str | None = None, limit: int = 50
) -> list[EvalRun]:
    """The most recently started runs first, optionally of one kind or status."""
    tbl = table(EvalRun)
    query = select_matching(EvalRun, kind=kind, status=status)
    return list(session.scalars(query.order_by(tbl.c.started_at.desc(), tbl.c.id).limit(limit)))
