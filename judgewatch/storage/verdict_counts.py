"""Verdict counts and the day's token spend (`judge_spend_day`), kept at write time so that reading them (a metrics
scrape, the spend cap) costs a few rows, not the store (docs/operations.md says what the figures count).

`CountedWrite` keeps them inside `upsert_verdicts`' transaction, after locking the interactions it touches (so two
writers of one interaction cannot count the same change twice). `recount` computes the rows from the verdict table
(the migration's backfill, the tests' oracle), with `written` equal to the stored rows: the history of earlier
in-place re-judges is kept nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Integer, String, case, cast, delete, func, literal, select, text
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import CHUNK, dialect_insert, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.verdict_tables import VerdictRecord

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
NO_VALUE = "none"  # the label value for a missing tier or reason
# Key space of the per-interaction advisory locks (two-int form: separate from the migrations' bigint lock).
_LOCK_SPACE = 0x6A77  # "jw"


class Sums(SQLModel):
    """The figures of one count row, or a change to them."""

    written: int = 0
    current: int = 0
    latency_sum_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def add(self, other: Sums, sign: int = 1) -> None:
        for name in SUMS:
            setattr(self, name, getattr(self, name) + sign * getattr(other, name))

    def is_zero(self) -> bool:
        return not any(getattr(self, name) for name in SUMS)


class VerdictCount(Sums, table=True):
    """Verdicts under one combination of label values: written so far (ever growing) and current now."""

    __tablename__ = "verdict_count"

    judge: str = Field(primary_key=True)
    rubric: str = Field(primary_key=True)
    tier: str = Field(primary_key=True)
    source: str = Field(primary_key=True)
    status: str = Field(primary_key=True)
    reason: str = Field(primary_key=True)
    from_judge: str = Field(primary_key=True)  # '' unless a fallback link answered
    latency_bucket: int = Field(primary_key=True)  # index into LATENCY_BUCKETS; len(LATENCY_BUCKETS) is +Inf


class SpendDay(SQLModel, table=True):
    """The tokens verdicts written on one UTC day by one judge model used (re-judges included: they were spent)."""

    __tablename__ = "judge_spend_day"

    day: str = Field(primary_key=True, max_length=10)  # YYYY-MM-DD, UTC
    judge: str = Field(primary_key=True)
    verdicts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


SPEND = ("verdicts", "prompt_tokens", "completion_tokens", "cached_tokens")
KEY = ("judge", "rubric", "tier", "source", "status", "reason", "from_judge", "latency_bucket")
SUMS = tuple(Sums.model_fields)
Key = tuple[str, str, str, str, str, str, str, int]


def link_judge(link: str) -> str:
    """'openai:smollm2@http://u:p@host/v1' -> 'smollm2': a fallback link's model, without kind and endpoint."""
    return link.split("@", 1)[0].split(":", 1)[-1]


def _from_judge(chain_text: str | None) -> str:
    value = json.loads(chain_text) if chain_text else []
    return link_judge(str(value[0])) if isinstance(value, list) and value else ""


def recount(*, session: Session, where: Any = None) -> dict[Key, Sums]:
    """The counts as the verdict table holds them now (all verdicts, or those matching `where`), in one indexed
    query: one write per stored row, current = not superseded."""
    v, i = table(VerdictRecord).c, table(Interaction).c
    source = case(*[(i.source.like(f"{p}%"), literal(kind)) for p, kind in SOURCE_KINDS], else_=literal("other"))
    bucket = case(
        *[(v.latency_ms <= bound * 1000, literal(k)) for k, bound in enumerate(LATENCY_BUCKETS)],
        else_=literal(len(LATENCY_BUCKETS)),
    )
    keys = (
        v.judge_name,
        v.rubric_name,
        func.coalesce(i.tier, NO_VALUE),
        source,
        v.status,
        func.coalesce(v.unscored_reason, NO_VALUE),
        cast(v.fallback_from, String),
        bucket,
    )
    query = select(
        *keys,
        func.count(),
        func.sum(cast(v.superseded_by.is_(None), Integer)),
        func.sum(v.latency_ms / 1000.0),
        func.sum(v.prompt_tokens),
        func.sum(v.completion_tokens),
        func.sum(v.cached_tokens),
    ).select_from(table(VerdictRecord).join(table(Interaction), i.id == v.interaction_id))
    if where is not None:
        query = query.where(where)
    grouped: dict[Key, Sums] = {}
    for judge, rubric, tier, src, status, reason, chain, k, n, cur, lat, p, c, cached in session.execute(
        query.group_by(*keys)
    ):
        key: Key = (judge, rubric, tier, src, status, reason, _from_judge(chain), int(k))
        sums = Sums(
            written=n,
            current=cur or 0,
            latency_sum_s=lat or 0.0,
            prompt_tokens=p or 0,
            completion_tokens=c or 0,
            cached_tokens=cached or 0,
        )
        grouped.setdefault(key, Sums()).add(sums)
    return grouped


def _grouped_in(session: Session, column: Any, values: Sequence[str]) -> dict[Key, Sums]:
    merged: dict[Key, Sums] = {}
    unique = sorted(set(values))
    for start in range(0, len(unique), CHUNK):
        for key, sums in recount(session=session, where=column.in_(unique[start : start + CHUNK])).items():
            merged.setdefault(key, Sums()).add(sums)
    return merged


