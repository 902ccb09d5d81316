"""One labeling action on a held item (submit, skip, flag): check the account and the lease, read what the label
is validated against, then store the label and end the lease together (docs/review_queue.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from psycopg.errors import UniqueViolation
from psycopg.types.json import Jsonb
from sqlalchemy import Engine, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from judgewatch.review.sql import HELD, HELD_READ, HELD_ROWS, IS_ACTIVE, ITEM, ITEMS, LABEL_AND_RELEASE, LABELS
from judgewatch.review.views import LeaseError, NotAllowed, has_references
from judgewatch.storage.db import session_scope
from judgewatch.storage.direct import fetch, is_direct
from judgewatch.storage.review import ItemState

# End the caller's lease, guarded again by the lease condition.
RELEASE = (
    update(ITEMS)
    .where(ITEMS.c.id == ITEM, HELD)
    .values(state=bindparam("new_state"), labels_done=bindparam("done"))
    .values(lease_owner=None, lease_expires_at=None, leased_at=None)
)
OTHER_LABELS = select(LABELS.c.scores).where(
    LABELS.c.review_item_id == ITEM, LABELS.c.skipped_reason.is_(None), LABELS.c.flagged.is_(False)
)


def check_lease(item: Any, reviewer: str, item_id: str, now: datetime) -> None:
    """Refuse unless the account is active and `item` is leased to `reviewer` with time left on the lease."""
    if not item.active:
        raise NotAllowed(f"{reviewer!r} is not an active reviewer")
    if item.id is None:
        raise LeaseError(f"no review item {item_id}")
    if item.state != ItemState.leased or item.lease_owner != reviewer:
        raise LeaseError(f"item {item_id} is not leased to {reviewer}")
    if item.lease_expires_at is None or item.lease_expires_at <= now:
        raise LeaseError(f"your lease on item {item_id} expired: take the next item")


def label_row(item: Any, reviewer: str, now: datetime, rubric_version_shown: str, **fields: Any) -> dict[str, Any]:
    """A review_label row for `item`; `fields` are scores, skipped_reason, flagged, comment, via."""
    started = item.leased_at or now
    return {
        "review_item_id": item.id,
        "reviewer": reviewer,
        "scores": fields.get("scores") or {},
        "skipped_reason": fields.get("skipped_reason"),
        "flagged": fields.get("flagged", False),
        "comment": fields.get("comment", "").strip(),
        "started_at": started,
        "submitted_at": now,
        "duration_ms": max(0, int((now - started).total_seconds() * 1000)),
        "rubric_version_shown": rubric_version_shown,
        "via": fields["via"],
    }


class Held:
    """A checked lease: `item` (id, rubric, labels, lease), `has_refs`, `now` (the clock after the check)."""

    def __init__(self, item: Any, has_refs: bool, now: datetime) -> None:
        self.item, self.has_refs, self.now = item, has_refs, now

    def others(self) -> list[dict[str, int]]:
        """The scores of the item's other counting labels (needed only when this label completes the item)."""
        raise NotImplementedError

    def store(self, label: dict[str, Any], *, reviewer: str, state: ItemState, labels_done: int) -> Any:
        """Store the label and end the lease; the verdict row to reveal (with `tier`). LeaseError if refused."""
        raise NotImplementedError


class _DirectHeld(Held):
    def __init__(self, engine: Engine, item: Any, now: datetime) -> None:
        super().__init__(item, has_references(item), now)
        self.engine = engine

    def others(self) -> list[dict[str, int]]:
        return [dict(s) for s in self.item.others or []]

    def store(self, label: dict[str, Any], *, reviewer: str, state: ItemState, labels_done: int) -> Any:
        params = {
            **label,
            "scores": Jsonb(label["scores"]),
            "item": self.item.id,
            "who": reviewer,
            "now": self.now,
            "new_state": state.value,
            "done": labels_done,
            "done_before": self.item.labels_done,
            "leased_at": self.item.leased_at,
        }
        try:
            rows = fetch(engine=self.engine, sql=LABEL_AND_RELEASE, params=params, repeatable=False)
            shown = rows[0] if rows else None
        except UniqueViolation as exc:
            raise LeaseError(f"{reviewer} has already labeled item {self.item.id}") from exc
        if shown is None:
            raise LeaseError(f"your lease on item {self.item.id} is gone: take the next item")
        return shown


