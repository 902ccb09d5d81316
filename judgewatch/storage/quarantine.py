"""Quarantined input rows: a row that could not become an item is kept with where it was and why."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import field_validator
from sqlmodel import Field, Session, SQLModel

from judgewatch.hashing import quarantine_id as quarantine_id
from judgewatch.storage.db import select_matching, table, upsert
from judgewatch.storage.types import UTCDateTime, utcnow

RAW_EXCERPT_BYTES = 2048


def bounded_excerpt(raw: str, limit: int = RAW_EXCERPT_BYTES) -> str:
    """At most `limit` UTF-8 bytes of `raw`, cut on a character boundary."""
    data = raw.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return raw
    return data[: limit - 3].decode("utf-8", errors="ignore") + "..."


class QuarantineRecord(SQLModel):
    """A rejected input row: `position` is "file:line" or a row id; `reason` names the field."""

    source: str = Field(index=True)
    position: str
    line: int | None = None  # 1-based line number for files
    reason: str
    raw: str = ""

    @field_validator("raw")
    @classmethod
    def _bounded(cls, value: str) -> str:
        return bounded_excerpt(value)

    @property
    def message(self) -> str:
        where = f"line {self.line}" if self.line is not None else self.position
        return f"{where}: {self.reason}"


class QuarantinedRow(QuarantineRecord, table=True):
    __tablename__ = "quarantined_row"

    id: str = Field(primary_key=True, max_length=32)
    run_id: str | None = Field(default=None, foreign_key="eval_run.id", index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


def quarantine_rows(*, session: Session, records: Iterable[QuarantineRecord], run_id: str | None = None) -> int:
    """Store rejected input rows; the same (source, position) again replaces its reason and excerpt."""
    now = utcnow()
    rows = [
        {
            "id": quarantine_id(r.source, r.position),
            "source": r.source,
            "position": r.position,
            "line": r.line,
            "reason": r.reason,
            "raw": bounded_excerpt(r.raw),
            "run_id": run_id,
            "created_at": now,
        }
        for r in records
    ]
    upsert(session, table(QuarantinedRow), rows, update_columns=["reason", "raw", "line", "run_id"])
    return len(rows)


def get_quarantined(*, session: Session, run_id: str | None = None, source: str | None = None) -> list[QuarantinedRow]:
    tbl = table(QuarantinedRow)
    query = select_matching(QuarantinedRow, run_id=run_id, source=source)
    return list(session.scalars(query.order_by(tbl.c.source, tbl.c.line, tbl.c.position)))
