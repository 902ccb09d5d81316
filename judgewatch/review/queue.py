"""The review queue: server-side leases with expiry, blind labels, skips, flags and progress.

Every action checks, inside its own write transaction, that the caller is an active reviewer and (for
submit/skip/flag) that the item is leased to the caller and the lease has not run out. Leasing is one
conditional UPDATE on a row picked with `FOR UPDATE SKIP LOCKED` on PostgreSQL, or under SQLite's write lock
(BEGIN IMMEDIATE), so no item is ever leased to two reviewers at once; an expired lease simply makes the
item leasable again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, Engine, and_, exists, func, insert, literal_column, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from judgewatch.review.accounts import is_active
from judgewatch.review.labels import disagreement
from judgewatch.review.rubrics import RubricResolver
from judgewatch.review.views import (
    LeasedItem,
    LeaseError,
    NotAllowed,
    Progress,
    Revealed,
    has_references,
    leased_item,
    revealed,
    validate_scores,
)
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.migrations import table
from judgewatch.storage.review import ItemState, ReviewItem, ReviewLabel
from judgewatch.storage.types import utcnow
from judgewatch.storage.verdicts import VerdictRecord

logger = logging.getLogger(__name__)

ITEMS = table(ReviewItem)
LABELS = table(ReviewLabel)


def state_is(*states: ItemState) -> ColumnElement[bool]:
    """`state IN ('a', ...)` with literal values, so the planners can use the partial indexes."""
    literals: list[ColumnElement[str]] = [literal_column(f"'{s.value}'") for s in states]
    return ITEMS.c.state == literals[0] if len(literals) == 1 else ITEMS.c.state.in_(literals)


def labeled_by(reviewer: str) -> ColumnElement[bool]:
    return exists().where(LABELS.c.review_item_id == ITEMS.c.id, LABELS.c.reviewer == reviewer)


def leasable(reviewer: str, now: datetime) -> ColumnElement[bool]:
    """Free (available, or leased with the lease run out) and never labeled or skipped by `reviewer`."""
    expired = and_(state_is(ItemState.leased), ITEMS.c.lease_expires_at <= now)
    return and_(or_(state_is(ItemState.available), expired), ~labeled_by(reviewer))


class ReviewQueue:
    """The reviewers' side of the queue; one instance per app, safe to share between threads."""

    def __init__(
        self,
        engine: Engine,
        *,
        lease_seconds: int = 600,
        rubrics_dir: Path | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.engine = engine
        self.lease = timedelta(seconds=lease_seconds)
        self.rubrics = RubricResolver(rubrics_dir)
        self.clock = clock

    # -- leasing ---------------------------------------------------------------------------------------------

    def lease_next(self, reviewer: str) -> LeasedItem | None:
        """The item this reviewer already holds (lease renewed), else the oldest free one; None when empty."""
        with session_scope(self.engine, write=True) as session:
            self._require_active(session, reviewer)
            item_id = self._renew_held(session, reviewer) or self._claim(session, reviewer)
            return self.view(session, item_id) if item_id else None

    def lease_item(self, reviewer: str, item_id: str) -> LeasedItem:
        """Lease one given item (replay, re-opening a link); LeaseError when it is not free for this reviewer."""
        with session_scope(self.engine, write=True) as session:
            self._require_active(session, reviewer)
            held = self._renew_held(session, reviewer)
            if held != item_id and self._claim(session, reviewer, item_id=item_id) is None:
                raise LeaseError(f"item {item_id} is not free for {reviewer} (leased, done or already labeled)")
            return self.view(session, item_id)

    def _renew_held(self, session: Session, reviewer: str) -> str | None:
        now = self.clock()
        stmt = (
            update(ITEMS)
            .where(state_is(ItemState.leased), ITEMS.c.lease_owner == reviewer, ITEMS.c.lease_expires_at > now)
            .values(lease_expires_at=now + self.lease)
            .returning(ITEMS.c.id)
        )
        held = list(session.execute(stmt).scalars())
        return held[0] if held else None

    def _claim(self, session: Session, reviewer: str, *, item_id: str | None = None) -> str | None:
        """Lock one free row (skipping rows others hold locked), then lease it with a guarded UPDATE.

        The clock is read after the row lock is taken, so a lease never starts before the previous holder's
        label was stored, and an expiry is judged at the moment of the write.
        """
        for _ in range(3):  # a picked row can fail the re-check only if it changed under us: pick again
            now = self.clock()
            if item_id is not None:
                picks = [select(ITEMS.c.id).where(ITEMS.c.id == item_id, leasable(reviewer, now))]
            else:
                # Expired leases first (their items have waited longest), then the oldest available item.
                expired = and_(state_is(ItemState.leased), ITEMS.c.lease_expires_at <= now, ~labeled_by(reviewer))
                available = and_(state_is(ItemState.available), ~labeled_by(reviewer))
                picks = [
                    select(ITEMS.c.id).where(expired).order_by(ITEMS.c.lease_expires_at).limit(1),
                    select(ITEMS.c.id).where(available).order_by(ITEMS.c.created_at, ITEMS.c.id).limit(1),
                ]
            for pick in picks:
                picked = session.execute(pick.with_for_update(skip_locked=True)).scalar()  # no-op on SQLite
                if picked is None:
                    continue
                now = self.clock()
                stmt = (
                    update(ITEMS)
                    .where(ITEMS.c.id == picked, leasable(reviewer, now))  # never two holders
                    .values(state=ItemState.leased.value, lease_owner=reviewer, lease_expires_at=now + self.lease)
                    .values(leased_at=now)
                    .returning(ITEMS.c.id)
                )
                if list(session.execute(stmt).scalars()):
                    logger.debug("%s leased %s", reviewer, picked)
                    return str(picked)
            if item_id is not None:
                return None
        return None

    # -- labeling --------------------------------------------------------------------------------------------

    def submit(
        self,
        reviewer: str,
        item_id: str,
        scores: dict[str, int | None],
        *,
        rubric_version_shown: str,
        comment: str = "",
        via: str = "ui",
    ) -> Revealed:
        """Store a full label for an item leased to `reviewer`; returns the judge's verdict to show beside it."""
        with session_scope(self.engine, write=True) as session:
            item, interaction, now = self._held_item(session, reviewer, item_id)
            rubric = self.rubrics.get(item.rubric_name)
            clean = validate_scores(rubric, scores, has_refs=has_references(interaction))
            done = item.labels_done + 1
            if done < item.labels_needed:
                state = ItemState.available
            else:
                others = session.execute(
                    select(LABELS.c.scores).where(
                        LABELS.c.review_item_id == item_id,
                        LABELS.c.skipped_reason.is_(None),
                        LABELS.c.flagged.is_(False),
                    )
                )
                split = disagreement([*(dict(s) for s in others.scalars()), clean])
                state = ItemState.adjudication if split else ItemState.done
            self._write_label(
                session, item, reviewer, now, rubric_version_shown, via=via, scores=clean, comment=comment
            )
            self._release(session, item, reviewer, now, state=state, labels_done=done)
            verdict = session.get(VerdictRecord, item.verdict_id)
            assert verdict is not None
            logger.info("%s labeled %s (%s)", reviewer, item_id, state.value)
            return revealed(item_id, clean, verdict, interaction.tier, state.value)

    def skip(
        self, reviewer: str, item_id: str, reason: str, *, rubric_version_shown: str = "", via: str = "ui"
    ) -> None:
        """Give the item back to the others with a reason; this reviewer will not be offered it again."""
        reason = reason.strip()
        if not reason:
            raise LeaseError("say why you skip this item")
        with session_scope(self.engine, write=True) as session:
            item, _, now = self._held_item(session, reviewer, item_id)
            version = rubric_version_shown or item.rubric_version
            self._write_label(session, item, reviewer, now, version, via=via, skipped_reason=reason)
            self._release(session, item, reviewer, now, state=ItemState.available, labels_done=item.labels_done)

    def flag(
        self,
        reviewer: str,
        item_id: str,
        comment: str,
        *,
        scores: dict[str, int | None] | None = None,
        rubric_version_shown: str = "",
        via: str = "ui",
    ) -> None:
        """Send the item to an expert (the adjudication view), keeping whatever scores were already given."""
        with session_scope(self.engine, write=True) as session:
            item, interaction, now = self._held_item(session, reviewer, item_id)
            rubric = self.rubrics.get(item.rubric_name)
            clean = validate_scores(rubric, scores or {}, has_refs=has_references(interaction), partial=True)
            version = rubric_version_shown or item.rubric_version
            self._write_label(
                session, item, reviewer, now, version, via=via, scores=clean, comment=comment, flagged=True
            )
            self._release(session, item, reviewer, now, state=ItemState.flagged, labels_done=item.labels_done)

    def release(self, reviewer: str, item_id: str) -> bool:
        """Give a held item back unlabeled (no skip recorded); False when the caller did not hold it."""
        with session_scope(self.engine, write=True) as session:
            result: Any = session.execute(
                update(ITEMS)
                .where(ITEMS.c.id == item_id, state_is(ItemState.leased), ITEMS.c.lease_owner == reviewer)
                .values(state=ItemState.available.value, lease_owner=None, lease_expires_at=None, leased_at=None)
            )
            return bool(result.rowcount == 1)

    def progress(self, reviewer: str) -> Progress:
        now = self.clock()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        with session_scope(self.engine) as session:
            done_today = session.execute(
                select(func.count())
                .select_from(LABELS)
                .where(
                    LABELS.c.reviewer == reviewer,
                    LABELS.c.submitted_at >= midnight,
                    LABELS.c.skipped_reason.is_(None),
                    LABELS.c.flagged.is_(False),
                )
            ).scalar_one()
            left = session.execute(select(func.count()).select_from(ITEMS).where(leasable(reviewer, now))).scalar_one()
            held = session.execute(
                select(ITEMS.c.id).where(
                    state_is(ItemState.leased), ITEMS.c.lease_owner == reviewer, ITEMS.c.lease_expires_at > now
                )
            ).scalar()
        return Progress(done_today=done_today, left_in_queue=left + (1 if held else 0), holding=held)

    # -- shared steps ----------------------------------------------------------------------------------------

    def _require_active(self, session: Session, reviewer: str) -> None:
        if not is_active(session=session, name=reviewer):
            raise NotAllowed(f"{reviewer!r} is not an active reviewer")

    def view(self, session: Session, item_id: str) -> LeasedItem:
        """The blind screen content of an item (no verdict, no tier), inside the caller's transaction."""
        item = session.get(ReviewItem, item_id, populate_existing=True)
        assert item is not None
        interaction = session.get(Interaction, item.interaction_id)
        assert interaction is not None
        return leased_item(item, interaction, self.rubrics.get(item.rubric_name))

    def _held_item(self, session: Session, reviewer: str, item_id: str) -> tuple[ReviewItem, Interaction, datetime]:
        """The item, locked, after checking that its lease is the caller's and still running (clock read then)."""
        self._require_active(session, reviewer)
        item = session.get(ReviewItem, item_id, with_for_update=True, populate_existing=True)
        now = self.clock()
        if item is None:
            raise LeaseError(f"no review item {item_id}")
        if item.state != ItemState.leased or item.lease_owner != reviewer:
            raise LeaseError(f"item {item_id} is not leased to {reviewer}")
        if item.lease_expires_at is None or item.lease_expires_at <= now:
            raise LeaseError(f"your lease on item {item_id} expired: take the next item")
        interaction = session.get(Interaction, item.interaction_id)
        assert interaction is not None
        return item, interaction, now

    def _write_label(
        self,
        session: Session,
        item: ReviewItem,
        reviewer: str,
        now: datetime,
        rubric_version_shown: str,
        *,
        via: str,
        scores: dict[str, int] | None = None,
        comment: str = "",
        skipped_reason: str | None = None,
        flagged: bool = False,
    ) -> None:
        started = item.leased_at or now
        row = {
            "review_item_id": item.id,
            "reviewer": reviewer,
            "scores": scores or {},
            "skipped_reason": skipped_reason,
            "flagged": flagged,
            "comment": comment.strip(),
            "started_at": started,
            "submitted_at": now,
            "duration_ms": max(0, int((now - started).total_seconds() * 1000)),
            "rubric_version_shown": rubric_version_shown,
            "via": via,
        }
        try:
            session.execute(insert(LABELS), [row])
        except IntegrityError as exc:  # the whole transaction rolls back: no label, lease untouched
            raise LeaseError(f"{reviewer} has already labeled item {item.id}") from exc

    def _release(
        self, session: Session, item: ReviewItem, reviewer: str, now: datetime, *, state: ItemState, labels_done: int
    ) -> None:
        """End the caller's lease, guarded again by the lease condition; nothing is stored if it fails."""
        result: Any = session.execute(
            update(ITEMS)
            .where(
                ITEMS.c.id == item.id,
                state_is(ItemState.leased),
                ITEMS.c.lease_owner == reviewer,
                ITEMS.c.lease_expires_at > now,
            )
            .values(state=state.value, labels_done=labels_done, lease_owner=None, lease_expires_at=None)
            .values(leased_at=None)
        )
        if result.rowcount != 1:
            raise LeaseError(f"your lease on item {item.id} is gone: take the next item")
