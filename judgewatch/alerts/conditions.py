"""What each alert condition observes now, read where the pages, the report and the metrics read it: the newest
calibration snapshot's corrected scores (a row without an interval is not evaluated), the open drift and
served-model-change alerts, the unscored share of recent traffic verdicts, today's judge spend."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session

from judgewatch.alerts.rules import CorrectedScoreBelow, DriftAlertOpen, JudgeSpendAbove, Rule, UnscoredShareAbove
from judgewatch.calibration.report_render import fmt_num
from judgewatch.judging.spend_cap import settings_day_spend
from judgewatch.metrics.queries import latest_tier_snapshots
from judgewatch.settings import Settings
from judgewatch.storage.calibration import SERVED_MODEL_CHANGE, AlertState, DriftAlert
from judgewatch.storage.db import select_matching, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.verdicts import VerdictRecord, is_current


@dataclass(frozen=True)
class Observation:
    """One subject of a rule now: `firing` True or False, or None when it cannot be evaluated (`text` says why)."""

    subject: str
    firing: bool | None
    value: float | None
    text: str
    details: dict[str, Any] = field(default_factory=dict)


def observe(session: Session, rule: Rule, settings: Settings, now: datetime) -> list[Observation]:
    """Every subject the rule's condition covers, as the store holds it at `now`."""
    if isinstance(rule, CorrectedScoreBelow):
        return _corrected(session, rule)
    if isinstance(rule, DriftAlertOpen):
        return _drift(session, rule)
    if isinstance(rule, UnscoredShareAbove):
        return [_unscored(session, rule, now)]
    return [_spend(session, rule, settings, now)]


def _matches(rule: CorrectedScoreBelow | DriftAlertOpen, rubric: str | None, tier: str, criterion: str) -> bool:
    return all(want is None or want == got for want, got in ((rule.rubric, rubric), (rule.tier, tier),
                                                             (rule.criterion, criterion)))  # fmt: skip


def _corrected(session: Session, rule: CorrectedScoreBelow) -> list[Observation]:
    out = []
    for snapshot in latest_tier_snapshots(session=session):
        payload = snapshot.payload or {}
        for row in payload.get(rule.estimand.split("_")[0]) or []:  # "traffic" or "release" rows
            if not _matches(rule, snapshot.rubric_name, row["tier"], row["criterion"]):
                continue
            population = f"release {row['release']} / {row['dataset']}" if row.get("release") else "production traffic"
            subject = f"rubric={snapshot.rubric_name} {rule.estimand} {population} tier={row['tier']} " \
                      f"criterion={row['criterion']}"  # fmt: skip
            estimate = row.get("estimate")
            interval = f"[{fmt_num(row.get('low'))}, {fmt_num(row.get('high'))}]"
            text = (
                f"{snapshot.rubric_name} {rule.estimand} ({population}), tier {row['tier']}, {row['criterion']}: "
                f"corrected score {fmt_num(estimate)} {row.get('interval_note') or interval} (judge only "
                f"{fmt_num(row.get('judge_mean'))}; n sampled {row['n_sampled']}, n labeled {row['n_labeled']}), "
                f"threshold {rule.threshold:g}; calibration snapshot since {payload.get('since') or 'all time'}, "
                f"computed {snapshot.computed_at:%Y-%m-%d %H:%M} UTC"
            )
            known = estimate is not None and not row.get("interval_note")
            firing = (estimate < rule.threshold) if known else None
            details = {k: row.get(k) for k in ("tier", "criterion", "release", "dataset", "estimate", "low", "high")}
            details |= {"n_sampled": row["n_sampled"], "n_labeled": row["n_labeled"], "rubric": snapshot.rubric_name}
            out.append(Observation(subject, firing, estimate, text, details))
    return out


def _drift(session: Session, rule: DriftAlertOpen) -> list[Observation]:
    alerts = session.scalars(select_matching(DriftAlert, state=AlertState.open.value, rubric_name=rule.rubric))
    out = []
    for alert in alerts:
        if _matches(rule, alert.rubric_name, alert.tier, alert.criterion):
            text = ("served-model change: " if alert.kind == SERVED_MODEL_CHANGE else "") + alert.message
            details = {"drift_alert": alert.id, "kind": alert.kind, "tier": alert.tier, "criterion": alert.criterion,
                       "release": alert.release, "window_start": alert.window_start.isoformat()}  # fmt: skip
            out.append(Observation(f"drift_alert={alert.id}", True, None, text, details))
    return out


def _unscored(session: Session, rule: UnscoredShareAbove, now: datetime) -> Observation:
    v, i = table(VerdictRecord).c, table(Interaction).c
    since = now - timedelta(hours=rule.window_hours)
    query = (
        select(v.status, func.count())
        .join(table(Interaction), i.id == v.interaction_id)
        .where(is_current(), v.updated_at >= since, i.source.like("traffic:%"))
        .group_by(v.status)
    )
    if rule.rubric is not None:
        query = query.where(v.rubric_name == rule.rubric)
    if rule.tier is not None:
        query = query.where(i.tier == rule.tier)
    counts = {status: int(n) for status, n in session.execute(query)}
    total, unscored = sum(counts.values()), counts.get("unscored", 0)
    scope = f"rubric {rule.rubric or 'any'}, tier {rule.tier or 'any'}"
    share = unscored / total if total else None
    text = (
        f"unscored share of sampled traffic's current verdicts written in the last {rule.window_hours:g} h "
        f"({scope}): {unscored} of {total}"
        + (f" ({share:.1%})" if share is not None else "")
        + f", threshold {rule.threshold:.0%}"
    )
    if total < rule.min_verdicts:
        return Observation("window", None, share, f"{text}: fewer than {rule.min_verdicts} verdicts, not evaluated")
    assert share is not None
    return Observation("window", share > rule.threshold, share, text, {"unscored": unscored, "verdicts": total})


def _spend(session: Session, rule: JudgeSpendAbove, settings: Settings, now: datetime) -> Observation:
    spend = settings_day_spend(session, settings, now)
    text = f"{spend.describe()}; alert threshold {rule.threshold:g} {spend.cost.currency}"
    details = {"day": spend.day.isoformat(), **spend.cost.to_json()}
    return Observation(f"day={spend.day}", spend.cost.amount >= rule.threshold, spend.cost.amount, text, details)
