"""Releases, baselines and gate decisions: what the post-release regression gate compares and what it decided. An
accepted `ReleaseTier` is the baseline its tier's later releases are compared with (the latest accepted wins)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import select_matching, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow
from judgewatch.storage.verdicts import VerdictRecord


class ReleaseError(LookupError):
    """A release or tier that is not in the store."""


def regression_source(release: str, tier: str, dataset: str) -> str:
    """The interaction source of one tier's answers to one golden set in one release."""
    return f"release:{release}/{tier}/{dataset}"


def release_tier_id(release: str, tier: str) -> str:
    return stable_id("release_tier", release, tier)


class ReleaseTier(SQLModel, table=True):
    __tablename__ = "release_tier"

    id: str = Field(primary_key=True, max_length=32)
    release: str = Field(index=True)
    tier: str = Field(index=True)
    model: str | None = None
    source: str  # "live:<url>#<model>" | "recorded:<file>"
    config_hash: str | None = None  # a live tier's effective configuration (model, template, params, headers)
    config: dict[str, Any] | None = Field(default=None, sa_type=JSONValue)  # its summary, secrets masked
    datasets: dict[str, str] = Field(default_factory=dict, sa_type=JSONValue)  # golden set -> revision
    run_ids: list[str] = Field(default_factory=list, sa_type=JSONValue)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    accepted_at: datetime | None = Field(default=None, sa_type=UTCDateTime, index=True)
    accepted_by: str | None = None
    accept_note: str | None = None
    # True: the release's baseline tier (its tiers file's `baseline: true` or --baseline-tier), the tier every
    # report, page and export compares the others with; None: not declared (stores made before m017 too)
    baseline: bool | None = None


class GateDecision(SQLModel, table=True):
    """One gate outcome for a release; the same question asked again replaces its answer."""

    __tablename__ = "gate_decision"

    id: str = Field(primary_key=True, max_length=32)
    release: str = Field(index=True)
    exit_code: int
    outcome: str  # "pass" | "regression" | "error"
    summary: str
    reasons: list[str] = Field(default_factory=list, sa_type=JSONValue)
    notes: list[str] = Field(default_factory=list, sa_type=JSONValue)
    baselines: dict[str, str | None] = Field(default_factory=dict, sa_type=JSONValue)  # tier -> baseline release
    run_ids: list[str] = Field(default_factory=list, sa_type=JSONValue)
    rubric_hash: str | None = None
    judge_config_hash: str | None = None
    report_path: str | None = None
    flow_run_id: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    decided_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


def record_release_tier(
    *,
    session: Session,
    release: str,
    tier: str,
    source: str,
    model: str | None,
    datasets: dict[str, str],
    run_ids: Sequence[str] = (),
    config: dict[str, Any] | None = None,
    baseline: bool = False,
) -> ReleaseTier:
    """Create or update a release's tier; run ids and datasets accumulate, acceptance is kept. `config` is a live tier's
    configuration summary (with its `config_hash`); recorded tiers have none. `baseline`: this tier is the release's
    baseline tier (the role of the latest run of the release)."""
    row = session.get(ReleaseTier, release_tier_id(release, tier), populate_existing=True)
    if row is None:
        row = ReleaseTier(id=release_tier_id(release, tier), release=release, tier=tier, source=source, model=model)
    row.source, row.model, row.updated_at = source, model, utcnow()
    row.config, row.config_hash = config, (config or {}).get("config_hash")
    row.datasets = {**row.datasets, **datasets}
    row.run_ids = list(dict.fromkeys([*row.run_ids, *run_ids]))
    row.baseline = baseline or None
    session.add(row)
    session.flush()
    return row


def get_release_tiers(*, session: Session, release: str | None = None, tier: str | None = None) -> list[ReleaseTier]:
    """Stored release tiers, newest first."""
    c = table(ReleaseTier).c
    query = select_matching(ReleaseTier, release=release, tier=tier)
    return list(session.scalars(query.order_by(c.created_at.desc(), c.tier)))


