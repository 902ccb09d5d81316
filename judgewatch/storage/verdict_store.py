"""Data access for interactions, runs, verdicts and quarantined rows: keyword-only functions taking a session.

Writes are batched idempotent upserts (`INSERT ... ON CONFLICT`) keyed by deterministic ids, so storing the
same verdicts twice changes nothing and a crashed run can simply be run again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Table, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import RubricIdentity, Verdict
from judgewatch.storage.interactions import ITEM_COLUMNS, Interaction, interaction_id, item_row
from judgewatch.storage.migrations import table
from judgewatch.storage.quarantine import QuarantinedRow, QuarantineRecord, bounded_excerpt, quarantine_id
from judgewatch.storage.runs import EvalRun, RunStatus, run_id
from judgewatch.storage.types import utcnow
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord, criterion_rows, verdict_row

_CHUNK = 1000  # rows per statement: well under SQLite's and PostgreSQL's bound-parameter limits


def _upsert(
    session: Session, tbl: Table, rows: Sequence[dict[str, Any]], *, update_columns: Sequence[str] | None
) -> None:
    """Bulk INSERT ... ON CONFLICT (primary key) DO UPDATE the given columns (DO NOTHING when None)."""
    if not rows:
        return
    key = [c.name for c in tbl.primary_key.columns]
    # One statement must not touch a row twice (PostgreSQL refuses): the last row for a key wins.
    unique = list({tuple(r[k] for k in key): r for r in rows}.values())
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        stmt: Any = sqlite_insert(tbl)
    elif dialect == "postgresql":
        stmt = pg_insert(tbl)
    else:
        raise NotImplementedError(f"no upsert for database dialect {dialect!r} (use SQLite or PostgreSQL)")
    if update_columns:
        stmt = stmt.on_conflict_do_update(index_elements=key, set_={c: stmt.excluded[c] for c in update_columns})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=key)
    for start in range(0, len(unique), _CHUNK):
        session.execute(stmt, unique[start : start + _CHUNK])


def upsert_interactions(
    *, session: Session, interactions: Iterable[Interaction], update_columns: Sequence[str] | None = None
) -> int:
    """Insert or update interactions by id; `update_columns` limits what an existing row gets (default: all)."""
    tbl = table(Interaction)
    rows = [i.model_dump(by_alias=False) for i in interactions]
    for row in rows:
        row["metadata"] = row.pop("meta")
    columns = update_columns or [c.name for c in tbl.columns if c.name not in ("id", "created_at")]
    _upsert(session, tbl, rows, update_columns=columns)
    return len(rows)


def upsert_verdicts(*, session: Session, run_id: str | None, verdicts: Iterable[tuple[str, Verdict]]) -> int:
    """Store (interaction_id, Verdict) pairs; the same interaction+rubric+judge config replaces its verdict."""
    now = utcnow()
    rows: dict[str, dict[str, Any]] = {}
    scores: dict[str, list[dict[str, Any]]] = {}
    for iid, verdict in verdicts:
        row = verdict_row(iid, verdict, run_id=run_id, now=now)
        rows[row["id"]] = row
        scores[row["id"]] = criterion_rows(row["id"], verdict)
    if not rows:
        return 0
    verdict_table = table(VerdictRecord)
    keep_first = ("id", "created_at")
    _upsert(
        session,
        verdict_table,
        list(rows.values()),
        update_columns=[c.name for c in verdict_table.columns if c.name not in keep_first],
    )
    # Replace, not merge, each verdict's criteria: a verdict that became unscored must lose its old scores.
    score_table = table(CriterionScore)
    ids = list(rows)
    for start in range(0, len(ids), _CHUNK):
        session.execute(delete(score_table).where(score_table.c.verdict_id.in_(ids[start : start + _CHUNK])))
    score_rows = [r for rs in scores.values() for r in rs]
    for start in range(0, len(score_rows), _CHUNK):
        session.execute(score_table.insert(), score_rows[start : start + _CHUNK])
    return len(rows)


def store_judged(
    *, session: Session, source: str, run_id: str | None, judged: Sequence[tuple[JudgeItem, Verdict]]
) -> int:
    """The judging pipeline's batch write: each item's interaction (item columns only), then its verdict."""
    now = utcnow()
    rows = [item_row(item, source=source, now=now) for item, _ in judged]
    _upsert(session, table(Interaction), rows, update_columns=ITEM_COLUMNS)
    pairs = [(interaction_id(source, item.id), verdict) for item, verdict in judged]
    return upsert_verdicts(session=session, run_id=run_id, verdicts=pairs)


def get_verdicts(
    *,
    session: Session,
    run_id: str | None = None,
    interaction_ids: Sequence[str] | None = None,
    rubric_hash: str | None = None,
    judge_config_hash: str | None = None,
) -> list[VerdictRecord]:
    """Stored verdicts matching every given filter, oldest first; `record.to_verdict()` gives the Verdict."""
    tbl = table(VerdictRecord)
    query = select(VerdictRecord)
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    if interaction_ids is not None:
        query = query.where(tbl.c.interaction_id.in_(list(interaction_ids)))
    if rubric_hash is not None:
        query = query.where(tbl.c.rubric_hash == rubric_hash)
    if judge_config_hash is not None:
        query = query.where(tbl.c.judge_config_hash == judge_config_hash)
    return list(session.scalars(query.order_by(tbl.c.created_at, tbl.c.id)))


def get_criterion_scores(*, session: Session, verdict_ids: Sequence[str]) -> list[CriterionScore]:
    tbl = table(CriterionScore)
    query = select(CriterionScore).where(tbl.c.verdict_id.in_(list(verdict_ids)))
    return list(session.scalars(query.order_by(tbl.c.verdict_id, tbl.c.criterion)))


def count_by_status(*, session: Session, run_id: str | None = None) -> dict[str, int]:
    """{"scored": n, "unscored": m} (statuses with no verdict are left out)."""
    tbl = table(VerdictRecord)
    query = select(tbl.c.status, func.count()).group_by(tbl.c.status)
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    return dict(session.execute(query).tuples().all())


def count_by_unscored_reason(*, session: Session, run_id: str | None = None) -> dict[str, int]:
    tbl = table(VerdictRecord)
    query = (
        select(tbl.c.unscored_reason, func.count())
        .where(tbl.c.unscored_reason.is_not(None))
        .group_by(tbl.c.unscored_reason)
    )
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    return dict(session.execute(query).tuples().all())


def quarantine_rows(*, session: Session, records: Iterable[QuarantineRecord], run_id: str | None = None) -> int:
    """Store rejected input rows; the same (source, position) again replaces its reason and excerpt."""
    now = utcnow()
    rows = [
        {
            "id": quarantine_id(r.source, r.position),
            "source": r.source,
            "position": r.position,
            "line": r.line,
            "reason": r.reason,
            "raw": bounded_excerpt(r.raw),
            "run_id": run_id,
            "created_at": now,
        }
        for r in records
    ]
    _upsert(session, table(QuarantinedRow), rows, update_columns=["reason", "raw", "line", "run_id"])
    return len(rows)


def get_quarantined(*, session: Session, run_id: str | None = None, source: str | None = None) -> list[QuarantinedRow]:
    tbl = table(QuarantinedRow)
    query = select(QuarantinedRow)
    if run_id is not None:
        query = query.where(tbl.c.run_id == run_id)
    if source is not None:
        query = query.where(tbl.c.source == source)
    return list(session.scalars(query.order_by(tbl.c.source, tbl.c.line, tbl.c.position)))


def start_run(
    *,
    session: Session,
    kind: str,
    name: str,
    identity: str,
    rubric: RubricIdentity | None = None,
    judge_config_hash: str | None = None,
    params: dict[str, Any] | None = None,
) -> EvalRun:
    """Create the run, or restart it (status running, counts cleared) when the same run is started again."""
    rid = run_id(kind, identity, rubric.hash if rubric else "", judge_config_hash or "")
    row = {
        "id": rid,
        "kind": kind,
        "name": name,
        "identity": identity,
        "rubric_name": rubric.name if rubric else None,
        "rubric_hash": rubric.hash if rubric else None,
        "judge_config_hash": judge_config_hash,
        "status": RunStatus.running.value,
        "started_at": utcnow(),
        "finished_at": None,
        "counts": {},
        "params": params or {},
    }
    tbl = table(EvalRun)
    _upsert(session, tbl, [row], update_columns=[c for c in row if c != "id"])
    session.flush()
    run = session.get(EvalRun, rid, populate_existing=True)
    assert run is not None
    return run


def finish_run(*, session: Session, run_id: str, status: str, counts: dict[str, Any] | None = None) -> None:
    tbl = table(EvalRun)
    session.execute(
        update(tbl).where(tbl.c.id == run_id).values(status=status, finished_at=utcnow(), counts=counts or {})
    )


def get_run(*, session: Session, run_id: str) -> EvalRun | None:
    return session.get(EvalRun, run_id, populate_existing=True)
