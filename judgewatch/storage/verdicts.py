"""Stored verdicts: one row per (interaction, rubric, judge configuration), plus one row per criterion.

The verdict row keeps `scores` as JSON so a stored verdict reads back as the exact `Verdict` in one query.
`CriterionScore` repeats each criterion's score as a plain row so per-criterion statistics are ordinary SQL
(`GROUP BY criterion`, joins on tier) on SQLite and PostgreSQL alike, without dialect-specific JSON
operators. Both are written in the same transaction by `verdict_store.upsert_verdicts`, the only writer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from judgewatch.contract.verdicts import (
    JudgeIdentity,
    RubricIdentity,
    TokenUsage,
    UnscoredReason,
    Verdict,
    VerdictStatus,
)
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


def verdict_id(interaction_id: str, rubric_hash: str, judge_config_hash: str) -> str:
    """Judging the same interaction with the same rubric and judge configuration replaces, never duplicates."""
    return stable_id("verdict", interaction_id, rubric_hash, judge_config_hash)


class VerdictRecord(SQLModel, table=True):
    __tablename__ = "verdict"

    id: str = Field(primary_key=True, max_length=32)
    interaction_id: str = Field(foreign_key="interaction.id", index=True)
    item_id: str  # the id the judge saw (the interaction's source_id)
    run_id: str | None = Field(default=None, foreign_key="eval_run.id", index=True)
    status: str = Field(index=True)  # a VerdictStatus value
    unscored_reason: str | None = None  # an UnscoredReason value
    detail: str | None = None
    overall: float | None = None
    reason: str = ""
    scores: dict[str, int | None] = Field(default_factory=dict, sa_type=JSONValue)
    not_applicable: list[str] = Field(default_factory=list, sa_type=JSONValue)
    judge_kind: str
    judge_name: str
    judge_endpoint: str | None = None
    judge_config_hash: str = Field(index=True)
    rubric_name: str
    rubric_version: str
    rubric_hash: str = Field(index=True)
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    attempts: int = 1
    fallback_from: list[str] = Field(default_factory=list, sa_type=JSONValue)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)  # first stored
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)  # last (re)judged

    def to_verdict(self) -> Verdict:
        return Verdict(
            item_id=self.item_id,
            status=VerdictStatus(self.status),
            scores=dict(self.scores),
            not_applicable=list(self.not_applicable),
            overall=self.overall,
            reason=self.reason,
            unscored_reason=UnscoredReason(self.unscored_reason) if self.unscored_reason else None,
            detail=self.detail,
            judge=JudgeIdentity(
                kind=self.judge_kind,
                name=self.judge_name,
                endpoint=self.judge_endpoint,
                config_hash=self.judge_config_hash,
            ),
            rubric=RubricIdentity(name=self.rubric_name, version=self.rubric_version, hash=self.rubric_hash),
            latency_ms=self.latency_ms,
            tokens=TokenUsage(prompt=self.prompt_tokens, completion=self.completion_tokens, cached=self.cached_tokens),
            attempts=self.attempts,
            fallback_from=list(self.fallback_from),
        )


class CriterionScore(SQLModel, table=True):
    """One criterion of one verdict: score None when not applicable or not obtained."""

    __tablename__ = "criterion_score"

    verdict_id: str = Field(foreign_key="verdict.id", primary_key=True, ondelete="CASCADE")
    criterion: str = Field(primary_key=True, index=True)
    score: int | None = None
    not_applicable: bool = False


DETAIL_MAX_CHARS = 4000


def verdict_row(interaction_id: str, verdict: Verdict, *, run_id: str | None, now: datetime) -> dict[str, Any]:
    """The `verdict` table row of one Verdict, as a plain dict for bulk upserts."""
    detail = verdict.detail
    if detail is not None and len(detail) > DETAIL_MAX_CHARS:
        detail = detail[: DETAIL_MAX_CHARS - 3] + "..."
    judge, rubric, tokens = verdict.judge, verdict.rubric, verdict.tokens
    return {
        "id": verdict_id(interaction_id, rubric.hash, judge.config_hash),
        "interaction_id": interaction_id,
        "item_id": verdict.item_id,
        "run_id": run_id,
        "status": verdict.status.value,
        "unscored_reason": verdict.unscored_reason.value if verdict.unscored_reason else None,
        "detail": detail,
        "overall": verdict.overall,
        "reason": verdict.reason,
        "scores": verdict.scores,
        "not_applicable": verdict.not_applicable,
        "judge_kind": judge.kind,
        "judge_name": judge.name,
        "judge_endpoint": judge.endpoint,
        "judge_config_hash": judge.config_hash,
        "rubric_name": rubric.name,
        "rubric_version": rubric.version,
        "rubric_hash": rubric.hash,
        "latency_ms": verdict.latency_ms,
        "prompt_tokens": tokens.prompt,
        "completion_tokens": tokens.completion,
        "cached_tokens": tokens.cached,
        "attempts": verdict.attempts,
        "fallback_from": verdict.fallback_from,
        "created_at": now,
        "updated_at": now,
    }


def criterion_rows(verdict_row_id: str, verdict: Verdict) -> list[dict[str, Any]]:
    not_applicable = set(verdict.not_applicable)
    names = list(verdict.scores) + [n for n in verdict.not_applicable if n not in verdict.scores]
    return [
        {
            "verdict_id": verdict_row_id,
            "criterion": name,
            "score": verdict.scores.get(name),
            "not_applicable": name in not_applicable,
        }
        for name in names
    ]
