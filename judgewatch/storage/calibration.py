"""Calibration tables: drift alerts (one per series and window, so a re-run never alerts twice), frozen anchor sets
that every new judge configuration re-judges, and daily snapshots of the computed calibration."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import select_matching, table
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


class AlertState(StrEnum):
    open = "open"
    resolved = "resolved"  # a later window of the same series tested within chance
    acknowledged = "acknowledged"  # someone looked at it and closed it


class AnchorSetFrozen(ValueError):
    """An anchor set with this name exists with other items: anchor sets never change once stored."""


SERVED_MODEL_CHANGE = "served_model_change"  # DriftAlert.kind of a served-model change, not judge drift


class DriftAlert(SQLModel, table=True):
    __tablename__ = "drift_alert"

    id: str = Field(primary_key=True, max_length=32)
    judge_config_hash: str = Field(index=True)
    judge_name: str
    rubric_name: str = Field(index=True)
    rubric_version: str
    tier: str = Field(index=True)
    criterion: str
    window: str  # "daily" | "weekly"
    window_start: datetime = Field(sa_type=UTCDateTime)
    window_end: datetime = Field(sa_type=UTCDateTime)
    reference_start: datetime = Field(sa_type=UTCDateTime)  # the reference is [reference_start, window_start)
    kind: str  # "agreement_drop", "bias_shift" or "agreement_drop+bias_shift"; or SERVED_MODEL_CHANGE
    state: str = Field(default=AlertState.open.value, index=True)
    n_ref: int
    n_cur: int
    agreement_ref: float | None = None
    agreement_cur: float | None = None
    bias_ref: float | None = None
    bias_cur: float | None = None
    p_agreement_drop: float | None = None
    p_bias_shift: float | None = None
    alpha: float  # the threshold each p-value was held to (family alpha after Bonferroni)
    test: str  # the stated test, in words
    message: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    resolved_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    resolved_by: str | None = None
    resolution: str | None = None
    # m012: the release the series is within (None: traffic without a release, or an older alert) and, for a
    # served-model change, the judge's mean score before and in the window with the test's p-value.
    release: str | None = Field(default=None, index=True)
    score_ref: float | None = None
    score_cur: float | None = None
    p_score_shift: float | None = None


class AnchorSet(SQLModel, table=True):
    __tablename__ = "anchor_set"

    name: str = Field(primary_key=True, max_length=100)
    rubric_name: str
    description: str = ""
    n_items: int
    items_hash: str  # sha256 of the sorted interaction ids: the set's frozen identity
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AnchorItem(SQLModel, table=True):
    __tablename__ = "anchor_item"

    anchor_set: str = Field(foreign_key="anchor_set.name", primary_key=True, ondelete="CASCADE")
    interaction_id: str = Field(foreign_key="interaction.id", primary_key=True)
    position: int


class CalibrationSnapshot(SQLModel, table=True):
    __tablename__ = "calibration_snapshot"

    id: str = Field(primary_key=True, max_length=32)
    kind: str = Field(index=True)  # "tiers" | "drift" | "anchors"
    scope: str  # what it covers, e.g. "answer_quality 1.0.0 judge=<hash>"
    day: str = Field(index=True)  # UTC date of the computation, YYYY-MM-DD: one snapshot per kind, scope, day
    rubric_name: str | None = None
    rubric_version: str | None = None
    judge_config_hash: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    computed_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


_ALERT_KEEP = ("id", "state", "created_at", "resolved_at", "resolved_by", "resolution")


def upsert_alert(*, session: Session, alert: DriftAlert) -> tuple[DriftAlert, bool]:
    """Store an alert by its id; an existing one gets the new numbers but keeps its state. (row, created?)."""
    # One alert per series and window; a release and the served-model-change family also separate series (an
    # older alert has neither in its id).
    series = (alert.judge_config_hash, alert.rubric_name, alert.rubric_version, alert.tier, alert.criterion)
    extra = [f"release={alert.release}"] if alert.release is not None else []
    extra += [SERVED_MODEL_CHANGE] if alert.kind == SERVED_MODEL_CHANGE else []
    alert.id = stable_id("drift_alert", *series, alert.window, alert.window_start, *extra)
    existing = session.get(DriftAlert, alert.id, populate_existing=True)
    if existing is None:
        session.add(alert)
        session.flush()
        return alert, True
    for name, value in alert.model_dump().items():
        if name not in _ALERT_KEEP:
            setattr(existing, name, value)
    existing.updated_at = utcnow()
    session.add(existing)
    session.flush()
    return existing, False


def get_alerts(
    *, session: Session, state: str | None = None, tier: str | None = None, rubric_name: str | None = None
) -> list[DriftAlert]:
    """Alerts matching every given filter, newest window first."""
    c = table(DriftAlert).c
    query = select_matching(DriftAlert, state=state, tier=tier, rubric_name=rubric_name)
    return list(session.scalars(query.order_by(c.window_start.desc(), c.tier, c.criterion, c.window)))


def close_alerts(*, session: Session, ids: Sequence[str], state: AlertState, by: str, note: str) -> int:
    """Move open alerts to `state` (resolved/acknowledged) with who and why; returns how many changed."""
    if not ids:
        return 0
    c = table(DriftAlert).c
    result: Any = session.execute(
        update(table(DriftAlert))
        .where(c.id.in_(list(ids)), c.state == AlertState.open.value)
        .values(state=state.value, resolved_at=utcnow(), resolved_by=by, resolution=note)
    )
    return int(result.rowcount or 0)


def items_hash(interaction_ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(interaction_ids)).encode()).hexdigest()


def create_anchor_set(
    *, session: Session, name: str, rubric_name: str, interaction_ids: Sequence[str], description: str = ""
) -> AnchorSet:
    """Freeze `interaction_ids` under `name`; the same items again is a no-op, other items raise AnchorSetFrozen."""
    ids = list(dict.fromkeys(interaction_ids))
    if not ids:
        raise ValueError(f"anchor set {name!r}: no items")
    digest = items_hash(ids)
    existing = session.get(AnchorSet, name)
    if existing is not None:
        if existing.items_hash != digest:
            raise AnchorSetFrozen(
                f"anchor set {name!r} already exists with {existing.n_items} other items; anchor sets are frozen: "
                "create one under a new name"
            )
        return existing
    anchor = AnchorSet(name=name, rubric_name=rubric_name, description=description, n_items=len(ids), items_hash=digest)
    session.add(anchor)
    session.flush()
    session.add_all(AnchorItem(anchor_set=name, interaction_id=iid, position=k) for k, iid in enumerate(ids))
    session.flush()
    return anchor


def get_anchor_set(*, session: Session, name: str) -> AnchorSet | None:
    return session.get(AnchorSet, name, populate_existing=True)


def list_anchor_sets(*, session: Session, rubric_name: str | None = None) -> list[AnchorSet]:
    c = table(AnchorSet).c
    query = select_matching(AnchorSet, rubric_name=rubric_name)
    return list(session.scalars(query.order_by(c.created_at, c.name)))


def anchor_interaction_ids(*, session: Session, name: str) -> list[str]:
    c = table(AnchorItem).c
    query = select(c.interaction_id).where(c.anchor_set == name).order_by(c.position)
    return list(session.execute(query).scalars())


def save_snapshot(*, session: Session, snapshot: CalibrationSnapshot) -> CalibrationSnapshot:
    """Insert or replace the snapshot of this kind and scope for its day."""
    snapshot.day = snapshot.day or snapshot.computed_at.date().isoformat()
    snapshot.id = stable_id("calibration_snapshot", snapshot.kind, snapshot.scope, snapshot.day)
    merged = session.merge(snapshot)
    session.flush()
    return merged


def get_snapshots(*, session: Session, kind: str) -> list[CalibrationSnapshot]:
    """Snapshots of one kind, oldest first."""
    c = table(CalibrationSnapshot).c
    return list(session.scalars(select(CalibrationSnapshot).where(c.kind == kind).order_by(c.computed_at, c.scope)))
