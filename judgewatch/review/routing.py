"""Routing: which stored verdicts become review items, decided by a hash of the verdict id.

- uniform: a share (`review_share`, default 10%) of SCORED verdicts, chosen by a deterministic hash, so
  re-running routes exactly the same ones on any machine; these items are a simple random sample.
- targeted, optional: a share of unscored verdicts, and a share of borderline ones (overall score within
  `borderline_margin` of the rubric's pass threshold, or of the scale's midpoint when it has none).
Each pick uses its own independent hash, so an item's `inclusion_probability` is exact: the chance that the
whole design routes that verdict (for a borderline verdict, 1 - (1 - uniform)(1 - borderline)). Weighting
labels by 1/p gives unbiased estimates over all verdicts. Of routed items, `double_label_share` (again by
hash) need two reviewers. Routing the same verdict again never creates a second item or resets one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, select
from sqlmodel import Session

from judgewatch.contract.rubric import Rubric, RubricError
from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.review.rubrics import RubricResolver
from judgewatch.settings import Settings
from judgewatch.storage.db import table, upsert
from judgewatch.storage.review import ItemState, PickReason, ReviewItem, review_item_id
from judgewatch.storage.types import utcnow
from judgewatch.storage.verdicts import VerdictRecord, is_current

logger = logging.getLogger(__name__)


def _draw(salt: str, verdict_id: str) -> float:
    """The verdict's draw for one routing decision: the same verdict gets the same draw everywhere, forever."""
    return hash_unit(verdict_id, salt, variant=UnitHash.LABELED)


@dataclass(frozen=True, slots=True)
class RoutingPolicy:
    review_share: float = 0.10
    double_label_share: float = 0.10
    unscored_share: float = 0.0
    borderline_share: float = 0.0
    borderline_margin: float = 0.5

    def __post_init__(self) -> None:
        for name in ("review_share", "double_label_share", "unscored_share", "borderline_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        review_share: float | None = None,
        double_label_share: float | None = None,
        unscored_share: float = 0.0,
        borderline_share: float = 0.0,
    ) -> RoutingPolicy:
        """The settings' shares, each replaced by the one given (the CLI's and the sampling flow's options)."""
        return cls(
            review_share=settings.review_share if review_share is None else review_share,
            double_label_share=settings.double_label_share if double_label_share is None else double_label_share,
            unscored_share=unscored_share,
            borderline_share=borderline_share,
        )


@dataclass(frozen=True, slots=True)
class Route:
    pick_reason: PickReason
    inclusion_probability: float
    labels_needed: int


def is_borderline(overall: float | None, rubric: Rubric | None, margin: float) -> bool:
    if overall is None or rubric is None:
        return False
    line = rubric.pass_threshold if rubric.pass_threshold is not None else (rubric.scale.min + rubric.scale.max) / 2
    return abs(overall - line) <= margin


def decide(
    verdict_id: str, *, status: str, overall: float | None, rubric: Rubric | None, policy: RoutingPolicy
) -> Route | None:
    """The routing decision for one verdict, or None when it is not routed."""
    labels = 2 if _draw("double", verdict_id) < policy.double_label_share else 1
    if status != VerdictStatus.scored:
        if policy.unscored_share > 0 and _draw("unscored", verdict_id) < policy.unscored_share:
            return Route(PickReason.unscored, policy.unscored_share, labels)
        return None
    uniform = _draw("uniform", verdict_id) < policy.review_share
    if policy.borderline_share > 0 and is_borderline(overall, rubric, policy.borderline_margin):
        p = 1 - (1 - policy.review_share) * (1 - policy.borderline_share)
        if uniform:
            return Route(PickReason.uniform, p, labels)
        if _draw("borderline", verdict_id) < policy.borderline_share:
            return Route(PickReason.borderline, p, labels)
        return None
    return Route(PickReason.uniform, policy.review_share, labels) if uniform else None


@dataclass(frozen=True, slots=True)
class RoutingReport:
    considered: int
    routed: int  # routed by this design (new or already present)
    created: int  # review items that did not exist before
    by_reason: dict[str, int]


def route_verdicts(
    *,
    session: Session,
    policy: RoutingPolicy,
    rubrics: RubricResolver | None = None,
    run_id: str | None = None,
    verdict_ids: Sequence[str] | None = None,
) -> RoutingReport:
    """Create the review items for the stored verdicts of one run (or the given ids, or all of them).

    Only current verdicts are routed, and an interaction at most once per rubric version: not when it already
    has a review item under that version (from a verdict superseded since, or another judge's).
    """
    rubrics = rubrics or RubricResolver()
    tbl, items = table(VerdictRecord), table(ReviewItem)
    has_other_item = exists().where(
        and_(
            items.c.interaction_id == tbl.c.interaction_id,
            items.c.rubric_version == tbl.c.rubric_version,
            items.c.verdict_id != tbl.c.id,  # its own item is found again: routing stays idempotent
        )
    )
    query = select(tbl.c.id, tbl.c.interaction_id, tbl.c.status, tbl.c.overall, tbl.c.rubric_name, tbl.c.rubric_version)
    query = query.where(is_current(), ~has_other_item)
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    if verdict_ids is not None:
        query = query.where(tbl.c.id.in_(list(verdict_ids)))
    cache: dict[str, Rubric | None] = {}
    now = utcnow()
    considered, rows, reasons = 0, [], Counter[str]()
    seen: set[tuple[str, str]] = set()
    for vid, iid, status, overall, rubric_name, rubric_version in session.execute(query.order_by(tbl.c.id)):
        if (iid, rubric_version) in seen:
            continue  # another current verdict of this interaction (another judge's) is routed already
        seen.add((iid, rubric_version))
        considered += 1
        if rubric_name not in cache:
            try:
                cache[rubric_name] = rubrics.get(rubric_name)
            except RubricError:
                logger.warning("rubric %s not found: no borderline picks for its verdicts", rubric_name)
                cache[rubric_name] = None
        route = decide(vid, status=status, overall=overall, rubric=cache[rubric_name], policy=policy)
        if route is None:
            continue
        reasons[route.pick_reason.value] += 1
        rows.append(item_row(vid, iid, rubric_name, rubric_version, route, now=now))
    created = insert_review_items(session=session, rows=rows)
    logger.info("routing: %d verdicts considered, %d routed, %d new items", considered, len(rows), created)
    return RoutingReport(considered=considered, routed=len(rows), created=created, by_reason=dict(reasons))


def item_row(
    verdict_id: str, interaction_id: str, rubric_name: str, rubric_version: str, route: Route, *, now: datetime
) -> dict[str, Any]:
    return {
        "id": review_item_id(verdict_id),
        "verdict_id": verdict_id,
        "interaction_id": interaction_id,
        "rubric_name": rubric_name,
        "rubric_version": rubric_version,
        "inclusion_probability": route.inclusion_probability,
        "pick_reason": route.pick_reason.value,
        "labels_needed": route.labels_needed,
        "labels_done": 0,
        "state": ItemState.available.value,
        "created_at": now,
    }


def insert_review_items(*, session: Session, rows: Iterable[dict[str, Any]]) -> int:
    """INSERT ... ON CONFLICT DO NOTHING: an existing item (maybe half labeled) is never reset. Returns new rows."""
    return upsert(session, table(ReviewItem), list(rows), update_columns=None, returning_new=True)
