"""EvalRun: one judging run (a file, a regression, a sampling pass...), with a deterministic id."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import Field, SQLModel

from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


class RunKind(StrEnum):
    file = "file"
    regression = "regression"
    sampling = "sampling"
    validation = "validation"
    anchor = "anchor"


class RunStatus(StrEnum):
    running = "running"
    completed = "completed"
    failed = "failed"


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
    counts: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
