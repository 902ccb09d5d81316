"""Adjudication: an expert settles items whose reviewers disagreed by more than one point, or that were flagged.
Cases are leased like queue items; the adjudicator sees every label and comment but not the judge's verdict (the
settled scores stay a human reference), and never settles an item they labeled, skipped or flagged themselves."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import and_, func, or_, select, update
from sqlmodel import Session

from judgewatch.review.labels import disagreement
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.sql import ITEMS, LABELS, labeled_by, state_is
from judgewatch.review.views import LeasedItem, LeaseError, NotAllowed, validate_scores
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ItemState, Reviewer, ReviewItem

logger = logging.getLogger(__name__)

CASE_STATES = (ItemState.adjudication, ItemState.flagged)


class LabelView(BaseModel):
    reviewer: str
    scores: dict[str, int]
    comment: str
    flagged: bool
    skipped_reason: str | None
    rubric_version_shown: str


class AdjudicationCase(BaseModel):
    item: LeasedItem
    state: str  # "adjudication" (reviewers disagree) or "flagged" (a reviewer asked for an expert)
    labels: list[LabelView]
    split: dict[str, list[int]]  # criteria the reviewers disagree on, with their scores


class Adjudication:
    """The experts' side of the queue, sharing the review queue's engine, clock, lease length and rubrics."""

    def __init__(self, queue: ReviewQueue) -> None:
        self.queue = queue

    def next_case(self, adjudicator: str) -> AdjudicationCase | None:
        now = self.queue.clock()
        with session_scope(self.queue.engine, write=True) as session:
            self._require_adjudicator(session, adjudicator)
            item_id = self._claim(session, adjudicator, now)
            return self._case(session, item_id) if item_id else None

    def resolve(
        self, adjudicator: str, item_id: str, final_scores: Mapping[str, int | None], *, note: str = ""
    ) -> None:
        """Store the settled scores on the item and mark it done; the item must be leased to `adjudicator`."""
        with session_scope(self.queue.engine, write=True) as session:
            self._require_adjudicator(session, adjudicator)
            item = session.get(ReviewItem, item_id, with_for_update=True, populate_existing=True)
            now = self.queue.clock()  # read under the row lock
            if item is None or item.state not in CASE_STATES or item.lease_owner != adjudicator:
                raise LeaseError(f"case {item_id} is not leased to {adjudicator}")
            if item.lease_expires_at is None or item.lease_expires_at <= now:
                raise LeaseError(f"your lease on case {item_id} expired: take the next case")
            view = self.queue.view(session, item_id)
            rubric = self.queue.rubrics.get(item.rubric_name)
            clean = validate_scores(rubric, final_scores, has_refs=view.has_references)
            final = {**clean, "_note": note.strip()} if note.strip() else dict(clean)
            result = session.execute(
                update(ITEMS)
                .where(ITEMS.c.id == item_id, state_is(*CASE_STATES), ITEMS.c.lease_owner == adjudicator)
                .values(state=ItemState.done.value, final_scores=final, adjudicated_by=adjudicator)
                .values(adjudicated_at=now, lease_owner=None, lease_expires_at=None, leased_at=None)
            )
            if getattr(result, "rowcount", 0) != 1:
                raise LeaseError(f"case {item_id} was settled by someone else")
            logger.info("%s settled %s", adjudicator, item_id)

    def pending(self) -> int:
        with session_scope(self.queue.engine) as session:
            return session.execute(select(func.count()).select_from(ITEMS).where(state_is(*CASE_STATES))).scalar_one()

    def _require_adjudicator(self, session: Session, name: str) -> None:
        reviewer = session.get(Reviewer, name)
        if reviewer is None or not reviewer.active or not reviewer.can_adjudicate:
            raise NotAllowed(f"{name!r} may not adjudicate")

    def _claim(self, session: Session, adjudicator: str, now: datetime) -> str | None:
        mine = and_(ITEMS.c.lease_owner == adjudicator, ITEMS.c.lease_expires_at > now)
        free = or_(ITEMS.c.lease_owner.is_(None), ITEMS.c.lease_expires_at <= now, mine)
        eligible = and_(state_is(*CASE_STATES), free, ~labeled_by(adjudicator))
        pick = (
            select(ITEMS.c.id)
            .where(eligible)
            .order_by(mine.desc(), ITEMS.c.created_at, ITEMS.c.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        lease = now + self.queue.lease
        stmt = (
            update(ITEMS)
            .where(ITEMS.c.id == pick, eligible)
            .values(lease_owner=adjudicator, lease_expires_at=lease, leased_at=now)
            .returning(ITEMS.c.id)
        )
        return next(iter(session.execute(stmt).scalars()), None)

    def _case(self, session: Session, item_id: str) -> AdjudicationCase:
        view = self.queue.view(session, item_id)
        rows = session.execute(select(LABELS).where(LABELS.c.review_item_id == item_id).order_by(LABELS.c.id))
        labels = [LabelView.model_validate(r, from_attributes=True) for r in rows]
        scored = [lb.scores for lb in labels if lb.skipped_reason is None and not lb.flagged]
        item = session.get(ReviewItem, item_id)
        assert item is not None
        return AdjudicationCase(item=view, state=item.state, labels=labels, split=disagreement(scored))
