"""The kinds and states of a judging run: plain enums, so the command line can offer them without the store."""

from __future__ import annotations

from enum import StrEnum


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
    degraded = "degraded"  # finished, but too many verdicts came from a fallback judge or a failing endpoint
    abandoned = "abandoned"  # its process is gone: no heartbeat within the expiry (see `expire_runs`)
    paused = "paused"  # finished, but judging paused at the daily spend cap: its picks wait for the next UTC day
