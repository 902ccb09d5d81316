"""The verdict tables, in their own module so that `storage/verdicts` (their writer and readers) and
`storage/verdict_counts` do not import each other."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from judgewatch.contract.verdicts import ScoreReading, Verdict
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
    # Probability-weighted scores (None: read as integers only) and how the scores were read (None: "integer").
    expected_scores: dict[str, float] | None = Field(default=None, sa_type=JSONValue)
    score_reading: str | None = None  # a ScoreReading value
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
    # What was left out to fit the judge's context window (a PromptTrim; None: the whole item was sent).
    trimmed: dict[str, Any] | None = Field(default=None, sa_type=JSONValue)
    # The verdict that replaced this one for estimates and routing (None: this one is current).
    superseded_by: str | None = Field(default=None, index=True, max_length=32)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)  # first stored
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)  # last (re)judged

    def to_verdict(self) -> Verdict:
        judge = {"kind": self.judge_kind, "name": self.judge_name, "endpoint": self.judge_endpoint}
        tokens = {"prompt": self.prompt_tokens, "completion": self.completion_tokens, "cached": self.cached_tokens}
        return Verdict.model_validate({
            "item_id": self.item_id, "status": self.status, "scores": dict(self.scores),
            "expected_scores": dict(self.expected_scores or {}),
            "score_reading": self.score_reading or ScoreReading.integer, "not_applicable": list(self.not_applicable),
            "overall": self.overall, "reason": self.reason, "unscored_reason": self.unscored_reason,
            "detail": self.detail, "judge": {**judge, "config_hash": self.judge_config_hash},
            "rubric": {"name": self.rubric_name, "version": self.rubric_version, "hash": self.rubric_hash},
            "latency_ms": self.latency_ms, "attempts": self.attempts, "fallback_from": list(self.fallback_from),
            "tokens": tokens, "trimmed": self.trimmed,
        })  # fmt: skip


class CriterionScore(SQLModel, table=True):
    """One criterion of one verdict: score None when not applicable or not obtained."""

    __tablename__ = "criterion_score"

    verdict_id: str = Field(foreign_key="verdict.id", primary_key=True, ondelete="CASCADE")
    criterion: str = Field(primary_key=True, index=True)
    score: int | None = None
    expected: float | None = None  # the probability-weighted score, when the verdict was read that way
    not_applicable: bool = False
