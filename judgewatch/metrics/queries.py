"""The store reads behind a scrape: few Core statements, built once at import, whose results have bounded size.

Rows are grouped by bounded values only (judge and rubric names, tiers, states, reasons, exit codes), never item
ids, reviewer names or text; no read grows with the store (docs/operations.md, "Metrics and alerts")."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, String, bindparam, cast, func, literal_column, or_, select, union_all
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


@dataclass(frozen=True)
class Count:
    """A count under one tuple of bounded label values."""

    labels: tuple[str, ...]
    value: float


def _text(value: str) -> ColumnElement[str]:
    """A string constant inlined in the SQL (static text; the planners match partial indexes on literals)."""
    return literal_column(f"'{value}'", String)


_NONE = _text("")
_ITEMS, _KEPT, _ALERTS, _GATES = table(ReviewItem).c, table(ReviewCount).c, table(DriftAlert).c, table(GateDecision).c
_NOW = bindparam("now", type_=_ITEMS.lease_expires_at.type)
_LEASED = _ITEMS.state == _text(ItemState.leased.value)
_OPEN_ALERT = _ALERTS.state == _text(AlertState.open.value)
_IS_MODEL_CHANGE = _ALERTS.kind == _text(SERVED_MODEL_CHANGE)

# (family, a, b, c, n): every small count of a scrape in one round trip.
COUNTS = union_all(
    select(_text("queue").label("family"), _KEPT.value.label("a"), _NONE.label("b"), _NONE.label("c"),
           _KEPT.n.label("n")).where(_KEPT.kind == _text(QUEUE), _KEPT.n != 0),
    select(_text("label"), _KEPT.value, _NONE, _NONE, _KEPT.n).where(_KEPT.kind == _text(LABEL), _KEPT.n != 0),
    select(_text("leases"), _text("held"), _NONE, _NONE, func.count()).where(_LEASED),
    select(_text("leases"), _text("lapsed"), _NONE, _NONE, func.count()).where(_LEASED, _ITEMS.lease_expires_at < _NOW),
    select(_text("drift"), _ALERTS.tier, _ALERTS.criterion, _ALERTS.kind, func.count())
    .where(_OPEN_ALERT, ~_IS_MODEL_CHANGE).group_by(_ALERTS.tier, _ALERTS.criterion, _ALERTS.kind),
    select(_text("model_change"), _ALERTS.tier, _ALERTS.criterion, func.coalesce(_ALERTS.release, _NONE), func.count())
    .where(_OPEN_ALERT, _IS_MODEL_CHANGE).group_by(_ALERTS.tier, _ALERTS.criterion, _ALERTS.release),
    select(_text("gate"), cast(_GATES.exit_code, String), _NONE, _NONE, func.count()).group_by(_GATES.exit_code),
).order_by("family", "a", "b", "c")  # fmt: skip

_RUNS, _SNAPSHOTS = table(EvalRun).c, table(CalibrationSnapshot).c
# (what, kind, at): the newest completed run of each kind (or paused at the spend cap: its picks are stored),
# calibration snapshot and evaluated gate decision.
LAST_TIMES = union_all(
    select(_text("run").label("what"), _RUNS.kind.label("kind"), func.max(_RUNS.finished_at).label("at"))
    .where(or_(_RUNS.status == _text(RunStatus.completed.value), _RUNS.status == _text(RunStatus.paused.value)))
    .group_by(_RUNS.kind),
    select(_text("calibration"), _NONE, func.max(_SNAPSHOTS.computed_at)),
    select(_text("gate"), _NONE, func.max(_GATES.decided_at)).where(_GATES.exit_code.in_([0, 1])),
)  # fmt: skip

VERDICT_COUNTS = select(*table(VerdictCount).c)

_NEWEST = (
    select(_SNAPSHOTS.rubric_name, func.max(_SNAPSHOTS.computed_at).label("at"))
    .where(_SNAPSHOTS.kind == _text("tiers"))
    .group_by(_SNAPSHOTS.rubric_name)
    .subquery()
)
TIER_SNAPSHOTS = (
    select(_SNAPSHOTS.rubric_name, _SNAPSHOTS.payload, _SNAPSHOTS.computed_at)
    .join(_NEWEST, (_SNAPSHOTS.rubric_name == _NEWEST.c.rubric_name) & (_SNAPSHOTS.computed_at == _NEWEST.c.at))
    .where(_SNAPSHOTS.kind == _text("tiers"))
    .order_by(_SNAPSHOTS.rubric_name, _SNAPSHOTS.scope)
)
_TRUST = table(TrustRecord).c
TRUST = (
    select(_TRUST.judge_name, _TRUST.dataset, _TRUST.figures)
    .where(_TRUST.evidence.in_(bindparam("evidence", expanding=True)))
    .order_by(_TRUST.measured_at.desc(), _TRUST.id)
)


def verdict_counts(*, session: Session) -> list[Row[Any]]:
    """Every row of the write-time verdict counts: one per combination of label values, a few hundred at most."""
    return list(session.execute(VERDICT_COUNTS))


def bounded_counts(*, session: Session, now: datetime) -> dict[str, list[Count]]:
    """The small counts, by family: queue buckets, labels, leases, open drift and model-change alerts, gates."""
    found: dict[str, list[Count]] = defaultdict(list)
    for family, a, b, c, n in session.execute(COUNTS, {"now": now}):
        labels = (a,) if family in ("queue", "label", "leases", "gate") else (a, b, c)
        found[family].append(Count(labels, float(n)))
    return found


def review_queue(*, buckets: Sequence[Count], leases: Sequence[Count]) -> list[Count]:
    """Review items per queue state from the kept buckets (`open`: available or leased) and the leases held and lapsed;
    a lease that has run out counts as waiting, as the queue treats it."""
    kept = {row.labels[0]: row.value for row in buckets}
    lease = {row.labels[0]: row.value for row in leases}
    running = lease.get("held", 0.0) - lease.get("lapsed", 0.0)
    kept[ItemState.available.value] = kept.pop(OPEN, 0.0) - running
    kept[ItemState.leased.value] = running
    return [Count((state,), n) for state, n in kept.items()]


def last_successes(*, session: Session) -> tuple[list[Count], float | None]:
    """Unix time of the last completed run of each run kind and of the last calibration snapshot; and of the
    last gate decision that evaluated the release (exit 0 or 1), None if none did."""
    runs: list[Count] = []
    gate: float | None = None
    for what, kind, at in session.execute(LAST_TIMES):
        if at is None:
            continue
        if what == "gate":
            gate = _unix(at)
        else:
            runs.append(Count((str(kind) if what == "run" else "calibration",), _unix(at)))
    return runs, gate


def _unix(at: datetime | str) -> float:
    # SQLite returns MAX() of a timestamp as text, without the column type's conversion.
    value = datetime.fromisoformat(at) if isinstance(at, str) else at
    return value.timestamp() if value.tzinfo else value.replace(tzinfo=UTC).timestamp()


def latest_tier_snapshots(*, session: Session) -> list[Row[Any]]:
    """The newest "tiers" snapshot of each rubric (one row per rubric name: its name, payload and computed_at)."""
    seen: dict[str | None, Row[Any]] = {}
    for snapshot in session.execute(TIER_SNAPSHOTS):
        seen.setdefault(snapshot.rubric_name, snapshot)
    return list(seen.values())


def trust_records(
    *, session: Session, evidence: Sequence[str] = (TrustEvidence.known_answers.value,)
) -> list[Row[Any]]:
    """Known-answer trust records (judge, dataset, figures), newest measurement first."""
    return list(session.execute(TRUST, {"evidence": list(evidence)}))
