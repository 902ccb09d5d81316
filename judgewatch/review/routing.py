"""Routing: which stored verdicts become review items, decided by independent hashes of the verdict id, with each
item's exact inclusion probability (docs/review_queue.md, "Which verdicts are routed"). Of routed items,
`double_label_share` need two reviewers. Routing again never creates a second item or resets one."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import exists, select
from sqlmodel import Session

from judgewatch.contract.rubric import Rubric, RubricError
from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.review.active import Plan, cell_keys, day_plan, utc_day
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
    review_budget: float | None = None  # labels a day: uncertainty-weighted routing instead of `review_share`

    def __post_init__(self) -> None:
        for name in ("review_share", "double_label_share", "unscored_share", "borderline_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.review_budget is not None and not self.review_budget > 0:
            raise ValueError(f"review_budget must be a positive number of labels a day, got {self.review_budget}")

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
        """The settings' shares, each replaced by the one given (the CLI's and the sampling flow's options); a
        `review_share` given routes uniformly at it, whatever the settings' `review_budget`."""
        return cls(
            review_share=settings.review_share if review_share is None else review_share,
            double_label_share=settings.double_label_share if double_label_share is None else double_label_share,
            unscored_share=unscored_share,
            borderline_share=borderline_share,
            review_budget=settings.review_budget if review_share is None else None,
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
    verdict_id: str,
    *,
    status: str,
    overall: float | None,
    rubric: Rubric | None,
    policy: RoutingPolicy,
    shares: tuple[float, float] | None = None,
) -> Route | None:
    """The routing decision for one verdict, or None when it is not routed. `shares`: the verdict's (uniform, active)
    shares under an uncertainty-weighted plan; None: `review_share` alone. Every pick is an independent draw; the
    verdict is routed for the first that hits, with the chance that any does."""
    labels = 2 if _draw("double", verdict_id) < policy.double_label_share else 1
    if status != VerdictStatus.scored:
        picks = [(PickReason.unscored, policy.unscored_share)]
    else:
        uniform, active = shares or (policy.review_share, 0.0)
        picks = [(PickReason.uniform, uniform), (PickReason.active, active)]
        if policy.borderline_share > 0 and is_borderline(overall, rubric, policy.borderline_margin):
            picks.append((PickReason.borderline, policy.borderline_share))
    chance, missed = 0.0, 1.0
    for _, share in picks:
        chance, missed = chance + missed * share, missed * (1.0 - share)
    for reason, share in picks:
        if share > 0 and _draw(reason.value, verdict_id) < share:
            return Route(reason, chance, labels)
    return None


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
    """Create the review items for the stored verdicts of one run (or the given ids, or all of them). Only current
    verdicts are routed, and an interaction at most once per rubric version: not when it already has a review item under
    that version (from a verdict superseded since, or another judge's)."""
    rubrics = rubrics or RubricResolver()
    tbl, items = table(VerdictRecord), table(ReviewItem)
    has_other_item = exists().where(
        items.c.interaction_id == tbl.c.interaction_id,
        items.c.rubric_version == tbl.c.rubric_version,
        items.c.verdict_id != tbl.c.id,  # its own item is found again: routing stays idempotent
    )
    query = select(
        tbl.c.id, tbl.c.interaction_id, tbl.c.status, tbl.c.overall, tbl.c.rubric_name, tbl.c.rubric_version,
        tbl.c.scores, tbl.c.expected_scores, tbl.c.created_at,
    ).where(is_current(), ~has_other_item)  # fmt: skip
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    if verdict_ids is not None:
        query = query.where(tbl.c.id.in_(list(verdict_ids)))
    cache: dict[str, Rubric | None] = {}

    def rubric_of(name: str) -> Rubric | None:
        if name not in cache:
            try:
                cache[name] = rubrics.get(name)
            except RubricError:
                logger.warning("rubric %s not found: no borderline picks nor doubt bands for its verdicts", name)
                cache[name] = None
        return cache[name]

    def width(name: str) -> float | None:
        rubric = rubric_of(name)
        return None if rubric is None else float(rubric.scale.max - rubric.scale.min)

    plans: dict[date, Plan] = {}
    if policy.review_budget is not None:  # each day's plan first: fitting it reads the store, so not mid-scan
        scored = query.with_only_columns(tbl.c.created_at).where(tbl.c.status == VerdictStatus.scored.value)
        for day in sorted({utc_day(at) for at in session.scalars(scored)}):
            plans[day] = day_plan(session, day, policy.review_budget, fallback_share=policy.review_share, widths=width)
    now = utcnow()
    considered, rows, reasons = 0, [], Counter[str]()
    seen: set[tuple[str, str]] = set()
    for vid, iid, status, overall, rubric_name, rubric_version, scores, expected, at in session.execute(
        query.order_by(tbl.c.id)
    ):
        if (iid, rubric_version) in seen:
            continue  # another current verdict of this interaction (another judge's) is routed already
        seen.add((iid, rubric_version))
        considered += 1
        shares = None
        if (plan := plans.get(utc_day(at))) is not None and status == VerdictStatus.scored:
            keys = list(cell_keys(rubric_name, scores, expected, width(rubric_name)).values())
            shares = (plan.uniform, plan.active(keys))
        route = decide(vid, status=status, overall=overall, rubric=rubric_of(rubric_name), policy=policy, shares=shares)
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
