"""The typed rows a traffic source yields: a usable `TrafficRow`, or a `RejectedTrafficRow` saying why not."""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from judgewatch.contract.items import JudgeItem, Language
from judgewatch.contract.messages import ChatMessage
from judgewatch.contract.verdicts import TokenUsage
from judgewatch.hashing import quarantine_id

EXCERPT_CHARS = 500


def source_label(name: str) -> str:
    """The `source` of a traffic source's interactions: "traffic:<name>"."""
    return f"traffic:{name}"


class TrafficRow(BaseModel):
    """One production call, mapped from the source's own field names."""

    model_config = ConfigDict(frozen=True)

    source: str  # "traffic:<source name>"
    source_id: str  # the row id, or "file:line" when the log carries no id
    interaction_id: str
    question: str  # the last user message
    messages: list[ChatMessage] = Field(default_factory=list)  # the request's turns, tool calls and results kept
    answer: str
    model: str | None = None
    tier: str
    release: str | None = None
    route: str | None = None
    department: str | None = None
    timestamp: AwareDatetime
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    reference_answer: str | None = None
    reference_facts: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    language: Language
    # What a source knows beyond the mapped fields and keeps with the interaction (OTLP: user, session, service,
    # latency_ms); text values are PII-scrubbed with the rest.
    attributes: dict[str, str | float] = Field(default_factory=dict)
    # OTLP: the (trace id, span id) of the span, never scrubbed, so its verdicts can be sent back onto it.
    trace_span: tuple[str, str] | None = None

    def to_judge_item(self) -> JudgeItem:
        """The judge's input contract, keyed by the interaction id."""
        return JudgeItem.of(self.interaction_id, self)


class QuarantineReason(StrEnum):
    """Why a row could not become a `TrafficRow`; the reader records it and reads on."""

    invalid_json = "invalid_json"  # the line (or a JSON text column) does not parse
    not_an_object = "not_an_object"  # valid JSON, but not an object
    undecodable = "undecodable"  # bytes that are not UTF-8
    oversize = "oversize"  # larger than the configured max_row_bytes
    missing_response = "missing_response"  # no answer text where the mapping points
    missing_field = "missing_field"  # another required field (question, timestamp) is absent
    wrong_type = "wrong_type"  # a field has a type the mapping cannot use
    unreadable = "unreadable"  # the file itself could not be read (corrupt gzip/Parquet)


class RejectedTrafficRow(BaseModel):
    """A traffic row the mapping rejected, with its position and reason so an operator can find it; never raised.
    Stored as a `judgewatch.storage.quarantine.QuarantinedRow`."""

    model_config = ConfigDict(frozen=True)

    source: str  # "traffic:<source name>"
    position: str  # "path:line", "path#row=N" or "table#id=N"
    line: int | None = None  # 1-based line (JSONL) or row (Parquet) number
    reason: QuarantineReason
    detail: str = ""
    excerpt: str = Field(default="", max_length=EXCERPT_CHARS)

    @property
    def quarantine_id(self) -> str:
        """Key for an idempotent upsert: the stored quarantine row's id."""
        return quarantine_id(self.source, self.position)


class Pick(BaseModel):
    """A sampled row (PII already scrubbed) with what an estimator needs to weight it."""

    model_config = ConfigDict(frozen=True)

    row: TrafficRow
    stratum: str
    inclusion_probability: float
    salt: str
    pii_counts: dict[str, int] = Field(default_factory=dict)
