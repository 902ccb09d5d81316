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
    too_long = "too_long"  # rubric + question + answer alone exceed the judge's context window; nothing was sent
    not_applicable = "not_applicable"  # no criterion applies to the item (its deterministic checks say why in `detail`)
    judge_error = "judge_error"  # anything else, with the message in `detail`


class ScoreReading(StrEnum):
    """How a verdict's scores were read: the integers only, or also their probability-weighted floats."""

    integer = "integer"  # the integers the judge wrote; log-probabilities were not asked for
    expected = "expected"  # plus `expected_scores`: each score's mean over the scale's tokens (G-Eval weighting)
    no_logprobs = "no_logprobs"  # log-probabilities were asked for but the reply carried none usable: integers only


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
    cached: int = 0  # of the prompt tokens, those the endpoint served from its prefix cache

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(**{name: getattr(self, name) + getattr(other, name) for name in TokenUsage.model_fields})


class PromptTrim(BaseModel):
    """What was left out so the prompt fits the judge's context window (absent: the whole item was sent; what goes
    first: docs/conversations.md). Token counts are the endpoint's own when `exact`, else an estimate."""

    model_config = ConfigDict(frozen=True)

    passages_given: int
    passages_kept: int  # kept whole
    passages_partial: int = 0  # kept as their best sentences only
    prompt_tokens_full: int  # the prompt with every passage
    prompt_tokens_sent: int
    window: int  # the model's context window (max_model_len)
    reply_tokens: int  # kept free for the reply (max_tokens)
    exact: bool = True
    turns_given: int = 0  # a conversation's turns before the question
    turns_dropped: int = 0  # the oldest of them, left out
    examples_given: int = 0  # few-shot examples of an aligned judge (judges.alignment)
    examples_dropped: int = 0  # the last of them, left out before anything of the item

    @property
    def note(self) -> str:
        """What was left out, in words: "dropped 3 oldest turns of 5; kept 2 of 4 passages whole, 1 in part"."""
        parts = []
        if self.examples_dropped:
            parts.append(f"dropped {self.examples_dropped} of {self.examples_given} few-shot examples")
        if self.turns_dropped:
            parts.append(f"dropped {self.turns_dropped} oldest turns of {self.turns_given}")
        if self.passages_kept < self.passages_given:
            partial = f", {self.passages_partial} in part" if self.passages_partial else ""
            parts.append(f"kept {self.passages_kept} of {self.passages_given} passages whole{partial}")
        return "; ".join(parts)


class Verdict(BaseModel):
    """Per-criterion integer scores (None = not applicable or not obtained), overall, reason, provenance.
    `expected_scores` holds, when `score_reading` is `expected`, every scored criterion's probability-weighted score (a
    float on the same scale); the integer in `scores` stays the most likely level the judge wrote."""

    item_id: str
    status: VerdictStatus
    scores: dict[str, int | None] = Field(default_factory=dict)
    expected_scores: dict[str, float] = Field(default_factory=dict)
    score_reading: ScoreReading = ScoreReading.integer
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
    trimmed: PromptTrim | None = None  # reference material left out to fit the context window

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
        extra.update(status=VerdictStatus.unscored, unscored_reason=reason, detail=detail)
        return cls(item_id=item_id, judge=judge, rubric=rubric, **extra)  # type: ignore[arg-type]

    def output_row(self) -> dict[str, object]:
        """The row `judgewatch judge --output` writes."""
        return {
            "id": self.item_id,
            "status": self.status.value,
            "unscored_reason": self.unscored_reason.value if self.unscored_reason else None,
            "scores": self.scores,
            "expected_scores": self.expected_scores or None,
            "score_reading": self.score_reading.value,
            "overall": self.overall,
            "reason": self.reason,
            "judge": self.judge.model_dump(),
            "rubric": self.rubric.model_dump(),
            "latency_ms": round(self.latency_ms, 1),
            "tokens": self.tokens.model_dump(),
            "trimmed": self.trimmed.model_dump() if self.trimmed else None,
        }
