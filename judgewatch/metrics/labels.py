"""Review labels counted between scrapes: each label once, by remembering the highest label id read.

Labels are insert-only (never changed or deleted), so a scrape reads only the labels added since the last one.
(Verdicts need no such state: their counts are kept at write time, `judgewatch.storage.verdict_counts`.)
"""

from __future__ import annotations

import logging
from collections import defaultdict

from sqlmodel import Session

from judgewatch.metrics import queries
from judgewatch.metrics.queries import Count

logger = logging.getLogger(__name__)


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
