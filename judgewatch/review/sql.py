"""The SQL of the queue's hot paths, built once: item states as literals, "labeled by", "leasable", the picks.

Statements take bound parameters (`who`, `now`, `until`, `item`) instead of being rebuilt per call: leasing
and submitting run for every key press, and building SQLAlchemy expressions costs more than running them.
State values are inlined as literals so both planners can match the partial indexes on `state`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    and_,
    bindparam,
    exists,
    func,
    literal_column,
    or_,
    select,
    update,
)

from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import ItemState, Reviewer, ReviewItem, ReviewLabel
from judgewatch.storage.verdicts import VerdictRecord

ITEMS = table(ReviewItem)
LABELS = table(ReviewLabel)
REVIEWERS = table(Reviewer)
INTERACTIONS = table(Interaction)
VERDICTS = table(VerdictRecord)

WHO: BindParameter[Any] = bindparam("who")
NOW: BindParameter[Any] = bindparam("now", type_=ITEMS.c.lease_expires_at.type)
UNTIL: BindParameter[Any] = bindparam("until", type_=ITEMS.c.lease_expires_at.type)
ITEM: BindParameter[Any] = bindparam("item")


def state_is(*states: ItemState) -> ColumnElement[bool]:
    """`state IN ('a', ...)` with literal values, so the planners can use the partial indexes."""
    literals: list[ColumnElement[str]] = [literal_column(f"'{s.value}'") for s in states]
    return ITEMS.c.state == literals[0] if len(literals) == 1 else ITEMS.c.state.in_(literals)


def labeled_by(reviewer: str | BindParameter[Any]) -> ColumnElement[bool]:
    return exists().where(LABELS.c.review_item_id == ITEMS.c.id, LABELS.c.reviewer == reviewer)


def leasable(reviewer: str | BindParameter[Any], now: datetime | BindParameter[Any]) -> ColumnElement[bool]:
    """Free (available, or leased with the lease run out) and never labeled or skipped by `reviewer`."""
    expired = and_(state_is(ItemState.leased), ITEMS.c.lease_expires_at <= now)
    return and_(or_(state_is(ItemState.available), expired), ~labeled_by(reviewer))


IS_ACTIVE = select(REVIEWERS.c.active).where(REVIEWERS.c.name == WHO)

HELD = and_(state_is(ItemState.leased), ITEMS.c.lease_owner == WHO, ITEMS.c.lease_expires_at > NOW)
RENEW_HELD = update(ITEMS).where(HELD).values(lease_expires_at=UNTIL).returning(ITEMS.c.id)

# Expired leases first (their items have waited longest), then the oldest available item; rows another
# transaction holds locked are skipped (PostgreSQL; SQLite renders no FOR UPDATE and holds its write lock).
FREE_EXPIRED = select(ITEMS.c.id).where(state_is(ItemState.leased), ITEMS.c.lease_expires_at <= NOW, ~labeled_by(WHO))
FREE_AVAILABLE = select(ITEMS.c.id).where(state_is(ItemState.available), ~labeled_by(WHO))
PICK_EXPIRED = FREE_EXPIRED.order_by(ITEMS.c.lease_expires_at).limit(1).with_for_update(skip_locked=True)
PICK_AVAILABLE = FREE_AVAILABLE.order_by(ITEMS.c.created_at, ITEMS.c.id).limit(1).with_for_update(skip_locked=True)
PICK_GIVEN = select(ITEMS.c.id).where(ITEMS.c.id == ITEM, leasable(WHO, NOW)).with_for_update(skip_locked=True)
# The next free item in one expression: an expired lease, else the oldest available item (PostgreSQL evaluates
# the second pick only when the first finds nothing).
PICK_NEXT = func.coalesce(PICK_EXPIRED.scalar_subquery(), PICK_AVAILABLE.scalar_subquery())


def _claim(pick: Any) -> Any:
    """The guarded write: re-checks "leasable" on the locked row, so an item never has two holders."""
    return (
        update(ITEMS)
        .where(ITEMS.c.id == pick, leasable(WHO, NOW))
        .values(state=ItemState.leased.value, lease_owner=WHO, lease_expires_at=UNTIL, leased_at=NOW)
        .returning(ITEMS.c.id)
    )


CLAIM = _claim(ITEM)  # a picked (and locked) row
CLAIM_NEXT = _claim(PICK_NEXT)  # pick, lock and lease the next free row in one round trip

# The screen's rows as plain columns (no ORM objects on the hot path), one round trip: the item with its
# interaction; the locking variant (submit, skip, flag) also reads the verdict to reveal and the account check.
VIEW_COLUMNS = (
    ITEMS.c.id,
    ITEMS.c.rubric_name,
    ITEMS.c.rubric_version,
    ITEMS.c.lease_expires_at,
    INTERACTIONS.c.question,
    INTERACTIONS.c.answer,
    INTERACTIONS.c.messages,
    INTERACTIONS.c.reference_answer,
    INTERACTIONS.c.reference_facts,
    INTERACTIONS.c.context,
    INTERACTIONS.c.language,
)
ITEM_JOIN = ITEMS.join(INTERACTIONS, ITEMS.c.interaction_id == INTERACTIONS.c.id)
VIEW_ROWS = select(*VIEW_COLUMNS).select_from(ITEM_JOIN).where(ITEMS.c.id == ITEM)
HELD_ROWS = (
    select(
        *VIEW_COLUMNS,
        ITEMS.c.state,
        ITEMS.c.lease_owner,
        ITEMS.c.leased_at,
        ITEMS.c.labels_done,
        ITEMS.c.labels_needed,
        INTERACTIONS.c.tier,
        VERDICTS.c.scores,
        VERDICTS.c.overall,
        VERDICTS.c.status,
        VERDICTS.c.unscored_reason,
        VERDICTS.c.reason,
        VERDICTS.c.judge_name,
        IS_ACTIVE.scalar_subquery().label("active"),
    )
    .select_from(ITEM_JOIN.join(VERDICTS, ITEMS.c.verdict_id == VERDICTS.c.id))
    .where(ITEMS.c.id == ITEM)
    .with_for_update(of=ITEMS)
)
