"""Interaction: one request/response of the served application (or one golden item's answer), with its refs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from judgewatch.contract.items import JudgeItem
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


def interaction_id(source: str, source_id: str) -> str:
    """Stable identity: re-reading a source never duplicates its interactions."""
    return stable_id("interaction", source, source_id)


class Interaction(SQLModel, table=True):
    __tablename__ = "interaction"

    id: str = Field(primary_key=True, max_length=32)
    source: str = Field(index=True)  # "file:/abs/items.jsonl", "traffic:<name>", "golden:<set>", ...
    source_id: str
    question: str
    answer: str
    messages: list[dict[str, Any]] | None = Field(default=None, sa_type=JSONValue)
    reference_answer: str | None = None
    reference_facts: list[str] = Field(default_factory=list, sa_type=JSONValue)
    context: list[str] = Field(default_factory=list, sa_type=JSONValue)
    language: str | None = None
    tier: str | None = Field(default=None, index=True)
    model: str | None = None
    release: str | None = Field(default=None, index=True)
    route: str | None = None
    department: str | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)
    # `metadata` is reserved on declarative classes: the attribute is `meta`, the column keeps the name.
    meta: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue, sa_column_kwargs={"name": "metadata"})

    @classmethod
    def from_item(cls, item: JudgeItem, *, source: str) -> Interaction:
        row = item_row(item, source=source, now=utcnow())
        row["meta"] = row.pop("metadata")
        return cls(**row)

    def to_item(self) -> JudgeItem:
        return JudgeItem(
            id=self.source_id,
            question=self.question,
            answer=self.answer,
            reference_answer=self.reference_answer,
            reference_facts=self.reference_facts,
            context=self.context,
            language=self.language if self.language in ("en", "zh") else None,  # type: ignore[arg-type]
        )


def item_row(item: JudgeItem, *, source: str, now: datetime) -> dict[str, Any]:
    """The full `interaction` table row of a judged item, as a plain dict for bulk upserts (no ORM object)."""
    return {
        "id": interaction_id(source, item.id),
        "source": source,
        "source_id": item.id,
        "question": item.question,
        "answer": item.answer,
        "messages": None,
        "reference_answer": item.reference_answer,
        "reference_facts": list(item.reference_facts),
        "context": list(item.context),
        "language": item.lang,
        "tier": None,
        "model": None,
        "release": None,
        "route": None,
        "department": None,
        "created_at": now,
        "metadata": {},
    }


# Columns a judged item carries; judging an item updates only these, never tier/model/release metadata.
ITEM_COLUMNS = ("question", "answer", "reference_answer", "reference_facts", "context", "language")
