"""Verdict and label aggregates kept between scrapes, so a scrape reads what changed, not the whole store.

Verdicts are aggregated per bucket of creation time: 5-minute slots for the last hours, whole hours before.
The first reading groups every verdict once; after that a scrape asks which slots hold verdicts written
since the last reading (an index range on `updated_at`) and aggregates again only those slots (index ranges
on `created_at`), or the whole hour for a change further back. Aggregating a bucket again is idempotent, so
the reads overlap by `OVERLAP` to catch transactions that committed late with an earlier `updated_at`. A
re-judged verdict keeps its `created_at` and gets a new `updated_at`: its bucket is read again, so a verdict
that turned from unscored to scored moves between series instead of being counted twice. Slots older than
`RECENT` are merged into their hour. Deleting a verdict leaves no trace to find (nothing in judgewatch
deletes them): a restarted collector reads everything again. Labels are insert-only: they are counted once
each by remembering the highest label id read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from judgewatch.metrics import queries
from judgewatch.metrics.queries import HOUR, Count, VerdictGroup
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OVERLAP = timedelta(minutes=2)  # longer than any write transaction between `utcnow()` and its commit
SLOT = timedelta(minutes=5)
RECENT = timedelta(hours=2)  # slots are kept this long (whole hours), then merged into their hour

Key = tuple[datetime, timedelta]  # (bucket start, bucket width)


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def merge_groups(groups: Iterable[VerdictGroup]) -> list[VerdictGroup]:
    """Groups with the same label values summed into one."""
    merged: dict[tuple[object, ...], VerdictGroup] = {}
    for g in groups:
        key = (g.judge, g.rubric, g.tier, g.source, g.status, g.reason, g.fallback_chain)
        old = merged.get(key)
        merged[key] = g if old is None else replace(
            old,
            count=old.count + g.count,
            latency_sum_s=old.latency_sum_s + g.latency_sum_s,
            latency_buckets=tuple(a + b for a, b in zip(old.latency_buckets, g.latency_buckets, strict=True)),
            prompt_tokens=old.prompt_tokens + g.prompt_tokens,
            completion_tokens=old.completion_tokens + g.completion_tokens,
            cached_tokens=old.cached_tokens + g.cached_tokens,
        )  # fmt: skip
    return list(merged.values())


class VerdictAggregate:
    """Verdict groups per bucket of creation time, refreshed from what changed since the last reading."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.buckets: dict[Key, list[VerdictGroup]] = {}
        self.watermark: datetime | None = None
        self.last_read_buckets = 0
        self._now = clock

    def refresh(self, *, session: Session) -> None:
        recent_from = _hour(self._now() - RECENT)
        if self.watermark is None:
            self._read_all(session, recent_from)
            return
        slots, newest = queries.changed_buckets(session=session, since=self.watermark - OVERLAP, width=SLOT)
        hours = {_hour(s) for s in slots if s < recent_from or (_hour(s), HOUR) in self.buckets}
        slots = {s for s in slots if _hour(s) not in hours}
        fresh: dict[Key, list[VerdictGroup]] = {(at, HOUR): [] for at in hours}
        fresh.update({(at, SLOT): [] for at in slots})
        for width, starts in ((HOUR, hours), (SLOT, slots)):
            for at, group in queries.verdict_groups(session=session, width=width, starts=sorted(starts)):
                fresh.setdefault((at, width), []).append(group)
        for key in [k for k in self.buckets if k[1] == SLOT and _hour(k[0]) in hours]:
            del self.buckets[key]  # the hour's new reading covers its slots
        self._replace(fresh)
        self._merge_old_slots(recent_from)
        if newest is not None and newest > self.watermark:
            self.watermark = newest
        self.last_read_buckets = len(fresh)

    def _read_all(self, session: Session, recent_from: datetime) -> None:
        # The watermark is taken before the full read: rows written during it are read again next time.
        _, newest = queries.changed_buckets(session=session, since=None, width=HOUR)
        fresh: dict[Key, list[VerdictGroup]] = defaultdict(list)
        for at, group in queries.verdict_groups(session=session, width=HOUR, created_before=recent_from):
            fresh[(at, HOUR)].append(group)
        for at, group in queries.verdict_groups(session=session, width=SLOT, created_from=recent_from):
            fresh[(at, SLOT)].append(group)
        self.buckets = {}
        self._replace(fresh)
        self.watermark = newest or EPOCH
        self.last_read_buckets = len(fresh)

    def _replace(self, fresh: dict[Key, list[VerdictGroup]]) -> None:
        for key, groups in fresh.items():
            if groups:
                self.buckets[key] = groups
            else:
                self.buckets.pop(key, None)

    def _merge_old_slots(self, recent_from: datetime) -> None:
        old = [key for key in self.buckets if key[1] == SLOT and key[0] < recent_from]
        by_hour: dict[datetime, list[VerdictGroup]] = defaultdict(list)
        for key in old:
            by_hour[_hour(key[0])].extend(self.buckets.pop(key))
        for hour, groups in by_hour.items():
            self.buckets[(hour, HOUR)] = merge_groups([*self.buckets.get((hour, HOUR), []), *groups])

    def groups(self) -> list[VerdictGroup]:
        return [group for groups in self.buckets.values() for group in groups]


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
