"""The store reads behind a scrape: a few grouped queries whose results have bounded size.

Each function is keyword-only, takes a session and returns typed rows grouped by bounded values only (judge
names, rubric names, tiers, states, reasons, exit codes): never item ids, reviewer names or any text a person
or a model wrote. Only the verdict reads touch a large table, and after the first reading they are bounded by
what changed: `changed_buckets` is an index range on `verdict.updated_at` (migration m007), `verdict_groups`
with `starts` an index range on `created_at` with one primary-key lookup of the interaction per verdict.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Integer, String, case, cast, func, literal, or_, select
from sqlmodel import Session

from judgewatch.storage.calibration import SERVED_MODEL_CHANGE, AlertState, CalibrationSnapshot, DriftAlert
from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.releases import GateDecision
from judgewatch.storage.review import ItemState, ReviewItem, ReviewLabel
from judgewatch.storage.runs import EvalRun, RunStatus
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.storage.verdicts import VerdictRecord

logger = logging.getLogger(__name__)

# Upper bounds (seconds) of the judge latency histogram: a CPU judge answers in seconds, a GPU one in tenths.
LATENCY_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

# Interaction source prefixes -> the `source` label; anything else is "other" (labels stay bounded).
SOURCE_KINDS: tuple[tuple[str, str], ...] = (
    ("traffic:", "traffic"),
    ("release:", "regression"),
    ("pairwise:", "pairwise"),  # a release's tier-vs-tier pairs (judgewatch.regression.tier_preference)
    ("golden:", "golden"),
    ("file:", "file"),
)
NO_VALUE = "none"  # the label value for a missing tier, reason or dataset
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class VerdictGroup:
    """Verdicts sharing every label value, with their summed latency, histogram counts and tokens."""

    judge: str
    rubric: str
    tier: str
    source: str
    status: str
    reason: str
    fallback_chain: tuple[str, ...]  # the verdict's `fallback_from`: links tried before the one that answered
    count: int
    latency_sum_s: float
    latency_buckets: tuple[int, ...]  # cumulative counts per LATENCY_BUCKETS bound
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class Count:
    """A count under one tuple of bounded label values."""

    labels: tuple[str, ...]
    value: float


def _source_kind(column: Any) -> Any:
    return case(*[(column.like(f"{prefix}%"), literal(kind)) for prefix, kind in SOURCE_KINDS], else_=literal("other"))


def time_bucket(column: Any, dialect: str, width: timedelta) -> Any:
    """The start of the UTC `width` bucket a timestamp falls in (buckets are aligned on the Unix epoch)."""
    seconds = int(width.total_seconds())
    if dialect == "postgresql":
        return func.to_timestamp(func.floor(func.extract("epoch", column) / seconds) * seconds)
    epoch = cast(func.strftime("%s", column), Integer)
    return func.datetime((epoch / seconds) * seconds, "unixepoch")


def bucket_start(value: datetime | str) -> datetime:
    """A bucket start or timestamp as the database returns it, as an aware UTC datetime."""
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def changed_buckets(
    *, session: Session, since: datetime | None, width: timedelta
) -> tuple[set[datetime], datetime | None]:
    """Buckets (of `created_at`) holding verdicts written after `since`, and the newest `updated_at` seen.

    Bounded by what changed, not by the store: an index range scan on `updated_at` (migration m007).
    """
    v = table(VerdictRecord).c
    dialect = session.get_bind().dialect.name
    bucket = time_bucket(v.created_at, dialect, width)
    query = select(bucket, func.max(v.updated_at)).group_by(bucket)
    if since is not None:
        query = query.where(v.updated_at > since)
    buckets: set[datetime] = set()
    newest: datetime | None = None
    for value, updated in session.execute(query):
        buckets.add(bucket_start(value))
        at = bucket_start(updated)
        newest = at if newest is None or at > newest else newest
    return buckets, newest


def verdict_groups(
    *,
    session: Session,
    width: timedelta = HOUR,
    starts: Sequence[datetime] | None = None,
    created_before: datetime | None = None,
    created_from: datetime | None = None,
) -> list[tuple[datetime, VerdictGroup]]:
    """Verdicts grouped by `width` bucket of creation, judge, rubric, tier, source kind, status, reason, chain.

    `starts` limits the read to those buckets (index range scans on `created_at`); `created_before` and
    `created_from` to a time range; with neither, every verdict is read.
    """
    v, i = table(VerdictRecord).c, table(Interaction).c
    dialect = session.get_bind().dialect.name
    bounded = starts is not None or created_from is not None
    if bounded:
        # A few minutes or hours of verdicts: look each one's interaction up by primary key. A join would let the
        # planner pick a hash join (reading all of `interaction`) or an outer scan of `interaction`.
        tier: Any = select(i.tier).where(i.id == v.interaction_id).scalar_subquery()
        origin: Any = select(i.source).where(i.id == v.interaction_id).scalar_subquery()
        source_table: Any = table(VerdictRecord)
    else:  # every verdict (the first reading): one hash join over both tables is the cheapest plan
        tier, origin = i.tier, i.source
        source_table = table(VerdictRecord).join(table(Interaction), i.id == v.interaction_id)
    per_verdict = select(
        time_bucket(v.created_at, dialect, width).label("bucket"),
        v.judge_name.label("judge"),
        v.rubric_name.label("rubric"),
        tier.label("tier"),
        _source_kind(origin).label("source"),
        v.status.label("status"),
        v.unscored_reason.label("reason"),
        cast(v.fallback_from, String).label("chain"),
        (v.latency_ms / 1000.0).label("latency_s"),
        v.prompt_tokens.label("prompt"),
        v.completion_tokens.label("completion"),
        v.cached_tokens.label("cached"),
    ).select_from(source_table)
    if starts is not None:
        if not starts:
            return []
        per_verdict = per_verdict.where(or_(*[(v.created_at >= at) & (v.created_at < at + width) for at in starts]))
    if created_before is not None:
        per_verdict = per_verdict.where(v.created_at < created_before)
    if created_from is not None:
        per_verdict = per_verdict.where(v.created_at >= created_from)
    r = per_verdict.subquery().c
    keys = (r.bucket, r.judge, r.rubric, r.tier, r.source, r.status, r.reason, r.chain)
    query = select(
        *keys,
        func.count(),
        func.sum(r.latency_s),
        func.sum(r.prompt),
        func.sum(r.completion),
        func.sum(r.cached),
        *[func.sum(case((r.latency_s <= bound, 1), else_=0)) for bound in LATENCY_BUCKETS],
    ).group_by(*keys)
    groups = []
    for row in session.execute(query):
        at, judge, rubric, tier, source_kind, status, reason, chain_text, n, lat, p, c, cached, *counts = row
        group = VerdictGroup(
            judge=judge,
            rubric=rubric,
            tier=tier or NO_VALUE,
            source=source_kind,
            status=status,
            reason=reason or NO_VALUE,
            fallback_chain=_chain(chain_text),
            count=int(n),
            latency_sum_s=float(lat or 0.0),
            latency_buckets=tuple(int(x or 0) for x in counts),
            prompt_tokens=int(p or 0),
            completion_tokens=int(c or 0),
            cached_tokens=int(cached or 0),
        )
        groups.append((bucket_start(at), group))
    return groups


def _chain(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    value = json.loads(text)
    return tuple(str(link) for link in value) if isinstance(value, list) else ()


def review_queue(*, session: Session, now: datetime) -> list[Count]:
    """Review items per queue state; a lease that has run out counts as waiting, as the queue treats it."""
    r = table(ReviewItem).c
    expired = (r.state == ItemState.leased.value) & (r.lease_expires_at < now)
    state = case((expired, literal(ItemState.available.value)), else_=r.state)
    query = select(state, func.count()).group_by(state)
    return [Count((str(s),), float(n)) for s, n in session.execute(query)]


def review_labels(*, session: Session, after_id: int = 0) -> tuple[list[Count], int]:
    """Labels with an id above `after_id` that score an item (no skips, no bare flags), per tier; and the top id.

    Labels are only ever added, so a collector counts each once by remembering the highest id it has read.
    """
    lab, item, i = table(ReviewLabel).c, table(ReviewItem).c, table(Interaction).c
    top = session.execute(select(func.max(lab.id)).where(lab.id > after_id)).scalar()
    if top is None:
        return [], after_id
    query = (
        select(i.tier, func.count())
        .select_from(
            table(ReviewLabel)
            .join(table(ReviewItem), item.id == lab.review_item_id)
            .join(table(Interaction), i.id == item.interaction_id)
        )
        .where(lab.id > after_id, lab.id <= top, lab.skipped_reason.is_(None), lab.flagged.is_(False))
        .group_by(i.tier)
    )
    return [Count((tier or NO_VALUE,), float(n)) for tier, n in session.execute(query)], int(top)


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
