"""Human review tables: reviewer accounts, review items routed from verdicts, and the labels people give. The
partial indexes keep "lease the next item" an index probe at millions of items on both backends."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


class ItemState(StrEnum):
    available = "available"  # waiting for a (further) label
    leased = "leased"  # held by `lease_owner` until `lease_expires_at` (after that, free to lease again)
    done = "done"  # every label needed is in and they agree (or an adjudicator settled them)
    adjudication = "adjudication"  # two labels differ by more than one point on some criterion
    flagged = "flagged"  # a reviewer asked for an expert


class PickReason(StrEnum):
    uniform = "uniform"  # the uniform random share of scored verdicts
    unscored = "unscored"  # targeted: the judge gave no score
    borderline = "borderline"  # targeted: the overall score sits next to the pass line
    active = "active"  # the uncertainty-weighted share: more likely where the judge is likelier wrong


class LabelVia(StrEnum):
    """How a label reached the store. Only `ui` and `replay` labels are people's work."""

    ui = "ui"  # a reviewer clicked it in the review app
    replay = "replay"  # a reviewer's label exported elsewhere and replayed
    synthetic = "synthetic"  # made by a program from a known truth (tests, benchmarks)
    dataset_annotation = "dataset_annotation"  # derived from a golden set's own human annotations (the demo)


NOT_BY_PEOPLE = (LabelVia.synthetic.value, LabelVia.dataset_annotation.value)  # never trust evidence


def review_item_id(verdict_id: str) -> str:
    """Routing the same verdict again finds the same item, never a second one."""
    return stable_id("review_item", verdict_id)


def _partial(name: str, *columns: str, state: str) -> Index:
    """An index of the items in one state only, on both backends."""
    where = text(f"state = '{state}'")
    return Index(name, *columns, postgresql_where=where, sqlite_where=where)


class Reviewer(SQLModel, table=True):
    __tablename__ = "reviewer"

    name: str = Field(primary_key=True, max_length=64)
    password_hash: str  # "scrypt$n$r$p$salt$hash", see judgewatch.review.accounts
    active: bool = True
    can_adjudicate: bool = False  # kept in step with `role` (adjudicator and owner may adjudicate)
    # a judgewatch.review.accounts.Role value: reviewer, adjudicator or owner (server default for old rows)
    role: str = Field(default="reviewer", max_length=16, sa_column_kwargs={"server_default": "reviewer"})
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ReviewItem(SQLModel, table=True):
    __tablename__ = "review_item"
    __table_args__ = (
        # "next available item, oldest first": a partial index read in order, first row wins.
        _partial("ix_review_item_available", "created_at", "id", state="available"),
        # "leases that have run out" and "the lease I hold": only leased rows are indexed.
        _partial("ix_review_item_lease_expiry", "lease_expires_at", state="leased"),
        _partial("ix_review_item_lease_owner", "lease_owner", state="leased"),
        Index("ix_review_item_state", "state"),
    )

    id: str = Field(primary_key=True, max_length=32)
    verdict_id: str = Field(foreign_key="verdict.id", index=True)
    interaction_id: str = Field(foreign_key="interaction.id", index=True)
    rubric_name: str
    rubric_version: str
    inclusion_probability: float  # P(this verdict is routed) under the routing design, for 1/p weights
    pick_reason: str  # a PickReason value
    labels_needed: int = 1
    labels_done: int = 0
    state: str = ItemState.available.value
    lease_owner: str | None = None
    lease_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    leased_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    final_scores: dict[str, Any] | None = Field(default=None, sa_type=JSONValue)  # set by adjudication
    adjudicated_by: str | None = None
    adjudicated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ReviewLabel(SQLModel, table=True):
    """One reviewer's label of one item: scores, or a skip with its reason, or a flag for an expert."""

    __tablename__ = "review_label"
    __table_args__ = (
        UniqueConstraint("review_item_id", "reviewer", name="uq_review_label_item_reviewer"),
        Index("ix_review_label_reviewer_submitted", "reviewer", "submitted_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    review_item_id: str = Field(foreign_key="review_item.id")
    reviewer: str = Field(foreign_key="reviewer.name")
    scores: dict[str, int] = Field(default_factory=dict, sa_type=JSONValue)
    skipped_reason: str | None = None
    flagged: bool = False
    comment: str = ""
    started_at: datetime = Field(sa_type=UTCDateTime)  # when the lease was granted (server clock)
    submitted_at: datetime = Field(sa_type=UTCDateTime)
    duration_ms: int
    rubric_version_shown: str
    via: str = "ui"  # a LabelVia value: replayed labels are real labels, but nobody clicked them

    @property
    def counts(self) -> bool:
        """A label that scores the item (not a skip, not a bare flag)."""
        return self.skipped_reason is None and not self.flagged


class RoutingPlan(SQLModel, table=True):
    """One UTC day's uncertainty-weighted routing (review/active.py), fitted and stored at its first use, so that
    routing a verdict again gives it the same probability; the record of how that day's probabilities were made."""

    __tablename__ = "routing_plan"

    day: str = Field(primary_key=True, max_length=10)  # YYYY-MM-DD, UTC: the verdicts created that day
    budget: float  # expected labels per day it was scaled to
    uniform_rate: float  # every scored verdict's uniform pick: the floor
    scale: float  # active share = min(1, scale x predicted error spread)
    spreads: dict[str, float] = Field(default_factory=dict, sa_type=JSONValue)  # cell -> mean squared error
    n_verdicts: int  # scored verdicts of the window before the day: the volume forecast
    n_days: int  # whole days from the window's first verdict to the day (at most the window)
    n_labels: int  # labels the spreads were fitted on
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
