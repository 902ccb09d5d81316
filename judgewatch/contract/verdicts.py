"""The verdict: what a judge said about one item under one rubric, or why it could not say anything."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class VerdictStatus(StrEnum):
    scored = "scored"
    unscored = "unscored"


class UnscoredReason(StrEnum):
    """Why no score exists. A failure is stored with one of these, never as a silent 0."""

    parse_error = "parse_error"  # the reply was not valid JSON for the schema
    truncated = "truncated"  # finish_reason == "length" before every score was written
    timeout = "timeout"
    endpoint_down = "endpoint_down"  # connection refused / DNS / every retry exhausted on 5xx
    refused = "refused"  # content filter, 4xx the endpoint will not serve
    rate_limited = "rate_limited"  # 429 still after the retries
    no_reference = "no_reference"  # every criterion needed references the item does not have
    judge_error = "judge_error"  # anything else, with the message in `detail`


class JudgeIdentity(BaseModel):
    """Which judge produced a verdict; `config_hash` changes with anything that can change its scores."""

    model_config = ConfigDict(frozen=True)

    kind: str  # "openai" | "reference" | fakes in tests
    name: str  # model id or "reference"
    endpoint: str | None = None
    config_hash: str


class RubricIdentity(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    hash: str


class TokenUsage(BaseModel):
    prompt: int = 0
    completion: int = 0
    cached: int = 0


class Verdict(BaseModel):
    """Per-criterion integer scores (None = not applicable or not obtained), overall, reason, provenance."""

    item_id: str
    status: VerdictStatus
    scores: dict[str, int | None] = Field(default_factory=dict)
    not_applicable: list[str] = Field(default_factory=list)
    overall: float | None = None
    reason: str = ""
    unscored_reason: UnscoredReason | None = None
    detail: str | None = None  # error message / raw reply excerpt for unscored verdicts
    judge: JudgeIdentity
    rubric: RubricIdentity
    latency_ms: float = 0.0
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    attempts: int = 1
    fallback_from: list[str] = Field(default_factory=list)  # judges tried before this one, in order

    @classmethod
    def unscored(
        cls,
        item_id: str,
        reason: UnscoredReason,
        *,
        judge: JudgeIdentity,
        rubric: RubricIdentity,
        detail: str | None = None,
        **extra: object,
    ) -> Verdict:
        return cls(
            item_id=item_id,
            status=VerdictStatus.unscored,
            unscored_reason=reason,
            detail=detail,
            judge=judge,
            rubric=rubric,
            **extra,  # type: ignore[arg-type]
        )

    def output_row(self) -> dict[str, object]:
        """The row `judgewatch judge --output` writes."""
        return {
            "id": self.item_id,
            "status": self.status.value,
            "unscored_reason": self.unscored_reason.value if self.unscored_reason else None,
            "scores": self.scores,
            "overall": self.overall,
            "reason": self.reason,
            "judge": self.judge.model_dump(),
            "rubric": self.rubric.model_dump(),
            "latency_ms": round(self.latency_ms, 1),
            "tokens": self.tokens.model_dump(),
        }
