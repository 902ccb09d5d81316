"""The `calibration` flow, scheduled daily: tier estimates, judge-human agreement, drift alerts, the anchor set,
served-model changes (docs/operations.md). Every step is safe to run again the same day: snapshots and alerts are
keyed by day and window, anchors judged once per configuration.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import Engine

from flows.serving import serve_declared, serve_main
from judges.factory import chain, describe, is_healthy, judge_links
from judgewatch.alerts.check import check_alerts_quietly
from judgewatch.calibration import model_change
from judgewatch.calibration.agreement import agreement_sample
from judgewatch.calibration.anchors import (
    anchor_scores,
    compare_before_after,
    compare_on_anchors,
    ensure_anchor_verdicts,
    freeze_anchor_set,
    last_anchor_judging,
    rejudge_due,
)
from judgewatch.calibration.drift import DriftConfig, detect, store_alerts
from judgewatch.calibration.fingerprint import fetch_fingerprint, record_fingerprint
from judgewatch.calibration.model_change import JudgeStability, judge_stability
from judgewatch.calibration.page_snapshots import save_views
from judgewatch.calibration.report_render import jsonable
from judgewatch.calibration.summary import CalibrationSummary, summarize
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.settings import REPO_ROOT, Settings, get_settings
from judgewatch.storage.calibration import CalibrationSnapshot, get_anchor_set, save_snapshot
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.review import NOT_BY_PEOPLE
from judgewatch.storage.types import utcnow
from judgewatch.trust.records import record_human_agreement

logger = logging.getLogger(__name__)

FLOW_NAME = "calibration"
# What the day's tier snapshot keeps of the summary, by name.
_TIER_FIELDS = (
    "estimates", "differences", "traffic", "traffic_monitor", "release", "gaps", "traffic_covers", "agreement",
    "label_counts", "excluded_verdicts",
)  # fmt: skip


def _scope(summary: CalibrationSummary) -> str:
    assert summary.series is not None
    return f"{summary.rubric_name} {summary.series.rubric.version} judge={summary.series.judge.config_hash}"


def _snapshot(engine: Engine, kind: str, scope: str, summary: CalibrationSummary | None, payload: Any) -> None:
    series = summary.series if summary is not None else None
    snapshot = CalibrationSnapshot(id="", kind=kind, scope=scope, day="", payload=jsonable(payload))
    if series is not None:
        snapshot.rubric_name, snapshot.rubric_version = series.rubric.name, series.rubric.version
        snapshot.judge_config_hash = series.judge.config_hash
    with session_scope(engine, write=True) as session:
        save_snapshot(session=session, snapshot=snapshot)


@task(name="tier-estimates", cache_policy=NO_CACHE)
def tier_snapshot(engine: Engine, rubric: Rubric, lookback_days: int) -> CalibrationSummary:
    """Compute and store the day's tier numbers for the latest judge configuration."""
    since = utcnow() - timedelta(days=lookback_days)
    summary = summarize(engine, rubric_name=rubric.name, since=since, categories=rubric.scale.levels, with_trust=False)
    if summary.series is None:
        logger.warning("calibration: no scored verdicts under %s in the last %d days", rubric.name, lookback_days)
        return summary
    payload = {"since": since, "judge": summary.series.judge, "rubric": summary.series.rubric}
    payload |= {name: getattr(summary, name) for name in _TIER_FIELDS}
    _snapshot(engine, "tiers", _scope(summary), summary, payload)
    return summary


@task(name="tiers-page-views", cache_policy=NO_CACHE)
def page_views(engine: Engine, rubric: Rubric) -> int:
    """Store what the Tiers page shows for each of its periods, so opening the page computes nothing."""
    return save_views(engine, rubric_name=rubric.name, categories=[float(x) for x in rubric.scale.levels])


@task(name="human-agreement-trust", cache_policy=NO_CACHE)
def record_trust(engine: Engine, summary: CalibrationSummary, rubric: Rubric) -> int:
    """Store per-tier judge-human agreement as trust records; people's labels only (never synthetic ones, nor
    labels derived from a dataset's annotations)."""
    if summary.series is None:
        return 0
    sample = agreement_sample(summary.frame)
    not_people = sample["label_via"].isin(NOT_BY_PEOPLE)
    people = sample[~not_people]
    if len(people) < len(sample):
        left_out = sample[not_people].groupby("label_via")["verdict_id"].nunique()
        for via, items in left_out.items():
            logger.warning("calibration: %d items labeled via %s are not trust evidence", items, via)
    stored = 0
    for tier, group in people.groupby("tier", sort=True):
        wide = group.pivot_table(index="verdict_id", columns="criterion", values=["judge", "human"], aggfunc="first")
        judge, human = ({str(c): wide[k][c].to_numpy(dtype=float) for c in wide[k].columns} for k in ("judge", "human"))
        record_human_agreement(
            engine, judge=summary.series.judge, rubric=summary.series.rubric, tier=str(tier), judge_scores=judge,
            human_scores=human, categories=np.asarray(rubric.scale.levels, dtype=float), source="review",
        )  # fmt: skip
        stored += 1
    return stored