def accept_baseline(
    *, session: Session, release: str, tier: str | None = None, by: str, note: str | None = None
) -> list[ReleaseTier]:
    """Mark a release (one tier, or every stored tier of it) as the baseline; raises ReleaseError if unknown."""
    rows = get_release_tiers(session=session, release=release, tier=tier)
    if not rows:
        known = sorted({r.release for r in get_release_tiers(session=session, tier=tier)})
        what = f"release {release!r}" + (f" tier {tier!r}" if tier else "")
        raise ReleaseError(f"{what} is not in the store (known releases: {', '.join(known) or 'none'})")
    now = utcnow()
    for row in rows:
        row.accepted_at, row.accepted_by, row.accept_note = now, by, note
        session.add(row)
    session.flush()
    return rows


def declared_baseline_tier(*, session: Session) -> ReleaseTier | None:
    """The baseline tier of the newest release that declared one (tiers file or --baseline-tier), or None."""
    c = table(ReleaseTier).c
    query = select(ReleaseTier).where(c.baseline.is_(True)).order_by(c.updated_at.desc(), c.release.desc())
    return session.scalars(query.limit(1)).first()


def accepted_baseline(*, session: Session, tier: str, exclude_release: str | None = None) -> ReleaseTier | None:
    """The tier's baseline: the most recently accepted release other than `exclude_release`, or None."""
    c = table(ReleaseTier).c
    query = select(ReleaseTier).where(c.tier == tier, c.accepted_at.is_not(None))
    if exclude_release is not None:
        query = query.where(c.release != exclude_release)
    return session.scalars(query.order_by(c.accepted_at.desc()).limit(1)).first()


def tier_answers(*, session: Session, release: str, tier: str, dataset: str) -> list[Interaction]:
    """The stored answers of one tier of one release to one golden set."""
    c = table(Interaction).c
    query = select(Interaction).where(c.source == regression_source(release, tier, dataset))
    return list(session.scalars(query.order_by(c.source_id)))


def tier_verdicts(
    *, session: Session, release: str, tier: str, dataset: str, rubric_hash: str, judge_config_hash: str | None = None
) -> list[tuple[Interaction, VerdictRecord]]:
    """Each stored answer with its verdict under the rubric (and judge configuration, when given)."""
    i, v = table(Interaction).c, table(VerdictRecord).c
    query = (
        select(Interaction, VerdictRecord)
        .join(VerdictRecord, v.interaction_id == i.id)
        .where(i.source == regression_source(release, tier, dataset), v.rubric_hash == rubric_hash)
    )
    if judge_config_hash is not None:
        query = query.where(v.judge_config_hash == judge_config_hash)
    return [(row[0], row[1]) for row in session.execute(query.order_by(i.source_id))]


def gate_decision_id(release: str, key: str) -> str:
    return stable_id("gate", release, key)


def record_gate_decision(*, session: Session, decision: GateDecision) -> GateDecision:
    """Insert or replace a decision by its id (the release plus what was asked)."""
    merged = session.merge(decision)
    session.flush()
    return merged


def latest_gate_decision(*, session: Session, release: str) -> GateDecision | None:
    c = table(GateDecision).c
    query = select(GateDecision).where(c.release == release).order_by(c.decided_at.desc()).limit(1)
    return session.scalars(query).first()


def gate_decisions(
    *, session: Session, judge_config_hash: str | None = None, since: datetime | None = None, limit: int = 20
) -> list[GateDecision]:
    """Gate decisions, newest first: of one judge configuration when given, decided at or after `since`."""
    c = table(GateDecision).c
    query = select_matching(GateDecision, judge_config_hash=judge_config_hash)
    if since is not None:
        query = query.where(c.decided_at >= since)
    return list(session.scalars(query.order_by(c.decided_at.desc(), c.release).limit(limit)))
