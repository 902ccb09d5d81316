"""Which labels `judgewatch judges align` learns from and measures on, and the split between the two.
docs/judges.md, section 5 ("Which labels", "The split").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, select

from judges.base import content_key
from judgewatch.calibration.score_frame import load_labels
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.review.labels import disagreement
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import NOT_BY_PEOPLE

HOLDOUT_SALT = "judges-align-holdout"


@dataclass(frozen=True)
class Labelled:
    """One labelled item: its content (id: the interaction id), the reviewers' score per criterion, and 1/p of the
    inclusion probability p its review item was routed with."""

    item: JudgeItem
    human: dict[str, int]
    weight: float = 1.0


@dataclass(frozen=True)
class ReviewerLabels:
    items: list[Labelled]
    adjudicated: int = 0  # items with a criterion settled by an adjudicator
    unsettled: int = 0  # (item, criterion) left out: reviewers disagree, no adjudication yet
    not_reviewers: dict[str, int] = field(default_factory=dict)  # label_via -> items whose labels are not used

    def describe(self) -> str:
        left = [
            f"{n} items labelled via {via} not used (not a reviewer's label)" for via, n in self.not_reviewers.items()
        ]
        if self.unsettled:
            left.append(f"{self.unsettled} item criteria left out (reviewers disagree, not adjudicated yet)")
        settled = f", {self.adjudicated} settled by adjudication" if self.adjudicated else ""
        return f"{len(self.items)} items with reviewers' labels{settled}" + "".join(f"; {p}" for p in left)


def reviewer_labels(engine: Engine, rubric: Rubric) -> ReviewerLabels:
    """The reviewers' label of every labelled interaction under `rubric` (see the module doc)."""
    every = load_labels(engine, rubric_name=rubric.name, rubric_version=rubric.version)
    others = every[every["via"].isin(NOT_BY_PEOPLE)]
    people = every[~every["via"].isin(NOT_BY_PEOPLE)]
    split: set[tuple[str, str]] = set()
    for interaction, rows in people.groupby("interaction_id"):
        labels = [
            dict(zip(g["criterion"], g["human"].astype(int), strict=True))
            for _, g in rows.groupby(["review_item_id", "reviewer"])
        ]
        split |= {(str(interaction), criterion) for criterion in disagreement(labels)}
    first = load_labels(
        engine, rubric_name=rubric.name, rubric_version=rubric.version, first_only=True, people_only=True
    )
    first = first.drop_duplicates(["interaction_id", "criterion"])  # sorted adjudicated first, then oldest
    unsettled = [
        (i, c) in split and not a
        for i, c, a in zip(first["interaction_id"], first["criterion"], first["adjudicated"], strict=True)
    ]
    kept = first[[not u for u in unsettled]]
    human: dict[str, dict[str, int]] = {}
    for interaction, criterion, score in zip(kept["interaction_id"], kept["criterion"], kept["human"], strict=True):
        human.setdefault(str(interaction), {})[str(criterion)] = int(score)
    chance = dict(zip(kept["interaction_id"], kept["inclusion_prob"], strict=True))  # of the label's review item
    with session_scope(engine) as session:
        rows = session.execute(select(Interaction).where(Interaction.id.in_(sorted(human)))).scalars().all()  # type: ignore[attr-defined]
        items = [
            Labelled(JudgeItem.of(row.id, row), human[row.id], 1.0 / float(chance[row.id]))
            for row in sorted(rows, key=lambda r: r.id)
        ]
    return ReviewerLabels(
        items=items,
        adjudicated=int(kept.loc[kept["adjudicated"], "interaction_id"].nunique()),
        unsettled=sum(unsettled),
        not_reviewers={str(v): int(n) for v, n in others.groupby("via")["interaction_id"].nunique().items()},
    )


def held_out(item: JudgeItem, share: float) -> bool:
    """Is the item in the held-out split (a draw from its question, the same in every run)?"""
    return hash_unit(content_key(item.question), HOLDOUT_SALT, variant=UnitHash.LABELED) < share


def split(items: Sequence[Labelled], share: float) -> tuple[list[Labelled], list[Labelled]]:
    """(items to build from, items held out to measure on)."""
    return [x for x in items if not held_out(x.item, share)], [x for x in items if held_out(x.item, share)]
