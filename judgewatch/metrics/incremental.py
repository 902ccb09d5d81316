"""Verdict and label aggregates kept between scrapes, so a scrape reads what changed, not the whole store.

Verdicts are aggregated per hour of creation. The first reading groups every verdict once; after that a
scrape asks which hours hold verdicts written since the last reading (an index range on `updated_at`) and
re-aggregates only those hours (index ranges on `created_at`). Re-aggregating an hour is idempotent, so the
reads overlap by `OVERLAP` to catch transactions that committed late with an earlier `updated_at`. A
re-judged verdict keeps its `created_at` and gets a new `updated_at`: its hour is re-read, so a verdict that
turned from unscored to scored moves between series instead of being counted twice. Deleting a verdict
leaves no trace to find (nothing in judgewatch deletes them): a restarted collector reads everything again.
Labels are insert-only: they are counted once each by remembering the highest label id read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from judgewatch.metrics import queries
from judgewatch.metrics.queries import Count, VerdictGroup

logger = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OVERLAP = timedelta(minutes=2)  # longer than any write transaction between `utcnow()` and its commit


class VerdictAggregate:
    """Verdict groups per hour of creation, refreshed from what changed since the last reading."""

    def __init__(self) -> None:
        self.hours: dict[datetime, list[VerdictGroup]] = {}
        self.watermark: datetime | None = None
        self.last_refreshed_hours = 0

    def refresh(self, *, session: Session) -> None:
        if self.watermark is None:
            self._read_all(session)
            return
        changed, newest = queries.changed_buckets(session=session, since=self.watermark - OVERLAP)
        fresh: dict[datetime, list[VerdictGroup]] = {hour: [] for hour in changed}
        for hour, group in queries.verdict_groups(session=session, hours=sorted(changed)):
            fresh.setdefault(hour, []).append(group)
        self._replace(fresh)
        if newest is not None and newest > self.watermark:
            self.watermark = newest
        self.last_refreshed_hours = len(changed)

    def _read_all(self, session: Session) -> None:
        # The watermark is taken before the full read: rows written during it are re-read next time.
        _, newest = queries.changed_buckets(session=session, since=None)
        fresh: dict[datetime, list[VerdictGroup]] = defaultdict(list)
        for hour, group in queries.verdict_groups(session=session):
            fresh[hour].append(group)
        self.hours = {}
        self._replace(fresh)
        self.watermark = newest or EPOCH
        self.last_refreshed_hours = len(fresh)

    def _replace(self, fresh: dict[datetime, list[VerdictGroup]]) -> None:
        for hour, groups in fresh.items():
            if groups:
                self.hours[hour] = groups
            else:
                self.hours.pop(hour, None)

    def groups(self) -> list[VerdictGroup]:
        return [group for groups in self.hours.values() for group in groups]


class LabelCounter:
    """Scoring labels per tier, counted once each (labels are never changed or deleted)."""

    def __init__(self) -> None:
        self.counts: dict[str, float] = defaultdict(float)
        self.top_id = 0

    def refresh(self, *, session: Session) -> None:
        rows, self.top_id = queries.review_labels(session=session, after_id=self.top_id)
        for row in rows:
            self.counts[row.labels[0]] += row.value

    def rows(self) -> list[Count]:
        return [Count((tier,), value) for tier, value in sorted(self.counts.items())]
