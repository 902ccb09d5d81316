"""The items behind a number: current verdicts with their interaction, labels and adjudication, filtered and paged.
One filter (`ItemFilter`) serves `judgewatch export`, `judgewatch compare` and the review app's pages, so a filter
means the same rows everywhere; the label status, which needs an item's labels, is read for a page's rows only."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Select, and_, exists, func, or_, select
from sqlmodel import Session

from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import ReviewItem, ReviewLabel
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord


class LabelStatus(StrEnum):
    unlabeled = "unlabeled"  # no label that scores it (never routed, or routed and still open)
    labeled = "labeled"  # scored by people, and they agree (or one person scored it)
    disagreed = "disagreed"  # two or more people scored it differently, not yet adjudicated
    adjudicated = "adjudicated"  # an adjudicator set its final scores


class ItemFilter(BaseModel):
    """What an Items page, an export or a comparison narrows to; a field left None filters nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    release: str | None = None
    tier: str | None = None
    dataset: str | None = Field(default=None, description="golden set name (regression items)")
    stratum: str | None = Field(default=None, description="traffic route (the sampling stratum besides the tier)")
    source: str | None = Field(default=None, description="interaction source, exact (e.g. traffic:gateway)")
    rubric: str | None = None
    criterion: str | None = Field(default=None, description="the criterion the score range applies to")
    score_min: int | None = None
    score_max: int | None = None
    unscored_reason: str | None = None
    label_status: LabelStatus | None = None
    judge_series: str | None = Field(default=None, description="judge configuration hash, or a prefix of it")
    text: str | None = Field(default=None, description="free text in the question, answer or reason")


@dataclass
class LabelRow:
    reviewer: str
    via: str
    scores: dict[str, int]
    comment: str
    submitted_at: str


@dataclass
class ItemRow:
    """One current verdict and everything a person needs to read it."""

    interaction: Interaction
    verdict: VerdictRecord
    labels: list[LabelRow] = field(default_factory=list)
    final_scores: dict[str, Any] | None = None
    adjudicated_by: str | None = None
    status: LabelStatus = LabelStatus.unlabeled

    @property
    def dataset(self) -> str | None:
        return dataset_of(self.interaction.source)


def scores_text(scores: dict[str, Any]) -> str:
    """A verdict's or label's scores in one line, `faithfulness 2, relevance -` (`-`: not scored)."""
    return ", ".join(f"{c} {'-' if s is None else s}" for c, s in sorted(scores.items()))


def dataset_of(source: str) -> str | None:
    """The golden set of a regression interaction (`release:<release>/<tier>/<dataset>`), else None."""
    return source.rsplit("/", 1)[-1] if source.startswith("release:") else None


def _where(filt: ItemFilter) -> list[Any]:
    i, v = table(Interaction).c, table(VerdictRecord).c
    conditions: list[Any] = [v.superseded_by.is_(None)]
    equal = ((i.release, filt.release), (i.tier, filt.tier), (i.route, filt.stratum), (i.source, filt.source),
             (v.rubric_name, filt.rubric), (v.unscored_reason, filt.unscored_reason))  # fmt: skip
    conditions += [column == value for column, value in equal if value is not None]
    if filt.dataset is not None:
        conditions.append(i.source.like(f"release:%/{filt.dataset}"))
    if filt.judge_series is not None:
        conditions.append(v.judge_config_hash.like(f"{filt.judge_series}%"))
    if filt.text:
        needle = f"%{filt.text.lower()}%"
        conditions.append(or_(*(func.lower(column).like(needle) for column in (i.question, i.answer, v.reason))))
    if filt.criterion is not None or filt.score_min is not None or filt.score_max is not None:
        c = table(CriterionScore).c
        score = [c.verdict_id == v.id, c.score.is_not(None)]
        if filt.criterion is not None:
            score.append(c.criterion == filt.criterion)
        if filt.score_min is not None:
            score.append(c.score >= filt.score_min)
        if filt.score_max is not None:
            score.append(c.score <= filt.score_max)
        conditions.append(exists(select(c.verdict_id).where(and_(*score))))
    return conditions


def _query(filt: ItemFilter) -> Select[tuple[Interaction, VerdictRecord]]:
    i, v = table(Interaction).c, table(VerdictRecord).c
    return (
        select(Interaction, VerdictRecord)
        .join(VerdictRecord, v.interaction_id == i.id)
        .where(*_where(filt))
        .order_by(i.release, i.tier, i.source, i.source_id, v.rubric_name, v.judge_config_hash)
    )


def _status(labels: list[LabelRow], final_scores: dict[str, Any] | None) -> LabelStatus:
    if final_scores:
        return LabelStatus.adjudicated
    scored = [label.scores for label in labels if label.scores]
    if not scored:
        return LabelStatus.unlabeled
    if len({tuple(sorted(s.items())) for s in scored}) > 1:
        return LabelStatus.disagreed
    return LabelStatus.labeled


