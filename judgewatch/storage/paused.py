"""Picks stored but not judged while the daily judge spend cap held (`judgewatch.judging.spend_cap`), one row per
waiting interaction until a later run has judged it, so no pick is lost to the cap."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func
from sqlmodel import Field, Session, SQLModel, col, select

from judgewatch.storage.db import CHUNK, table, upsert
from judgewatch.storage.types import UTCDateTime, utcnow


class PausedPick(SQLModel, table=True):
    __tablename__ = "paused_pick"

    interaction_id: str = Field(primary_key=True, foreign_key="interaction.id", max_length=32)
    source: str = Field(index=True)  # the interaction's source, "traffic:<name>"
    run_id: str | None = None  # the run that stored it without judging it
    paused_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


def pause_picks(*, session: Session, source: str, interaction_ids: Sequence[str], run_id: str | None) -> int:
    """Record picks left unjudged (a pick already waiting keeps its first record)."""
    now = utcnow()
    rows = [{"interaction_id": i, "source": source, "run_id": run_id, "paused_at": now} for i in interaction_ids]
    return upsert(session, table(PausedPick), rows, update_columns=None)


def paused_ids(*, session: Session, source: str, after: str = "", limit: int = CHUNK) -> list[str]:
    """The next waiting picks of `source` after the id `after`, in id order."""
    query = select(PausedPick.interaction_id).where(PausedPick.source == source, col(PausedPick.interaction_id) > after)
    return list(session.exec(query.order_by(col(PausedPick.interaction_id)).limit(limit)))


def unpause(*, session: Session, interaction_ids: Sequence[str]) -> None:
    """Forget the waiting records of picks that are judged now."""
    ids = list(interaction_ids)
    for start in range(0, len(ids), CHUNK):
        session.execute(delete(table(PausedPick)).where(col(PausedPick.interaction_id).in_(ids[start : start + CHUNK])))


def count_paused(*, session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(table(PausedPick))) or 0)
