"""Which judge series the tier numbers rest on: every series that graded tiered items, and the default one.

A series is one judge configuration and rubric version. The Tiers page offers each series with tiered
verdicts; by default it shows the one the latest gate used, since that is the judge a release was decided on.
A gate that could not judge (an untrustworthy judge refused before grading) names a judge with no tiered
verdicts: the default then falls back to the latest gate whose judge graded tiers, and says so. A judge
validation run has no tiers, so it never becomes the default, however recent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import Engine, func, or_, select

from judgewatch.calibration.score_frame import Series, current_series
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, VerdictStatus
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.releases import GateDecision
from judgewatch.storage.runs import EvalRun, RunKind
from judgewatch.storage.verdicts import VerdictRecord, is_current

logger = logging.getLogger(__name__)

MAX_SERIES = 5  # series offered (newest first): each costs the calibration flow one summary per period
GATES_LOOKED_AT = 50


@dataclass(frozen=True, slots=True)
class SeriesChoice:
    series: Series
    reason: str  # one line: why this series is the default


def tiered_series(
    engine: Engine, *, rubric_name: str, rubric_version: str | None = None, limit: int = MAX_SERIES
) -> list[Series]:
    """Judge series with scored verdicts on tiered items under `rubric_name`, the most recent first.

    Anchor re-judging runs do not make a series (see `score_frame.current_series`)."""
    v, i, runs = table(VerdictRecord).c, table(Interaction).c, table(EvalRun).c
    last = func.max(v.updated_at)
    query = (
        select(
            v.judge_config_hash,
            v.rubric_version,
            func.max(v.judge_kind),
            func.max(v.judge_name),
            func.max(v.judge_endpoint),
            func.max(v.rubric_hash),
            last,
        )
        .join(table(Interaction), i.id == v.interaction_id)
        .outerjoin(table(EvalRun), runs.id == v.run_id)
        .where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value, is_current())
        .where(i.tier.is_not(None), or_(runs.kind.is_(None), runs.kind != RunKind.anchor.value))
        .group_by(v.judge_config_hash, v.rubric_version)
        .order_by(last.desc())
        .limit(limit)
    )
    if rubric_version is not None:
        query = query.where(v.rubric_version == rubric_version)
    with session_scope(engine) as session:
        rows = session.execute(query).all()
    return [
        Series(
            JudgeIdentity(kind=kind, name=name, endpoint=endpoint, config_hash=config),
            RubricIdentity(name=rubric_name, version=version, hash=rubric_hash),
            at,
        )
        for config, version, kind, name, endpoint, rubric_hash, at in rows
    ]


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