def stored_counts(*, session: Session) -> dict[Key, Sums]:
    """The maintained counts (rows whose every figure is zero are left out)."""
    tbl = table(VerdictCount)
    found: dict[Key, Sums] = {}
    for row in session.execute(select(*[tbl.c[k] for k in KEY], *[tbl.c[s] for s in SUMS])):
        sums = Sums(**dict(zip(SUMS, row[len(KEY) :], strict=True)))
        if not sums.is_zero():
            found[tuple(row[: len(KEY)])] = sums
    return found


class CountedWrite:
    """What one verdict write changes in the counts: the current counts `before` it, and at `finish` the difference
    after it plus the rows just written."""

    def __init__(self, session: Session, interaction_ids: Iterable[str]) -> None:
        self.session = session
        self.interaction_ids = sorted(set(interaction_ids))
        _lock_interactions(session, self.interaction_ids)
        self.before = self._current()

    def _current(self) -> dict[Key, Sums]:
        grouped = _grouped_in(self.session, table(VerdictRecord).c.interaction_id, self.interaction_ids)
        return {key: Sums(current=sums.current) for key, sums in grouped.items()}

    def finish(self, written_ids: Sequence[str]) -> None:
        delta = self._current()
        for key, sums in self.before.items():
            delta.setdefault(key, Sums()).add(sums, sign=-1)
        for key, sums in _grouped_in(self.session, table(VerdictRecord).c.id, written_ids).items():
            sums.current = 0  # the current part is in the before/after difference
            delta.setdefault(key, Sums()).add(sums)
        add_counts(session=self.session, deltas=delta)


def _lock_interactions(session: Session, interaction_ids: Sequence[str]) -> None:
    """Serialize count-keeping writers per interaction until the transaction ends: on PostgreSQL advisory locks in one
    sorted order (no deadlock between two batches); on SQLite an empty write takes the write lock before the first
    read, so a concurrent writer waits instead of invalidating this transaction's snapshot."""
    if not interaction_ids:
        return
    if session.get_bind().dialect.name == "postgresql":
        for start in range(0, len(interaction_ids), CHUNK):
            session.execute(
                text(
                    "SELECT count(pg_advisory_xact_lock(:space, k)) FROM "
                    "(SELECT DISTINCT hashtext(x) AS k FROM unnest(CAST(:ids AS text[])) AS x ORDER BY 1) AS keys"
                ),
                {"space": _LOCK_SPACE, "ids": list(interaction_ids[start : start + CHUNK])},
            )
    else:
        session.execute(text("UPDATE verdict_count SET written = written WHERE 0 = 1"))


def add_counts(*, session: Session, deltas: dict[Key, Sums]) -> None:
    """Add `deltas` to the stored rows (creating missing ones), in key order so concurrent writers never deadlock."""
    rows = [
        {**dict(zip(KEY, key, strict=True)), **{s: getattr(sums, s) for s in SUMS}}
        for key, sums in sorted(deltas.items())
        if not sums.is_zero()
    ]
    _add_rows(session, table(VerdictCount), KEY, SUMS, rows)


def _add_rows(session: Session, tbl: Any, key: Sequence[str], sums: Sequence[str], rows: list[dict[str, Any]]) -> None:
    """INSERT the rows, or add their `sums` to the stored row of the same `key`."""
    if not rows:
        return
    insert: Any = dialect_insert(session, tbl)
    stmt = insert.on_conflict_do_update(index_elements=list(key), set_={s: tbl.c[s] + insert.excluded[s] for s in sums})
    for start in range(0, len(rows), CHUNK):
        session.execute(stmt, rows[start : start + CHUNK])


def add_spend(*, session: Session, rows: Iterable[dict[str, Any]]) -> None:
    """Add the tokens of verdict rows just written to their UTC day's spend (in key order: no deadlock)."""
    days: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        sums = days.setdefault((row["updated_at"].date().isoformat(), row["judge_name"]), dict.fromkeys(SPEND, 0))
        sums["verdicts"] += 1
        for name in SPEND[1:]:
            sums[name] += row[name]
    spends = [{"day": day, "judge": judge, **sums} for (day, judge), sums in sorted(days.items())]
    _add_rows(session, table(SpendDay), ("day", "judge"), SPEND, spends)


def rebuild_spend(*, session: Session) -> None:
    """Replace the day spends with the stored verdicts' tokens, each at the UTC day it was last written (migration
    m020's backfill; loaders past the writer)."""
    session.execute(delete(table(SpendDay)))
    v = table(VerdictRecord).c
    if session.get_bind().dialect.name == "postgresql":
        day: Any = func.to_char(func.timezone("UTC", v.updated_at), "YYYY-MM-DD")
    else:
        day = func.strftime("%Y-%m-%d", v.updated_at)  # SQLite holds UTC without an offset
    sums = [func.coalesce(func.sum(v[name]), 0).label(name) for name in SPEND[1:]]
    query = select(day.label("day"), v.judge_name.label("judge"), func.count().label("verdicts"), *sums)
    found = [dict(row._mapping) for row in session.execute(query.group_by("day", "judge"))]
    _add_rows(session, table(SpendDay), ("day", "judge"), SPEND, found)


def rebuild(*, session: Session) -> int:
    """Replace the stored counts with a recount (the migration's backfill; bulk loaders that bypass the writer)."""
    session.execute(delete(table(VerdictCount)))
    counts = recount(session=session)
    add_counts(session=session, deltas=counts)
    return len(counts)
