"""Interaction: one request/response of the served application (or one golden item's answer), with its refs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Field, Session, SQLModel, col, select

from judgewatch.contract.items import CONTENT_FIELDS, JudgeItem, judged_content
from judgewatch.hashing import interaction_id as interaction_id  # re-reading a source never duplicates a row
from judgewatch.storage.db import table, upsert
from judgewatch.storage.types import JSONValue, UTCDateTime, utcnow


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
        return JudgeItem.of(self.source_id, self)


def item_row(item: JudgeItem, *, source: str, now: datetime) -> dict[str, Any]:
    """The full `interaction` table row of a judged item, as a plain dict for bulk upserts (no ORM object)."""
    row = {"id": interaction_id(source, item.id), "source": source, "source_id": item.id, **judged_content(item)}
    unknown = dict.fromkeys(("tier", "model", "release", "route", "department"))  # what an item does not say
    return {**row, "language": item.lang, **unknown, "created_at": now, "metadata": {}}


def upsert_interactions(
    *, session: Session, interactions: Iterable[Interaction], update_columns: Sequence[str] | None = None
) -> int:
    """Insert or update interactions by id; `update_columns` limits what an existing row gets (default: all)."""
    tbl = table(Interaction)
    rows = [i.model_dump(by_alias=False) for i in interactions]
    for row in rows:
        row["metadata"] = row.pop("meta")
    columns = update_columns or [c.name for c in tbl.columns if c.name not in ("id", "created_at")]
    upsert(session, tbl, rows, update_columns=columns)
    return len(rows)


def upsert_interaction_rows(*, session: Session, rows: Sequence[dict[str, Any]]) -> int:
    """Insert or update full `interaction` rows given as plain dicts (column names, `metadata` included): the
    bulk path for writers that store many rows a second, without building an ORM object per row."""
    columns = [c.name for c in table(Interaction).columns if c.name not in ("id", "created_at")]
    return upsert(session, table(Interaction), rows, update_columns=columns)


def upsert_item_rows(*, session: Session, source: str, items: Iterable[JudgeItem]) -> int:
    """Store judged items as interactions of `source`; an existing one gets its item columns only, never its
    tier, model, release or metadata."""
    now = utcnow()
    rows = [item_row(item, source=source, now=now) for item in items]
    return upsert(session, table(Interaction), rows, update_columns=CONTENT_FIELDS)


def traced_spans(*, session: Session, interaction_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{interaction id: (trace id, span id)} of those interactions that came from a trace (`ingest.picks`)."""
    query = select(Interaction.id, Interaction.meta).where(col(Interaction.id).in_(interaction_ids))
    return {key: (meta["trace_id"], meta["span_id"]) for key, meta in session.exec(query) if "span_id" in meta}
