"""What the review service hands to a screen: the blind item (no verdict, no tier), the reveal after submitting,
progress, errors."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from judgewatch.contract.items import JudgedContent
from judgewatch.contract.messages import stored_turns
from judgewatch.contract.rubric import Rubric


class ReviewError(Exception):
    """A review action that was refused; the message is safe to show to the reviewer."""


class NotAllowed(ReviewError):
    """Unknown or disabled account, or an adjudication by someone who may not adjudicate."""


class LeaseError(ReviewError):
    """The item is not leased to the caller (anymore): someone else holds it, it expired, or it is done."""


class InvalidLabel(ReviewError):
    """Scores that do not fit the rubric: unknown criterion, missing criterion, or outside the scale."""


class CriterionView(BaseModel):
    name: str
    description: str
    anchors: dict[int, str]
    applicable: bool


class LeasedItem(JudgedContent):
    """The blind review screen's content for one leased item: its judged content and the rubric to label it by."""

    item_id: str
    rubric_name: str
    rubric_version: str  # the version of the rubric shown now (recorded with the label)
    scale_min: int
    scale_max: int
    criteria: list[CriterionView]
    lease_expires_at: datetime

    @property
    def scored_criteria(self) -> list[CriterionView]:
        return [c for c in self.criteria if c.applicable]


class Revealed(BaseModel):
    """Shown after a label is stored: the reviewer's scores beside the judge's verdict, and the tier."""

    item_id: str
    your_scores: dict[str, int]
    judge_scores: dict[str, int | None]
    judge_overall: float | None
    judge_status: str
    judge_unscored_reason: str | None
    judge_reason: str
    judge_name: str
    tier: str | None
    item_state: str


class Progress(BaseModel):
    done_today: int  # items labeled (not skipped) since 00:00 UTC
    left_in_queue: int  # items this reviewer could lease now, counted up to a cap
    more_left: bool = False  # True when more than `left_in_queue` are left
    holding: str | None  # the item id this reviewer holds a live lease on


def criterion_views(rubric: Rubric, *, has_references: bool, language: str | None) -> list[CriterionView]:
    applicable = {c.name for c in rubric.applicable(has_references)}
    zh = language == "zh"
    return [
        CriterionView(
            name=c.name,
            description=(c.description_zh if zh and c.description_zh else c.description),
            anchors=dict(c.anchors_zh if zh and c.anchors_zh else c.anchors),
            applicable=c.name in applicable,
        )
        for c in rubric.criteria
    ]


def has_references(row: Any) -> bool:
    return bool(row.reference_answer or row.reference_facts or row.context)


def leased_item(row: Any, rubric: Rubric) -> LeasedItem:
    """The screen of a stored item row: its id, lease, the interaction's judged content, and `rubric`."""
    assert row.lease_expires_at is not None
    return LeasedItem(
        item_id=row.id,
        question=row.question,
        answer=row.answer,
        messages=stored_turns(row.messages, f"review item {row.id}"),
        reference_answer=row.reference_answer,
        reference_facts=list(row.reference_facts),
        context=list(row.context),
        language=row.language,
        rubric_name=rubric.name,
        rubric_version=rubric.version,
        scale_min=rubric.scale.min,
        scale_max=rubric.scale.max,
        criteria=criterion_views(rubric, has_references=has_references(row), language=row.language),
        lease_expires_at=row.lease_expires_at,
    )


def revealed(item_id: str, scores: dict[str, int], verdict: Any, tier: str | None, state: str) -> Revealed:
    """The reveal; `verdict` is a stored verdict row or record (scores, overall, status, reasons, judge_name)."""
    return Revealed(
        item_id=item_id,
        your_scores=scores,
        judge_scores=dict(verdict.scores),
        judge_overall=verdict.overall,
        judge_status=verdict.status,
        judge_unscored_reason=verdict.unscored_reason,
        judge_reason=verdict.reason,
        judge_name=verdict.judge_name,
        tier=tier,
        item_state=state,
    )


def validate_scores(
    rubric: Rubric, scores: Mapping[str, int | None], *, has_refs: bool, partial: bool = False
) -> dict[str, int]:
    """The scores as {criterion: int}; every applicable criterion must be scored unless `partial`."""
    applicable = {c.name for c in rubric.applicable(has_refs)}
    clean: dict[str, int] = {}
    for name, value in scores.items():
        if value is None:
            continue
        if name not in applicable:
            raise InvalidLabel(f"criterion {name!r} is not scored for this item")
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidLabel(f"criterion {name!r}: score must be an integer, got {value!r}")
        if not rubric.scale.min <= value <= rubric.scale.max:
            raise InvalidLabel(f"criterion {name!r}: {value} is outside {rubric.scale.min}-{rubric.scale.max}")
        clean[name] = value
    missing = [c for c in rubric.criteria if c.name in applicable and c.name not in clean]
    if missing and not partial:
        raise InvalidLabel("score every criterion first: missing " + ", ".join(c.name for c in missing))
    return clean