@task(name="drift", cache_policy=NO_CACHE)
def drift_alerts(engine: Engine, summary: CalibrationSummary, family_alpha: float) -> dict[str, Any]:
    """Test every tier and criterion for drift; store new alerts, resolve those now within chance."""
    if summary.series is None:
        return {"tested": 0, "new_alerts": 0, "open_alerts": 0, "resolved": 0}
    run = detect(summary.frame, summary.series, config=DriftConfig(family_alpha=family_alpha))
    store_alerts(engine, run, family_alpha=family_alpha)
    points = [{"tier": r.tier, "criterion": r.criterion, "window": r.window, "points": r.points} for r in run.results]
    tests = [r for r in run.results if r.test is not None]
    _snapshot(
        engine, "drift", _scope(summary), summary, {"series": points, "tests": tests, "alpha": run.alpha_per_test}
    )
    return {
        "tested": run.n_tests,
        "alpha_per_test": run.alpha_per_test,
        "new_alerts": len(run.new_alert_ids),
        "alerting_series": len(run.alerts),
        "resolved": run.resolved,
    }


@task(name="anchors", cache_policy=NO_CACHE)
async def anchors(
    engine: Engine,
    summary: CalibrationSummary,
    rubric: Rubric,
    settings: Settings,
    *,
    name: str,
    size: int,
    judge_spec: str | None,
    rejudge: bool,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Freeze the anchor set if it does not exist, re-judge it with the configured judge, compare (docs/operations.md,
    "Drift": when it is judged again). `now`: when `settings.anchor_rejudge_days` is counted to (default: the clock)."""
    with session_scope(engine) as session:
        exists = get_anchor_set(session=session, name=name) is not None
    if not exists:
        if summary.series is None:
            return {"anchor_set": name, "status": "no verdicts to freeze an anchor set from"}
        freeze_anchor_set(
            engine, name=name, rubric_name=rubric.name, size=size, judge_config_hash=summary.series.judge.config_hash
        )
    out: dict[str, Any] = {"anchor_set": name}
    new_hash = summary.series.judge.config_hash if summary.series else None
    before = None  # the anchors' scores before the same configuration judged them again
    labels = ("", "")  # (before, after) names of those scores
    if rejudge:
        judge = chain(judge_links(judge_spec, settings, fallback_reference=False, rubric=rubric, engine=engine))
        try:
            new_hash = judge.identity(rubric).config_hash
            out.update(endpoint_fingerprint(engine, judge))
            changed = bool(out.get("fingerprint_changed"))
            last = last_anchor_judging(engine, anchor_set=name, judge_config_hash=new_hash)
            today = now or datetime.now(UTC)
            scheduled = rejudge_due(last, now=today, period=timedelta(days=settings.anchor_rejudge_days))
            out.update(anchors_last_judged=last.isoformat() if last else None, scheduled_rejudge=scheduled)
            if changed:
                labels = (f"{new_hash}@{out.get('previous_fingerprint')}", f"{new_hash}@{out.get('fingerprint')}")
            elif scheduled:  # no fingerprint change: the anchors' scores when last judged and today
                labels = (f"{new_hash}@{last:%Y-%m-%d}", f"{new_hash}@{today:%Y-%m-%d}")
            if await is_healthy(judge):
                if changed or scheduled:  # the same configuration again: keep the old scores to compare
                    before = anchor_scores(engine, anchor_set=name, judge_config_hash=new_hash)
                done = await ensure_anchor_verdicts(
                    engine, anchor_set=name, judge=judge, rubric=rubric, force=changed or scheduled
                )
                out.update(judged_now=done.judged_now, judge_config_hash=done.judge_config_hash)
            else:
                out["status"] = f"{describe(judge)} is down: anchors not re-judged, tried again next run"
                logger.warning("calibration: %s", out["status"])
        finally:
            await judge.aclose()
    comparison = None
    if new_hash is not None and before is not None and not before.empty:
        after = anchor_scores(engine, anchor_set=name, judge_config_hash=new_hash)
        comparison = compare_before_after(
            name, before, after, before_label=labels[0], after_label=labels[1], categories=rubric.scale.levels
        )
    elif new_hash is not None:
        comparison = compare_on_anchors(
            engine, anchor_set=name, new_config_hash=new_hash, categories=rubric.scale.levels
        )
    out["compared_with"] = comparison.old_config_hash if comparison else None
    if comparison is not None:
        scope = f"{name} {comparison.old_config_hash}->{comparison.new_config_hash}"
        _snapshot(engine, "anchors", scope, summary, comparison)
    stability = judge_stability(comparison)
    out["judge_stable"], out["judge_stability"] = stability.stable, stability.why
    return out


@task(name="served-model-change", cache_policy=NO_CACHE)
def served_model_change(
    engine: Engine, summary: CalibrationSummary, anchor: dict[str, Any], family_alpha: float
) -> dict[str, Any]:
    """Alert when a tier's scores move within a release while the judge is stable on the anchors."""
    if summary.series is None:
        return {"tested": 0, "new_alerts": 0}
    stability = JudgeStability(bool(anchor.get("judge_stable", True)), str(anchor.get("judge_stability", "")))
    run = model_change.detect(summary.frame, summary.series, stability, family_alpha=family_alpha)
    model_change.store_alerts(engine, run, family_alpha=family_alpha)
    return {
        "tested": len(run.tested),
        "moving": len(run.moving),
        "judge_stable": stability.stable,
        "new_alerts": len(run.new_alert_ids),
        "resolved": run.resolved,
    }


def endpoint_fingerprint(engine: Engine, judge: object) -> dict[str, Any]:
    """Record what an OpenAI-compatible judge endpoint serves (/v1/models, /version, /metrics); flag a change."""
    base = getattr(judge, "base_url", None)
    if not base:
        return {}
    try:
        check = record_fingerprint(engine, fetch_fingerprint(base, model=getattr(judge, "model", None)))
    except httpx.HTTPError as exc:
        logger.warning("calibration: could not read the judge endpoint's fingerprint: %s", exc)
        return {"fingerprint": None, "fingerprint_error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    if check.changed:
        logger.warning(
            "calibration: the judge endpoint %s serves otherwise than before: %s", base, check.describe_changes()
        )
    return {
        "fingerprint": check.current.digest,
        "previous_fingerprint": check.previous_digest,
        "fingerprint_changed": check.changed,
        "fingerprint_changes": check.describe_changes(),
    }


@flow(name=FLOW_NAME, log_prints=True)
async def calibration(
    rubric: str = "answer_quality",
    judge: str | None = None,
    anchor_set: str | None = None,
    anchor_size: int = 100,
    rejudge_anchors: bool = True,
    family_alpha: float = 0.05,
    lookback_days: int = 90,
    database_url: str | None = None,
) -> dict[str, Any]:
    """Compute, store and alert (see the module docstring); returns what was done, as a dict. `judge`: the judge that
    re-judges the anchors, "reference" or URL(s) (default: the configured judge URL, no silent fallback). Then the alert
    rules are checked (`judgewatch.alerts`, when a rules file is set)."""
    settings = get_settings()
    engine = make_engine(database_url or settings.effective_database_url)
    try:
        migrate(engine)
        rubric_obj = load_rubric(rubric, settings.rubrics_dir)
        summary = tier_snapshot(engine, rubric_obj, lookback_days)
        views = page_views(engine, rubric_obj)
        trust_records = record_trust(engine, summary, rubric_obj)
        drift = drift_alerts(engine, summary, family_alpha)
        anchor = await anchors(
            engine,
            summary,
            rubric_obj,
            settings,
            name=anchor_set or f"{rubric}-anchors",
            size=anchor_size,
            judge_spec=judge,
            rejudge=rejudge_anchors,
        )
        model = served_model_change(engine, summary, anchor, family_alpha)
        alerts = check_alerts_quietly(engine, settings)
    finally:
        engine.dispose()
    series = summary.series
    counts = summary.label_counts
    result = {
        "rubric": rubric, "judge_config_hash": series.judge.config_hash if series else None,
        "rubric_version": series.rubric.version if series else None, "tiers": [c.tier for c in counts],
        "verdicts": sum(c.verdicts for c in counts), "labeled": sum(c.labeled_items for c in counts),
        "trust_records": trust_records, "page_views": views, "drift": drift, "anchors": anchor,
        "served_model_change": model, "alerts": alerts,
    }  # fmt: skip
    logger.info("calibration: %s", result)
    return result


if __name__ == "__main__":  # `python -m flows.calibration serve`: serves the deployment as prefect.yaml declares it
    from flows.calibration import calibration as declared  # the importable module's flow, not __main__'s

    serve_main("flows.calibration", lambda: serve_declared(declared, FLOW_NAME, REPO_ROOT / "prefect.yaml"))
