"""Which judge series the tier numbers rest on: one judge configuration and rubric version (`Series`). The default is
the one the latest gate used, else that of the latest gate whose judge graded tiers (a judge validation run has no
tiers); verdicts of anchor re-judging runs never make a series."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Engine, Row, func, or_, select

from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, VerdictStatus
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.releases import GateDecision
from judgewatch.storage.runs import EvalRun, RunKind
from judgewatch.storage.verdicts import VerdictRecord, is_current

MAX_SERIES = 5  # series offered (newest first): each costs the calibration flow one summary per period
GATES_LOOKED_AT = 50


class SeriesChoice(NamedTuple):
    series: Series
    reason: str  # one line: why this series is the default


@dataclass(frozen=True, slots=True)
class Series:
    """The judge configuration and rubric version a set of numbers rests on."""

    judge: JudgeIdentity
    rubric: RubricIdentity
    last_verdict_at: datetime


def _scored(rubric_name: str) -> tuple[ColumnElement[bool], ...]:
    """Current scored verdicts under `rubric_name`, anchor re-judging runs left out (outer join on the run)."""
    v, runs = table(VerdictRecord).c, table(EvalRun).c
    return (
        v.rubric_name == rubric_name,
        v.status == VerdictStatus.scored.value,
        is_current(),
        or_(runs.kind.is_(None), runs.kind != RunKind.anchor.value),
    )


def _series(rubric_name: str, row: Row[Any]) -> Series:
    """A series from a row of (judge kind, name, endpoint, configuration hash, rubric version, rubric hash, time)."""
    kind, name, endpoint, config_hash, version, rubric_hash, at = row
    judge = JudgeIdentity(kind=kind, name=name, endpoint=endpoint, config_hash=config_hash)
    return Series(judge, RubricIdentity(name=rubric_name, version=version, hash=rubric_hash), at)


def current_series(
    engine: Engine, *, rubric_name: str, rubric_version: str | None = None, judge_config_hash: str | None = None
) -> Series | None:
    """The judge configuration (and rubric version) with the most recent scored verdict under `rubric_name`."""
    v, runs = table(VerdictRecord).c, table(EvalRun).c
    query = (
        select(v.judge_kind, v.judge_name, v.judge_endpoint, v.judge_config_hash, v.rubric_version, v.rubric_hash,
               v.updated_at)
        .outerjoin(table(EvalRun), runs.id == v.run_id)
        .where(*_scored(rubric_name))
        .order_by(v.updated_at.desc(), v.id)
        .limit(1)
    )  # fmt: skip
    for column, value in ((v.rubric_version, rubric_version), (v.judge_config_hash, judge_config_hash)):
        if value is not None:
            query = query.where(column == value)
    with session_scope(engine) as session:
        row = session.execute(query).first()
    return _series(rubric_name, row) if row is not None else None


def tiered_series(
    engine: Engine, *, rubric_name: str, rubric_version: str | None = None, limit: int = MAX_SERIES
) -> list[Series]:
    """Judge series with scored verdicts on tiered items under `rubric_name`, the most recent first."""
    v, i, runs = table(VerdictRecord).c, table(Interaction).c, table(EvalRun).c
    last = func.max(v.updated_at)
    query = (
        select(func.max(v.judge_kind), func.max(v.judge_name), func.max(v.judge_endpoint), v.judge_config_hash,
               v.rubric_version, func.max(v.rubric_hash), last)
        .join(table(Interaction), i.id == v.interaction_id)
        .outerjoin(table(EvalRun), runs.id == v.run_id)
        .where(*_scored(rubric_name), i.tier.is_not(None))
        .group_by(v.judge_config_hash, v.rubric_version)
        .order_by(last.desc())
        .limit(limit)
    )  # fmt: skip
    if rubric_version is not None:
        query = query.where(v.rubric_version == rubric_version)
    with session_scope(engine) as session:
        rows = session.execute(query).all()
    return [_series(rubric_name, row) for row in rows]


def default_series(engine: Engine, *, rubric_name: str, rubric_version: str | None = None) -> SeriesChoice | None:
    """The series the latest gate used, else the latest tiered one, else the latest at all (see the module doc)."""
    candidates = tiered_series(engine, rubric_name=rubric_name, rubric_version=rubric_version)
    if not candidates:
        latest = current_series(engine, rubric_name=rubric_name, rubric_version=rubric_version)
        why = "the latest judge configuration (no judge has graded tiered items yet)"
        return SeriesChoice(latest, why) if latest is not None else None
    by_hash = {s.judge.config_hash: s for s in candidates}
    g = table(GateDecision).c
    query = select(g.release, g.judge_config_hash, g.decided_at).order_by(g.decided_at.desc()).limit(GATES_LOOKED_AT)
    with session_scope(engine) as session:
        gates = session.execute(query).all()
    for k, (release, config, at) in enumerate(gates):
        if config not in by_hash:
            continue
        when = f"release {release}, {at:%Y-%m-%d %H:%M} UTC"
        if k == 0:
            return SeriesChoice(by_hash[config], f"the judge the latest gate used ({when})")
        newest = gates[0][0]
        why = f"the judge of the latest gate that graded tiers ({when}); the newer gate of release {newest} rests "
        return SeriesChoice(by_hash[config], why + "on a judge that graded no tiered items")
    return SeriesChoice(candidates[0], "the latest judge configuration that graded tiered items (no gate used one)")
