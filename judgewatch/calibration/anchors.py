"""The anchor set: frozen interactions every new judge configuration re-judges, compared with the previous one the
same day (weighted kappa, mean shift per criterion), before any human label arrives. A configuration judges the
anchors once (only transient failures are tried again); it judges them all again when its endpoint's fingerprint
changes or its last judging is older than `anchor_rejudge_days`, so a server change nothing reports is caught."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select

from judges.base import Judge
from judgewatch.calibration.score_frame import load_scores
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import UnscoredReason, VerdictStatus
from judgewatch.judging.run import JudgingRun
from judgewatch.stats import Estimate, bias, exact_agreement, weighted_kappa
from judgewatch.storage.calibration import AnchorSet, anchor_interaction_ids, create_anchor_set, get_anchor_set
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.runs import RunKind
from judgewatch.storage.verdicts import VerdictRecord

logger = logging.getLogger(__name__)

RETRY_REASONS = {UnscoredReason.timeout.value, UnscoredReason.endpoint_down.value, UnscoredReason.rate_limited.value}


@dataclass(frozen=True, slots=True)
class AnchorJudging:
    anchor_set: str
    judge_config_hash: str
    n_items: int
    judged_now: int  # 0 when this configuration had already judged every anchor
    run_id: str | None


@dataclass(frozen=True, slots=True)
class AnchorShift:
    """One criterion on the anchors: the new configuration against the old one, item by item."""

    criterion: str
    n: int  # anchors scored by both configurations
    mean_old: float
    mean_new: float
    mean_shift: Estimate  # mean of (new - old), Student-t interval
    weighted_kappa: Estimate  # quadratic, new vs old
    exact: Estimate


@dataclass(frozen=True, slots=True)
class AnchorComparison:
    anchor_set: str
    new_config_hash: str
    old_config_hash: str
    n_items: int
    criteria: list[AnchorShift]


def _order(key: str) -> str:
    return hashlib.sha256(f"anchor:{key}".encode()).hexdigest()


def freeze_anchor_set(
    engine: Engine,
    *,
    name: str,
    rubric_name: str,
    size: int = 100,
    judge_config_hash: str | None = None,
    description: str = "",
) -> AnchorSet:
    """Freeze `size` judged interactions, spread evenly over the tiers, chosen by a hash of their id (stable)."""
    frame = load_scores(engine, rubric_name=rubric_name, judge_config_hash=judge_config_hash)
    if frame.empty:
        raise ValueError(f"no scored verdicts under rubric {rubric_name!r} to freeze an anchor set from")
    items = frame.drop_duplicates("interaction_id")[["interaction_id", "tier"]]
    items = items.assign(order=items["interaction_id"].map(_order)).sort_values("order")
    tiers = sorted(items["tier"].unique())
    per_tier = max(1, size // len(tiers))
    chosen = items.groupby("tier", sort=True).head(per_tier)["interaction_id"].tolist()[:size]
    with session_scope(engine, write=True) as session:
        anchor = create_anchor_set(
            session=session, name=name, rubric_name=rubric_name, interaction_ids=chosen, description=description
        )
    logger.info("anchor set %s: %d items over tiers %s", name, anchor.n_items, ", ".join(tiers))
    return anchor


def _anchor_items(engine: Engine, anchor_set: str) -> tuple[AnchorSet, list[str]]:
    """The anchor set and its interaction ids; LookupError naming it when it does not exist."""
    with session_scope(engine) as session:
        anchor = get_anchor_set(session=session, name=anchor_set)
        if anchor is None:
            raise LookupError(f"no anchor set {anchor_set!r}")
        return anchor, list(anchor_interaction_ids(session=session, name=anchor_set))


async def ensure_anchor_verdicts(
    engine: Engine, *, anchor_set: str, judge: Judge, rubric: Rubric, force: bool = False
) -> AnchorJudging:
    """Re-judge the anchors with `judge` unless its configuration already did; `force`: every anchor anyway (the
    endpoint now serves something else under the same configuration)."""
    identity = judge.identity(rubric)
    anchor, ids = _anchor_items(engine, anchor_set)
    run = JudgingRun(
        engine,
        kind=RunKind.anchor,
        name=f"anchors:{anchor_set}",
        identity=anchor.items_hash,
        rubric=rubric,
        judge=judge,
        params={"anchor_set": anchor_set, "judge": identity.name},
        retry_reasons=RETRY_REASONS,
        lazy=True,  # a configuration that judged every anchor already leaves no run behind
    )
    with run:
        missing = set(ids) if force else set(ids) - set(run.already_judged_ids(ids))
        if not missing:
            logger.info("anchors %s: judge %s already judged all %d", anchor_set, identity.config_hash, len(ids))
            return AnchorJudging(anchor_set, identity.config_hash, len(ids), 0, None)
        with session_scope(engine) as session:
            rows = list(session.scalars(select(Interaction).where(table(Interaction).c.id.in_(sorted(missing)))))
        logger.info(
            "anchors %s: judge %s (%s) judges %d items", anchor_set, identity.name, identity.config_hash, len(rows)
        )
        await run.judge_stored([(row.id, row.to_item()) for row in rows], force=missing if force else ())
    return AnchorJudging(anchor_set, identity.config_hash, len(ids), run.judged_now, run.run_id)


def last_anchor_judging(engine: Engine, *, anchor_set: str, judge_config_hash: str) -> datetime | None:
    """When `judge_config_hash` last judged an anchor of the set (its newest verdict's `updated_at`, UTC);
    None when it never did."""
    anchor, ids = _anchor_items(engine, anchor_set)
    v = table(VerdictRecord).c
    query = select(func.max(v.updated_at)).where(
        v.interaction_id.in_(ids), v.rubric_name == anchor.rubric_name, v.judge_config_hash == judge_config_hash
    )
    with session_scope(engine) as session:
        last = session.execute(query).scalar()
    if last is None:
        return None
    return last if last.tzinfo is not None else last.replace(tzinfo=UTC)


def rejudge_due(last: datetime | None, *, now: datetime, period: timedelta) -> bool:
    """The anchors are due again: the configuration judged them, `period` or longer before `now`."""
    return last is not None and now - last >= period


def _previous_config(verdicts: pd.DataFrame, new_config_hash: str) -> str | None:
    """The configuration that judged the anchors last before `new_config_hash` did (else the latest other one)."""
    first = verdicts.groupby("judge_config_hash")["first_at"].min().sort_values()
    if new_config_hash not in first.index:
        return None
    others = first.drop(new_config_hash)
    if others.empty:
        return None
    before = others[others <= first[new_config_hash]]
    return str((before if not before.empty else others).index[-1])


def compare_on_anchors(
    engine: Engine,
    *,
    anchor_set: str,
    new_config_hash: str | None = None,
    old_config_hash: str | None = None,
    categories: Sequence[float] | None = None,
    n_boot: int = 1000,
) -> AnchorComparison | None:
    """New vs previous configuration on the anchors, per criterion; None when no other configuration judged them.
    `new_config_hash` defaults to the configuration that judged them last, `old_config_hash` to the one before."""
    anchor, ids = _anchor_items(engine, anchor_set)
    v = table(VerdictRecord).c
    query = select(v.judge_config_hash, v.created_at).where(
        v.interaction_id.in_(ids), v.rubric_name == anchor.rubric_name, v.status == VerdictStatus.scored.value
    )
    with session_scope(engine) as session:
        times = pd.DataFrame(session.execute(query).all(), columns=["judge_config_hash", "first_at"])
    if new_config_hash is None:
        if times.empty:
            return None
        new_config_hash = str(times.groupby("judge_config_hash")["first_at"].min().sort_values().index[-1])
    old = old_config_hash or _previous_config(times, new_config_hash)
    if old is None:
        return None
    frame = load_scores(engine, rubric_name=anchor.rubric_name, interaction_ids=ids)
    frame = frame[frame["judge_config_hash"].isin([old, new_config_hash])]
    wide = frame.pivot_table(
        index=["interaction_id", "criterion"], columns="judge_config_hash", values="judge", aggfunc="first"
    )
    return AnchorComparison(
        anchor_set, new_config_hash, old, len(ids), _shifts(wide, old, new_config_hash, categories, n_boot)
    )


def anchor_scores(engine: Engine, *, anchor_set: str, judge_config_hash: str) -> pd.DataFrame:
    """The anchors' current scores under one judge configuration: interaction_id, criterion, judge."""
    anchor, ids = _anchor_items(engine, anchor_set)
    frame = load_scores(
        engine, rubric_name=anchor.rubric_name, judge_config_hash=judge_config_hash, interaction_ids=ids
    )
    return frame[["interaction_id", "criterion", "judge"]]


def compare_before_after(
    anchor_set: str,
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    before_label: str,
    after_label: str,
    categories: Sequence[float] | None = None,
    n_boot: int = 1000,
) -> AnchorComparison:
    """The same configuration's anchor scores before and after its endpoint changed (see `anchor_scores`)."""
    both = pd.concat([before.assign(label=before_label), after.assign(label=after_label)])
    wide = both.pivot_table(index=["interaction_id", "criterion"], columns="label", values="judge", aggfunc="first")
    n_items = int(pd.concat([before["interaction_id"], after["interaction_id"]]).nunique())
    shifts = _shifts(wide, before_label, after_label, categories, n_boot) if not wide.empty else []
    return AnchorComparison(anchor_set, after_label, before_label, n_items, shifts)


def _shifts(
    wide: pd.DataFrame, old: str, new_config_hash: str, categories: Sequence[float] | None, n_boot: int
) -> list[AnchorShift]:
    """Per criterion: the `new_config_hash` column against the `old` one, item by item."""
    shifts = []
    for criterion, group in wide.groupby(level="criterion", sort=True):
        if old not in group or new_config_hash not in group:
            continue
        both = group[[old, new_config_hash]].dropna()
        if both.empty:
            continue
        o, n = both[old].to_numpy(), both[new_config_hash].to_numpy()
        cats = categories if categories is not None else np.union1d(o, n).tolist()
        shifts.append(
            AnchorShift(
                criterion=str(criterion),
                n=len(both),
                mean_old=float(o.mean()),
                mean_new=float(n.mean()),
                mean_shift=bias(n, o),
                weighted_kappa=weighted_kappa(n, o, categories=cats, n_boot=n_boot),
                exact=exact_agreement(n, o),
            )
        )
    return shifts
