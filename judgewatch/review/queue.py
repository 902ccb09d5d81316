"""The review queue: server-side leases with expiry, blind labels, skips, flags and progress.

Every action checks, in its own write transaction, that the caller is an active reviewer and (submit, skip, flag)
that the item is leased to the caller with time left; the statements (`review.sql`) lease no item to two reviewers
(docs/review_queue.md, "The queue's statements")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, update
from sqlmodel import Session

from judgewatch.contract.pii import Scrubber, scrub_content
from judgewatch.review.holding import Held, LeaseMemo, RememberedHeld, StaleLease, holding, label_row
from judgewatch.review.labels import disagreement
from judgewatch.review.rubrics import RubricResolver
from judgewatch.review.sql import (
    CLAIM,
    CLAIM_NEXT,
    IS_ACTIVE,
    ITEMS,
    LEASE_NEXT,
    PICK_GIVEN,
    PROGRESS,
    PROGRESS_PG,
    RENEW_HELD,
    VIEW_ROWS,
    state_is,
)
from judgewatch.review.views import (
    LeasedItem,
    LeaseError,
    NotAllowed,
    Progress,
    Revealed,
    leased_item,
    revealed,
    validate_scores,
)
from judgewatch.storage.db import session_scope
from judgewatch.storage.direct import fetch, is_direct
from judgewatch.storage.review import ItemState
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ReviewQueue:
    """The reviewers' side of the queue; one instance per app, safe to share between threads."""

    def __init__(
        self,
        engine: Engine,
        *,
        lease_seconds: int = 600,
        rubrics_dir: Path | None = None,
        clock: Callable[[], datetime] = utcnow,
        scrub_pii: bool = True,
    ) -> None:
        self.engine = engine
        # Content stored before it could be scrubbed (or by another path) is scrubbed again on the way to a screen.
        self.scrubber = Scrubber() if scrub_pii else None
        self.lease = timedelta(seconds=lease_seconds)
        self.rubrics = RubricResolver(rubrics_dir)
        self.clock = clock
        self.direct = is_direct(engine)  # PostgreSQL: the key presses go straight through psycopg
        self._memos: dict[str, LeaseMemo] = {}  # reviewer -> the lease "lease next" last gave them (PostgreSQL)

    def lease_next(self, reviewer: str) -> LeasedItem | None:
        """The item this reviewer already holds (lease renewed), else the oldest free one; None when empty."""
        if self.direct:
            return self._lease_next_direct(reviewer)
        with session_scope(self.engine, write=True) as session:
            self._require_active(session, reviewer)
            item_id = self._renew_held(session, reviewer) or self._claim(session, reviewer)
            return self.view(session, item_id) if item_id else None

    def _lease_next_direct(self, reviewer: str) -> LeasedItem | None:
        """PostgreSQL: account check, renewal or pick-and-lease, and the screen's columns in one statement
        (repeating it is harmless: a second run renews the same lease)."""
        for _ in range(3):  # under contention a pick can come back empty while other rows are free: try again
            now = self.clock()
            params = {"who": reviewer, "now": now, "until": now + self.lease}
            rows = fetch(engine=self.engine, sql=LEASE_NEXT, params=params, repeatable=True)
            row = rows[0] if rows else None  # no row: no such account
            if row is None or not row.active:
                raise NotAllowed(f"{reviewer!r} is not an active reviewer")
            if row.id is not None:
                logger.debug("%s leased %s", reviewer, row.id)
                shown = self._shown(row)
                self._memos[reviewer] = LeaseMemo.of(row)
                return shown
        return None

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
        held = session.execute(RENEW_HELD, {"who": reviewer, "now": now, "until": now + self.lease}).scalars()
        return next(iter(held), None)

    def _claim(self, session: Session, reviewer: str, *, item_id: str | None = None) -> str | None:
        """Lease the given item, or the next free one, with a guarded UPDATE of a row locked by its pick. The next item
        is picked, locked (skipping rows others hold locked) and leased in one statement; a given item is locked first,
        then leased with the clock read after the lock. Either way the UPDATE re-checks "leasable" on the locked row, so
        a row that changed under us is never leased twice."""
        if item_id is not None:
            picked = session.execute(PICK_GIVEN, {"who": reviewer, "now": self.clock(), "item": item_id}).scalar()
            if picked is None:
                return None
            now = self.clock()
            params = {"who": reviewer, "now": now, "until": now + self.lease, "item": picked}
            return next(iter(session.execute(CLAIM, params).scalars()), None)
        for _ in range(3):  # under contention a pick can come back empty while other rows are free: try again
            now = self.clock()
            claimed = session.execute(CLAIM_NEXT, {"who": reviewer, "now": now, "until": now + self.lease})
            leased = next(iter(claimed.scalars()), None)
            if leased is not None:
                logger.debug("%s leased %s", reviewer, leased)
                return str(leased)
        return None

    def submit(
        self,
        reviewer: str,
        item_id: str,
        scores: Mapping[str, int | None],
        *,
        rubric_version_shown: str,
        comment: str = "",
        via: str = "ui",
        partial: bool = False,
    ) -> Revealed:
        """Store a full label for an item leased to `reviewer`; returns the judge's verdict to show beside it. `partial`
        accepts a label of some criteria only: a dataset's annotation speaks to one criterion, and the app never sends
        it (people score every criterion)."""

        def act(held: Held) -> Revealed:
            item = held.item
            rubric = self.rubrics.get(item.rubric_name)
            clean = validate_scores(rubric, scores, has_refs=held.has_refs, partial=partial)
            done = item.labels_done + 1
            if done < item.labels_needed:
                state = ItemState.available
            elif item.labels_done == 0:
                state = ItemState.done  # the only label: nothing to disagree with
            else:
                split = disagreement([*held.others(), clean])
                state = ItemState.adjudication if split else ItemState.done
            label = label_row(item, reviewer, held.now, rubric_version_shown, via=via, scores=clean, comment=comment)
            shown = held.store(label, reviewer=reviewer, state=state, labels_done=done)
            logger.info("%s labeled %s (%s)", reviewer, item_id, state.value)
            return revealed(item_id, clean, shown, shown.tier, state.value)

        return self._labeling(reviewer, item_id, act)

    def skip(
        self, reviewer: str, item_id: str, reason: str, *, rubric_version_shown: str = "", via: str = "ui"
    ) -> None:
        """Give the item back to the others with a reason; this reviewer will not be offered it again."""
        reason = reason.strip()
        if not reason:
            raise LeaseError("say why you skip this item")

        def act(held: Held) -> None:
            item = held.item
            version = rubric_version_shown or item.rubric_version
            label = label_row(item, reviewer, held.now, version, via=via, skipped_reason=reason)
            held.store(label, reviewer=reviewer, state=ItemState.available, labels_done=item.labels_done)

        self._labeling(reviewer, item_id, act)

    def flag(
        self,
        reviewer: str,
        item_id: str,
        comment: str,
        *,
        scores: Mapping[str, int | None] | None = None,
        rubric_version_shown: str = "",
        via: str = "ui",
    ) -> None:
        """Send the item to an expert (the adjudication view), keeping whatever scores were already given."""

        def act(held: Held) -> None:
            item = held.item
            rubric = self.rubrics.get(item.rubric_name)
            clean = validate_scores(rubric, scores or {}, has_refs=held.has_refs, partial=True)
            version = rubric_version_shown or item.rubric_version
            label = label_row(item, reviewer, held.now, version, via=via, scores=clean, comment=comment, flagged=True)
            held.store(label, reviewer=reviewer, state=ItemState.flagged, labels_done=item.labels_done)

        self._labeling(reviewer, item_id, act)

    def _labeling(self, reviewer: str, item_id: str, act: Callable[[Held], T]) -> T:
        """Run one labeling action: on the lease "lease next" just returned (one write statement), or, when
        there is none or the store no longer agrees with it, on the item read and checked again."""
        memo = self._memos.pop(reviewer, None)
        if memo is not None and memo.id == item_id:
            try:
                return act(RememberedHeld(self.engine, memo, self.clock()))
            except StaleLease:
                logger.debug("%s: the remembered lease on %s is stale, reading it", reviewer, item_id)
        with holding(self.engine, reviewer, item_id, clock=self.clock) as held:
            return act(held)

    def release(self, reviewer: str, item_id: str) -> bool:
        """Give a held item back unlabeled (no skip recorded); False when the caller did not hold it."""
        with session_scope(self.engine, write=True) as session:
            result: Any = session.execute(
                update(ITEMS)
                .where(ITEMS.c.id == item_id, state_is(ItemState.leased), ITEMS.c.lease_owner == reviewer)
                .values(state=ItemState.available.value, lease_owner=None, lease_expires_at=None, leased_at=None)
            )
            return bool(result.rowcount == 1)

    def progress(self, reviewer: str, *, cap: int = 100) -> Progress:
        """Labels given today, and items left for this reviewer (counted up to `cap`)."""
        now = self.clock()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        params = {"who": reviewer, "now": now, "midnight": midnight, "limit": cap + 1}
        if self.direct:
            row = fetch(engine=self.engine, sql=PROGRESS_PG, params=params, repeatable=True)[0]
        else:
            with session_scope(self.engine) as session:
                row = session.execute(PROGRESS, params).one()
        left = row.free + (1 if row.holding else 0)
        held = row.holding
        return Progress(done_today=row.done_today, left_in_queue=min(left, cap), more_left=left > cap, holding=held)

    def _require_active(self, session: Session, reviewer: str) -> None:
        if not session.execute(IS_ACTIVE, {"who": reviewer}).scalar():
            raise NotAllowed(f"{reviewer!r} is not an active reviewer")

    def view(self, session: Session, item_id: str) -> LeasedItem:
        """The blind screen content of an item (no verdict, no tier), inside the caller's transaction."""
        row = session.execute(VIEW_ROWS, {"item": item_id}).first()
        if row is None:
            raise LeaseError(f"no review item {item_id}")
        return self._shown(row)

    def _shown(self, row: Any) -> LeasedItem:
        shown = leased_item(row, self.rubrics.get(row.rubric_name))
        return scrub_content(shown, self.scrubber) if self.scrubber is not None else shown