class StaleLease(Exception):
    """A remembered lease no longer matches the store (or cannot answer): read it instead."""


@dataclass(frozen=True)
class LeaseMemo:
    """What "lease next" returned about the item it leased: enough to validate a label and guard its write
    without reading the item again. Every fact the write depends on is re-checked by the write itself."""

    id: str
    rubric_name: str
    rubric_version: str
    labels_done: int
    labels_needed: int
    leased_at: datetime
    has_refs: bool

    @classmethod
    def of(cls, row: Any) -> LeaseMemo:
        """The memo of a "lease next" row: its columns of the same names, and whether it carries references."""
        taken = {f.name: getattr(row, f.name) for f in fields(cls) if f.name != "has_refs"}
        return cls(**taken, has_refs=has_references(row))


class RememberedHeld(_DirectHeld):
    """The lease "lease next" returned, unchecked: its one write statement is guarded by the lease, the account and the
    memo's label count and lease start, and raises StaleLease when any of them no longer holds (PostgreSQL only)."""

    def __init__(self, engine: Engine, memo: LeaseMemo, now: datetime) -> None:
        Held.__init__(self, memo, memo.has_refs, now)
        self.engine = engine

    def others(self) -> list[dict[str, int]]:
        raise StaleLease("the other labels are not remembered")

    def store(self, label: dict[str, Any], *, reviewer: str, state: ItemState, labels_done: int) -> Any:
        try:
            return super().store(label, reviewer=reviewer, state=state, labels_done=labels_done)
        except LeaseError as exc:
            if isinstance(exc.__cause__, UniqueViolation):
                raise
            raise StaleLease(str(exc)) from exc


class _SessionHeld(Held):
    def __init__(self, session: Session, item: Any, now: datetime) -> None:
        super().__init__(item, has_references(item), now)
        self.session = session

    def others(self) -> list[dict[str, int]]:
        return [dict(s) for s in self.session.execute(OTHER_LABELS, {"item": self.item.id}).scalars()]

    def store(self, label: dict[str, Any], *, reviewer: str, state: ItemState, labels_done: int) -> Any:
        try:
            self.session.execute(insert(LABELS), [label])
        except IntegrityError as exc:  # the whole transaction rolls back: no label, lease untouched
            raise LeaseError(f"{reviewer} has already labeled item {self.item.id}") from exc
        params = {"item": self.item.id, "who": reviewer, "now": self.now, "new_state": state.value}
        result: Any = self.session.execute(RELEASE, {**params, "done": labels_done})
        if result.rowcount != 1:
            raise LeaseError(f"your lease on item {self.item.id} is gone: take the next item")
        return self.item  # HELD_ROWS carries the verdict and the tier


@contextmanager
def holding(engine: Engine, reviewer: str, item_id: str, *, clock: Callable[[], datetime]) -> Iterator[Held]:
    """The checked lease of `item_id` for one labeling action (NotAllowed, LeaseError when refused)."""
    if is_direct(engine):
        row = fetch(engine=engine, sql=HELD_READ, params={"who": reviewer, "item": item_id}, repeatable=True)[0]
        now = clock()
        check_lease(row, reviewer, item_id, now)
        yield _DirectHeld(engine, row, now)
        return
    with session_scope(engine, write=True) as session:
        found: Any = session.execute(HELD_ROWS, {"item": item_id, "who": reviewer}).first()
        if found is None:  # no such item: the account check still comes first
            active = session.execute(IS_ACTIVE, {"who": reviewer}).scalar()
            found = SimpleNamespace(id=None, active=active)  # what HELD_ROWS would say of it
        now = clock()
        check_lease(found, reviewer, item_id, now)
        yield _SessionHeld(session, found, now)
