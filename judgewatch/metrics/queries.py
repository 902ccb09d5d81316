"""The store reads behind a scrape: a few grouped queries whose results have bounded size.

Each function is keyword-only, takes a session and returns typed rows grouped by bounded values only (judge
names, rubric names, tiers, states, reasons, exit codes): never item ids, reviewer names or any text a person
or a model wrote. No read grows with the verdict table: the verdict figures come from `verdict_count`, kept at
write time (`judgewatch.storage.verdict_counts`); the others read small tables or partial indexes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, literal_column, select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session

from judgewatch.storage.calibration import SERVED_MODEL_CHANGE, AlertState, CalibrationSnapshot, DriftAlert
from judgewatch.storage.db import table
from judgewatch.storage.releases import GateDecision
from judgewatch.storage.review import ItemState, ReviewItem
from judgewatch.storage.review_counts import LABEL, OPEN, QUEUE, ReviewCount
from judgewatch.storage.runs import EvalRun, RunStatus
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.storage.verdict_counts import VerdictCount

logger = logging.getLogger(__name__)


# A literal, not a bound value, so both planners match the partial index of leased items.
LEASED: ColumnElement[str] = literal_column(f"'{ItemState.leased.value}'")


@dataclass(frozen=True)
class Count:
    """A count under one tuple of bounded label values."""

    labels: tuple[str, ...]
    value: float


def verdict_counts(*, session: Session) -> list[VerdictCount]:
    """Every row of the write-time verdict counts: one per combination of label values, a few hundred at most."""
    return list(session.scalars(select(VerdictCount)))


def review_queue(*, session: Session, now: datetime) -> list[Count]:
    """Review items per queue state; a lease that has run out counts as waiting, as the queue treats it.

    The kept bucket counts (`review_count`) say how many items are open (available or leased), done, in
    adjudication or flagged; which open items are leased, and whose lease ran out, is counted on the partial
    index of leased items (as many rows as there are leases, not items).
    """
    c, r = table(ReviewCount).c, table(ReviewItem).c
    kept = {str(v): float(n) for v, n in session.execute(select(c.value, c.n).where(c.kind == QUEUE, c.n != 0))}
    expired = func.coalesce(func.sum(case((r.lease_expires_at < now, 1), else_=0)), 0)
    leased, lapsed = session.execute(select(func.count(), expired).where(r.state == LEASED)).one()
    running = float(leased - lapsed)
    kept[ItemState.available.value] = kept.pop(OPEN, 0.0) - running
    kept[ItemState.leased.value] = running
    return [Count((state,), n) for state, n in kept.items()]


def review_labels(*, session: Session) -> list[Count]:
    """Labels that score an item (no skips, no bare flags) written so far, per tier (kept by `review_count`)."""
    c = table(ReviewCount).c
    query = select(c.value, c.n).where(c.kind == LABEL, c.n != 0).order_by(c.value)
    return [Count((str(tier),), float(n)) for tier, n in session.execute(query)]


def latest_tier_snapshots(*, session: Session) -> list[CalibrationSnapshot]:
    """The newest "tiers" snapshot of each rubric (one row per rubric name)."""
    s = table(CalibrationSnapshot).c
    newest = (
        select(s.rubric_name, func.max(s.computed_at).label("at")).where(s.kind == "tiers").group_by(s.rubric_name)
    ).subquery()
    query = (
        select(CalibrationSnapshot)
        .join(newest, (s.rubric_name == newest.c.rubric_name) & (s.computed_at == newest.c.at))
        .where(s.kind == "tiers")
        .order_by(s.rubric_name, s.scope)
    )
    seen: dict[str | None, CalibrationSnapshot] = {}
    for snapshot in session.scalars(query):
        seen.setdefault(snapshot.rubric_name, snapshot)
    return list(seen.values())


def open_drift_alerts(*, session: Session) -> list[Count]:
    """Open judge drift alerts per tier, criterion and test kind (agreement drop, bias shift)."""
    a = table(DriftAlert).c
    query = (
        select(a.tier, a.criterion, a.kind, func.count())
        .where(a.state == AlertState.open.value, a.kind != SERVED_MODEL_CHANGE)
        .group_by(a.tier, a.criterion, a.kind)
    )
    return [Count((tier, criterion, kind), float(n)) for tier, criterion, kind, n in session.execute(query)]


def open_model_change_alerts(*, session: Session) -> list[Count]:
    """Open served-model change alerts per tier, criterion and release ("" for traffic without one)."""
    a = table(DriftAlert).c
    query = (
        select(a.tier, a.criterion, a.release, func.count())
        .where(a.state == AlertState.open.value, a.kind == SERVED_MODEL_CHANGE)
        .group_by(a.tier, a.criterion, a.release)
    )
    return [Count((tier, criterion, release or ""), float(n)) for tier, criterion, release, n in session.execute(query)]


def gate_decisions(*, session: Session) -> list[Count]:
    """Stored gate decisions per exit code (0 pass, 1 regression, 2 could not evaluate)."""
    g = table(GateDecision).c
    query = select(g.exit_code, func.count()).group_by(g.exit_code)
    return [Count((str(code),), float(n)) for code, n in session.execute(query)]


def last_successes(*, session: Session) -> list[Count]:
    """Unix time of the last completed run of each run kind, and of the last calibration snapshot."""
    r, s = table(EvalRun).c, table(CalibrationSnapshot).c
    rows: list[tuple[str, Any]] = [
        (str(kind), at)
        for kind, at in session.execute(
            select(r.kind, func.max(r.finished_at)).where(r.status == RunStatus.completed.value).group_by(r.kind)
        )
    ]
    rows.append(("calibration", session.execute(select(func.max(s.computed_at))).scalar()))
    return [Count((name,), _unix(at)) for name, at in rows if at is not None]


def last_gate_evaluated(*, session: Session) -> float | None:
    """Unix time of the last gate decision that evaluated the release (exit 0 or 1), None if none did."""
    g = table(GateDecision).c
    at = session.execute(select(func.max(g.decided_at)).where(g.exit_code.in_([0, 1]))).scalar()
    return None if at is None else _unix(at)


def _unix(at: datetime | str) -> float:
    # SQLite returns MAX() of a timestamp as text, without the column type's conversion.
    value = datetime.fromisoformat(at) if isinstance(at, str) else at
    return value.timestamp() if value.tzinfo else value.replace(tzinfo=UTC).timestamp()


def trust_records(
    *, session: Session, evidence: Sequence[str] = (TrustEvidence.known_answers.value,)
) -> list[TrustRecord]:
    """Known-answer trust records, newest measurement first (the caller keeps the newest per judge, dataset)."""
    t = table(TrustRecord).c
    query = select(TrustRecord).where(t.evidence.in_(list(evidence))).order_by(t.measured_at.desc(), t.id)
    return list(session.scalars(query))