def _attach_labels(session: Session, rows: list[ItemRow]) -> None:
    if not rows:
        return
    r, lab = table(ReviewItem).c, table(ReviewLabel).c
    by_verdict = {row.verdict.id: row for row in rows}
    items: dict[str, ItemRow] = {}
    for chunk_start in range(0, len(rows), 500):
        ids = list(by_verdict)[chunk_start : chunk_start + 500]
        for rid, verdict_id, final, by in session.execute(
            select(r.id, r.verdict_id, r.final_scores, r.adjudicated_by).where(r.verdict_id.in_(ids))
        ):
            row = by_verdict[verdict_id]
            row.final_scores, row.adjudicated_by = final, by
            items[rid] = row
    labels: dict[str, list[LabelRow]] = defaultdict(list)
    item_ids = list(items)
    for chunk_start in range(0, len(item_ids), 500):
        ids = item_ids[chunk_start : chunk_start + 500]
        query = (
            select(lab.review_item_id, lab.reviewer, lab.via, lab.scores, lab.comment, lab.submitted_at)
            .where(lab.review_item_id.in_(ids), lab.skipped_reason.is_(None))
            .order_by(lab.submitted_at)
        )
        for rid, reviewer, via, scores, comment, submitted in session.execute(query):
            labels[rid].append(LabelRow(reviewer, via, dict(scores or {}), comment or "", submitted.isoformat()))
    for rid, row in items.items():
        row.labels = labels.get(rid, [])
    for row in rows:
        row.status = _status(row.labels, row.final_scores)


def find_items(
    session: Session, filt: ItemFilter, *, offset: int = 0, limit: int | None = 50
) -> tuple[list[ItemRow], int | None]:
    """One page of the current verdicts that `filt` matches, with their labels, and how many match in all. With a
    label-status filter the total is not known without reading every match, so it is None and the page is filled by
    reading on until `limit` rows of that status are found."""
    if filt.label_status is None:
        total = session.execute(select(func.count()).select_from(_query(filt).order_by(None).subquery())).scalar_one()
        query = _query(filt).offset(offset).limit(limit)  # limit None: no LIMIT
        rows = [ItemRow(interaction=ia, verdict=vd) for ia, vd in session.execute(query)]
        _attach_labels(session, rows)
        return rows, int(total)
    matched: list[ItemRow] = []  # every row of the status read so far, the first `offset` included
    batch, start = 500, 0
    while limit is None or len(matched) < offset + limit:
        page = [
            ItemRow(interaction=ia, verdict=vd) for ia, vd in session.execute(_query(filt).offset(start).limit(batch))
        ]
        if not page:
            break
        start += batch
        _attach_labels(session, page)
        matched += [row for row in page if row.status == filt.label_status]
    return matched[offset:] if limit is None else matched[offset : offset + limit], None


@dataclass
class ItemDetail:
    """Everything about one interaction on one screen: content, every verdict, labels, adjudication, history."""

    interaction: Interaction
    verdicts: list[VerdictRecord]  # every verdict on it, current ones first (superseded ones kept as history)
    labels: list[LabelRow]
    final_scores: dict[str, Any] | None
    adjudicated_by: str | None
    history: list[tuple[Interaction, VerdictRecord | None]]  # the same item in other releases and tiers


def item_detail(session: Session, interaction_id: str) -> ItemDetail | None:
    """One interaction by id (None when unknown); its history is the same item id of the same golden set or source
    kind in every release and tier, oldest release first, each with its current verdict under the same rubric."""
    i, v = table(Interaction).c, table(VerdictRecord).c
    interaction = session.get(Interaction, interaction_id)
    if interaction is None:
        return None
    verdicts = list(
        session.scalars(
            select(VerdictRecord)
            .where(v.interaction_id == interaction_id)
            .order_by(v.superseded_by.is_not(None), v.rubric_name, v.updated_at.desc())
        )
    )
    current = [vd for vd in verdicts if vd.superseded_by is None]
    rows = [ItemRow(interaction=interaction, verdict=vd) for vd in current]
    _attach_labels(session, rows)
    labels = [label for row in rows for label in row.labels]
    adjudicated = next((row for row in rows if row.final_scores), None)
    dataset = dataset_of(interaction.source)
    same = i.source.like(f"release:%/{dataset}") if dataset else i.source == interaction.source
    rubric = current[0].rubric_name if current else None
    others = session.scalars(
        select(Interaction)
        .where(same, i.source_id == interaction.source_id, i.id != interaction.id)
        .order_by(i.created_at, i.tier)
    )
    current_of = select(VerdictRecord).where(v.superseded_by.is_(None), v.rubric_name == rubric)
    history = [(other, session.scalars(current_of.where(v.interaction_id == other.id)).first()) for other in others]
    return ItemDetail(
        interaction=interaction,
        verdicts=verdicts,
        labels=labels,
        final_scores=adjudicated.final_scores if adjudicated else None,
        adjudicated_by=adjudicated.adjudicated_by if adjudicated else None,
        history=history,
    )
