"""Stored verdicts, read back whole in one query (`scores` is JSON), each score repeated as a `CriterionScore` row so
per-criterion statistics are ordinary SQL. `upsert_verdicts`, the only writer, writes both, the verdict counts and
the current marks in one transaction; readers that estimate or route read `is_current` rows only (`refresh_current`
says which verdicts are superseded), so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlmodel import Session

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import UnscoredReason, Verdict
from judgewatch.storage.db import CHUNK, select_matching, table, upsert
from judgewatch.storage.interactions import interaction_id, upsert_item_rows
from judgewatch.storage.types import identity_columns, utcnow
from judgewatch.storage.verdict_counts import CountedWrite, add_spend
from judgewatch.storage.verdict_tables import CriterionScore as CriterionScore
from judgewatch.storage.verdict_tables import VerdictRecord as VerdictRecord
from judgewatch.storage.verdict_tables import verdict_id as verdict_id

DETAIL_MAX_CHARS = 4000

# Unscored because the endpoint failed, not because of what the judge said (judges.errors.ENDPOINT_REASONS).
_ENDPOINT_FAILURES = frozenset(
    {UnscoredReason.endpoint_down.value, UnscoredReason.timeout.value, UnscoredReason.rate_limited.value}
)


def is_current() -> ColumnElement[bool]:
    """The WHERE clause of current verdicts: those no other verdict superseded."""
    return table(VerdictRecord).c.superseded_by.is_(None)


def verdict_row(interaction_id: str, verdict: Verdict, *, run_id: str | None, now: datetime) -> dict[str, Any]:
    """The `verdict` table row of one Verdict, as a plain dict for bulk upserts."""
    detail = verdict.detail
    if detail is not None and len(detail) > DETAIL_MAX_CHARS:
        detail = detail[: DETAIL_MAX_CHARS - 3] + "..."
    judge, rubric, tokens = verdict.judge, verdict.rubric, verdict.tokens
    return {
        "id": verdict_id(interaction_id, rubric.hash, judge.config_hash), "interaction_id": interaction_id,
        "item_id": verdict.item_id, "run_id": run_id, "status": verdict.status.value,
        "unscored_reason": verdict.unscored_reason.value if verdict.unscored_reason else None, "detail": detail,
        "overall": verdict.overall, "reason": verdict.reason, "scores": verdict.scores,
        "expected_scores": verdict.expected_scores or None, "score_reading": verdict.score_reading.value,
        "not_applicable": verdict.not_applicable, **identity_columns(judge, rubric), "latency_ms": verdict.latency_ms,
        "prompt_tokens": tokens.prompt, "completion_tokens": tokens.completion, "cached_tokens": tokens.cached,
        "attempts": verdict.attempts, "fallback_from": verdict.fallback_from,
        "trimmed": verdict.trimmed.model_dump() if verdict.trimmed else None,
        "superseded_by": None,  # `refresh_current` decides, right after the upsert
        "created_at": now, "updated_at": now,
    }  # fmt: skip


def criterion_rows(verdict_row_id: str, verdict: Verdict) -> list[dict[str, Any]]:
    not_applicable = set(verdict.not_applicable)
    names = list(verdict.scores) + [n for n in verdict.not_applicable if n not in verdict.scores]
    return [
        {
            "verdict_id": verdict_row_id, "criterion": name, "score": verdict.scores.get(name),
            "expected": verdict.expected_scores.get(name), "not_applicable": name in not_applicable,
        }
        for name in names
    ]  # fmt: skip


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
    counted = CountedWrite(session, [row["interaction_id"] for row in rows.values()])
    keep_first = ("id", "created_at")
    columns = [c.name for c in table(VerdictRecord).columns if c.name not in keep_first]
    upsert(session, table(VerdictRecord), list(rows.values()), update_columns=columns)
    # Replace, not merge, each verdict's criteria: a verdict that became unscored must lose its old scores.
    score_table = table(CriterionScore)
    ids = list(rows)
    for start in range(0, len(ids), CHUNK):
        session.execute(delete(score_table).where(score_table.c.verdict_id.in_(ids[start : start + CHUNK])))
    score_rows = [r for rs in scores.values() for r in rs]
    for start in range(0, len(score_rows), CHUNK):
        session.execute(score_table.insert(), score_rows[start : start + CHUNK])
    refresh_current(session=session, interaction_ids=counted.interaction_ids)
    counted.finish(ids)
    add_spend(session=session, rows=rows.values())
    return len(rows)


def refresh_current(*, session: Session, interaction_ids: Sequence[str]) -> int:
    """Recompute `superseded_by` for these interactions' verdicts; returns how many rows changed. Per (interaction,
    rubric hash): verdicts of a judge working normally stay current (several judges may each have one); weak verdicts (a
    fallback judge's, or unscored because the endpoint failed) are superseded by the newest normal one, or, with none,
    by the newest weak one."""
    tbl = table(VerdictRecord)
    columns = (tbl.c.id, tbl.c.interaction_id, tbl.c.rubric_hash, tbl.c.fallback_from, tbl.c.unscored_reason)
    order = (tbl.c.updated_at, tbl.c.id)
    ids = list(dict.fromkeys(interaction_ids))
    wanted: dict[str | None, list[str]] = {}
    for start in range(0, len(ids), CHUNK):
        query = select(*columns, tbl.c.superseded_by).where(tbl.c.interaction_id.in_(ids[start : start + CHUNK]))
        groups: dict[tuple[str, str], list[tuple[str, bool, str | None]]] = {}
        for vid, iid, rubric_hash, fallback_from, reason, superseded_by in session.execute(query.order_by(*order)):
            weak = bool(fallback_from) or reason in _ENDPOINT_FAILURES
            groups.setdefault((iid, rubric_hash), []).append((vid, weak, superseded_by))
        for rows in groups.values():  # oldest first
            normal = [vid for vid, weak, _ in rows if not weak]
            newest = normal[-1] if normal else rows[-1][0]
            for vid, weak, superseded_by in rows:
                target = newest if weak and vid != newest else None
                if target != superseded_by:
                    wanted.setdefault(target, []).append(vid)
    for target, vids in wanted.items():
        for start in range(0, len(vids), CHUNK):
            chunk = vids[start : start + CHUNK]
            session.execute(update(tbl).where(tbl.c.id.in_(chunk)).values(superseded_by=target))
    return sum(len(v) for v in wanted.values())


def store_judged(
    *, session: Session, source: str, run_id: str | None, judged: Sequence[tuple[JudgeItem, Verdict]]
) -> int:
    """Store new items of `source` (item columns only) with their verdicts, keyed by (source, item id)."""
    upsert_item_rows(session=session, source=source, items=[item for item, _ in judged])
    pairs = [(interaction_id(source, item.id), verdict) for item, verdict in judged]
    return upsert_verdicts(session=session, run_id=run_id, verdicts=pairs)


def judged_interactions(
    *,
    session: Session,
    interaction_ids: Sequence[str],
    rubric_hash: str,
    judge_config_hash: str,
    retry_reasons: Collection[str] = (),
) -> dict[str, str]:
    """Already judged? {interaction id: verdict id} of those with a verdict under this rubric and judge. A verdict left
    unscored for one of `retry_reasons` (say a timeout) does not count: that item is judged again."""
    tbl = table(VerdictRecord)
    found: dict[str, str] = {}
    ids = list(dict.fromkeys(interaction_ids))
    for start in range(0, len(ids), CHUNK):
        query = select(tbl.c.interaction_id, tbl.c.id, tbl.c.unscored_reason).where(
            tbl.c.interaction_id.in_(ids[start : start + CHUNK]),
            tbl.c.rubric_hash == rubric_hash,
            tbl.c.judge_config_hash == judge_config_hash,
        )
        for iid, vid, reason in session.execute(query).tuples():
            if reason is None or reason not in retry_reasons:
                found[iid] = vid
    return found


def get_verdicts(
    *,
    session: Session,
    run_id: str | None = None,
    interaction_ids: Sequence[str] | None = None,
    judge_config_hash: str | None = None,
    verdict_ids: Sequence[str] | None = None,
) -> list[VerdictRecord]:
    """Stored verdicts matching every given filter, oldest first; `record.to_verdict()` gives the Verdict."""
    tbl = table(VerdictRecord)
    query = select_matching(VerdictRecord, run_id=run_id, judge_config_hash=judge_config_hash)
    if interaction_ids is not None:
        query = query.where(tbl.c.interaction_id.in_(list(interaction_ids)))
    if verdict_ids is not None:
        query = query.where(tbl.c.id.in_(list(verdict_ids)))
    return list(session.scalars(query.order_by(tbl.c.created_at, tbl.c.id)))


def get_criterion_scores(*, session: Session, verdict_ids: Sequence[str]) -> list[CriterionScore]:
    tbl = table(CriterionScore)
    query = select(CriterionScore).where(tbl.c.verdict_id.in_(list(verdict_ids)))
    return list(session.scalars(query.order_by(tbl.c.verdict_id, tbl.c.criterion)))


def count_by_status(*, session: Session) -> dict[str, int]:
    """{"scored": n, "unscored": m} (statuses with no verdict are left out)."""
    return _count_by(session, "status")


def count_by_unscored_reason(*, session: Session) -> dict[str, int]:
    """{reason: n} over the unscored verdicts."""
    return _count_by(session, "unscored_reason")


def _count_by(session: Session, column: str) -> dict[str, int]:
    key = table(VerdictRecord).c[column]
    query = select(key, func.count()).where(key.is_not(None)).group_by(key)
    return {str(value): int(count) for value, count in session.execute(query).tuples()}
