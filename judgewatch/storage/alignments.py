"""Aligned judge configurations (`judgewatch judges align`): each one built, how it measured, which one is in use.

At most one per (rubric, judge kind) is `active`, and the judges built with the store use it; switching one on
(`judges align --switch`) and ending it (`judges unalign`) are explicit, recorded steps.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlmodel import Field, Session, SQLModel, select

from judgewatch.storage.db import table
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


class JudgeAlignment(SQLModel, table=True):
    __tablename__ = "judge_alignment"

    id: str = Field(primary_key=True, max_length=32)
    rubric_name: str = Field(index=True)
    rubric_hash: str
    judge_kind: str
    digest: str
    config_hash: str  # the aligned judge's configuration, as measured
    based_on: str  # the configuration it was compared with (the current one)
    alignment: dict[str, Any] = Field(sa_type=JSONValue)  # judges.alignment.Alignment
    comparison: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)  # trust.align.Comparison
    accepted: bool
    active: bool = False
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    switched_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


def alignment_id(judge_kind: str, rubric_name: str, digest: str) -> str:
    return stable_id("alignment", judge_kind, rubric_name, digest)


def save_alignment(*, session: Session, row: JudgeAlignment) -> None:
    """Insert, or replace the measurement of the same alignment built again (its switch history is kept)."""
    row.id = alignment_id(row.judge_kind, row.rubric_name, row.digest)
    stored = session.get(JudgeAlignment, row.id)
    if stored is not None:
        row.active, row.switched_at, row.ended_at = stored.active, stored.switched_at, stored.ended_at
    session.merge(row)


def end_alignment(*, session: Session, rubric_name: str, judge_kind: str, keep: str = "") -> int:
    """The active alignment of (rubric, kind) (but `keep`) no longer used, recorded with the time; rows ended."""
    c = table(JudgeAlignment).c
    result = session.execute(
        update(table(JudgeAlignment))
        .where(c.rubric_name == rubric_name, c.judge_kind == judge_kind, c.active.is_(True), c.id != keep)
        .values(active=False, ended_at=utcnow())
    )
    return int(getattr(result, "rowcount", 0))


def switch_alignment(*, session: Session, row_id: str) -> JudgeAlignment:
    """Make an accepted alignment the one in use for its rubric and kind (ending the one before); ValueError else."""
    row = session.get(JudgeAlignment, row_id, with_for_update=True)
    if row is None or not row.accepted:
        raise ValueError(f"alignment {row_id} is {'not stored' if row is None else 'not accepted'}: not switched")
    end_alignment(session=session, rubric_name=row.rubric_name, judge_kind=row.judge_kind, keep=row.id)
    row.active, row.switched_at, row.ended_at = True, utcnow(), None
    session.add(row)
    return row


def active_alignments(*, session: Session) -> list[JudgeAlignment]:
    """The alignments in use, one per (rubric, judge kind) at most."""
    return list(session.exec(select(JudgeAlignment).where(table(JudgeAlignment).c.active.is_(True))))
