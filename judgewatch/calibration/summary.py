"""Every number of the Tiers report and pages, computed once from the store: `summarize(engine, ...)`. The numbers
rest on one judge series (`judge_series`); other series' verdicts, fallback judges' included, are counted apart."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration.agreement import AgreementRow, agreement_table
from judgewatch.calibration.anchors import AnchorComparison, compare_on_anchors
from judgewatch.calibration.drift import open_alerts
from judgewatch.calibration.estimands import (
    EstimandRow,
    MonitoredRow,
    release_estimates,
    traffic_coverage,
    traffic_estimates,
    traffic_monitor,
)
from judgewatch.calibration.gate_question import GateRow, gate_rows
from judgewatch.calibration.judge_series import Series, current_series, default_series
from judgewatch.calibration.score_frame import NO_TIER, ScoreReadingChoice, count_scored, load_scores
from judgewatch.calibration.tier_gap import GapRow, same_item_gaps, traffic_gaps
from judgewatch.calibration.tiers import TierDifference, TierEstimate, tier_differences, tier_estimates, trend
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.settings import get_settings
from judgewatch.stats.estimate import SCALE_BOUNDS
from judgewatch.storage.calibration import DriftAlert, list_anchor_sets
from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import declared_baseline_tier
from judgewatch.storage.review import LabelVia
from judgewatch.storage.types import utcnow
from judgewatch.trust.policy import TrustVerdict
from judgewatch.trust.records import trust_for

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LabelCount:
    """What one tier's numbers rest on."""

    tier: str
    verdicts: int  # scored verdicts of the series
    labeled_items: int  # of those, items with a human label
    synthetic_items: int  # of the labeled, labels made by a program (demo data), not people
    annotated_items: int = 0  # of the labeled, labels derived from a golden set's annotations, not a reviewer's


@dataclass
class CalibrationSummary:
    generated_at: datetime
    rubric_name: str
    since: datetime | None
    series: Series | None  # None: no scored verdict under this rubric yet
    gate: list[GateRow] = field(default_factory=list)  # the gate's answer per release, newest first (gate_question)
    estimates: list[TierEstimate] = field(default_factory=list)  # every tiered verdict pooled (plots, trends)
    traffic: list[EstimandRow] = field(default_factory=list)  # traffic quality per tier and criterion
    traffic_monitor: list[MonitoredRow] = field(default_factory=list)  # the same, anytime-valid over the days
    release: list[EstimandRow] = field(default_factory=list)  # release quality per release, tier and golden set
    gaps: list[GapRow] = field(default_factory=list)  # tier gaps: traffic (unadjusted, mix-adjusted), same items
    traffic_covers: str = ""  # what the traffic estimand covers: sources, period, strata
    series_reason: str = ""  # one line: which judge series is shown and why
    differences: list[TierDifference] = field(default_factory=list)
    agreement: list[AgreementRow] = field(default_factory=list)
    label_counts: list[LabelCount] = field(default_factory=list)
    daily: pd.DataFrame = field(default_factory=pd.DataFrame)  # tiers.trend(), daily windows
    weekly: pd.DataFrame = field(default_factory=pd.DataFrame)  # tiers.trend(), weekly windows
    alerts: list[DriftAlert] = field(default_factory=list)  # open alerts, all judges of this rubric
    anchors: list[AnchorComparison] = field(default_factory=list)
    trust: TrustVerdict | None = None
    excluded_verdicts: int = 0  # scored verdicts of other judge configurations / rubric versions
    untiered_verdicts: int = 0  # verdicts on interactions without a tier (e.g. judge validation runs)
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)  # the rows the numbers come from
    notes: list[str] = field(default_factory=list)
    baseline_tier: str | None = None  # the tier every gap and difference is taken against (`baseline_choice`)
    baseline_reason: str = ""  # one line: where that choice came from
    min_labels: int = 5  # the fewest human labels an estimate needs for an interval (Settings.min_labels)

    @property
    def synthetic(self) -> bool:
        return any(c.synthetic_items for c in self.label_counts)


def series_label(series: Series) -> str:
    """How a judge series is named on pages and in reports: judge name and a short configuration hash."""
    return f"{series.judge.name} ({series.judge.config_hash[:12]})"


def label_counts(frame: pd.DataFrame) -> list[LabelCount]:
    if frame.empty:
        return []
    items = frame.drop_duplicates("verdict_id")
    lab = frame[frame["human"].notna()].drop_duplicates("verdict_id")
    out = []
    for tier, group in items.groupby("tier", sort=True):
        mine = lab[lab["tier"] == tier]
        synthetic = int((mine["label_via"] == LabelVia.synthetic.value).sum())
        annotated = int((mine["label_via"] == LabelVia.dataset_annotation.value).sum())
        out.append(LabelCount(str(tier), len(group), len(mine), synthetic, annotated))
    return out


def baseline_choice(engine: Engine, tiers: Sequence[str], asked: str | None = None) -> tuple[str | None, str]:
    """The baseline tier of the report and the pages, and one line saying why: the one asked for, else the one
    the newest release declared (as the gate compared them), else the `baseline_tier` setting, else none (no
    tier is compared with another, as the gate does when nothing names a baseline)."""
    if asked is not None or not tiers:
        return asked, f"Baseline tier {asked}: the one asked for." if asked else ""
    with session_scope(engine) as session:
        declared = declared_baseline_tier(session=session)
    if declared is not None and declared.tier in tiers:
        return declared.tier, (
            f"Baseline tier {declared.tier}: declared by release {declared.release} (its tiers file's "
            "`baseline: true` or `--baseline-tier`); every gap reads candidate − baseline."
        )
    setting = get_settings().baseline_tier
    if setting in tiers:
        return setting, f"Baseline tier {setting}: the `baseline_tier` setting; every gap reads candidate − baseline."
    return None, (
        "No baseline tier: neither a release nor the `baseline_tier` setting names one among these tiers, so no "
        "tier is compared with another; declare it with `baseline: true` in the tiers file, `--baseline-tier` or "
        "JUDGEWATCH_BASELINE_TIER."
    )


def _notes(summary: CalibrationSummary) -> list[str]:
    notes = [summary.baseline_reason] if summary.baseline_tier is None and len(summary.label_counts) > 1 else []
    if summary.series is not None and summary.frame.empty:
        since = f" since {summary.since:%Y-%m-%d %H:%M} UTC" if summary.since else ""
        notes.append(f"No scored verdicts of this judge configuration{since}: choose a longer period.")
    if summary.synthetic:
        notes.append(
            "SYNTHETIC LABELS: some labels were made by a program (demo data), not by people; "
            "the corrected numbers show the method, not a measurement of this judge."
        )
    if annotated := sum(c.annotated_items for c in summary.label_counts):
        notes.append(
            f"DATASET ANNOTATION LABELS: {annotated} label(s) were derived from the golden sets' own human "
            "annotations (a known-good answer is faithfulness 5, a known-bad one 1; label_via=dataset_annotation), "
            "not given by a reviewer; they correct release estimates only and are never trust evidence."
        )
    if summary.excluded_verdicts:
        notes.append(
            f"{summary.excluded_verdicts} scored verdict(s) of other judge configurations or rubric versions "
            "(anchor re-judging and fallback judges included) are separate series, not in these numbers."
        )
    if summary.untiered_verdicts:
        notes.append(
            f"{summary.untiered_verdicts} verdict(s) of this judge are on items without a tier (judge validation "
            "runs, untiered traffic) and are not in these numbers."
        )
    if summary.label_counts and not any(c.labeled_items for c in summary.label_counts):
        notes.append(
            "No human labels yet: the corrected estimates and agreement need labels (label routed items in the "
            "review app's Queue, or `judgewatch review replay --labels FILE`)."
        )
    if summary.trust is not None and summary.trust.trustworthy is not True:
        notes.append(f"Judge trust: {summary.trust.summary}")
    return notes


def rubric_bounds(rubric_name: str) -> tuple[float, float]:
    """The rubric's scale, which the intervals for bounded scores rest on (docs/statistics.md); the default scale,
    widened to the data by the estimators, when the rubric file cannot be read."""
    try:
        scale = load_rubric(rubric_name, get_settings().rubrics_dir).scale
    except RubricError as exc:
        logger.warning("intervals on the default scale %s-%s: %s", *SCALE_BOUNDS, exc)
        return SCALE_BOUNDS
    return float(scale.min), float(scale.max)


def summarize(
    engine: Engine,
    *,
    rubric_name: str = "answer_quality",
    rubric_version: str | None = None,
    judge_config_hash: str | None = None,
    since: datetime | None = None,
    baseline: str | None = None,
    categories: Sequence[float] | None = None,
    n_boot: int = 1000,
    with_trust: bool = True,
    reading: ScoreReadingChoice = "integer",
    min_labels: int | None = None,
) -> CalibrationSummary:
    """Compute the Tiers/Calibration numbers for one judge series (default: `judge_series.default_series`). `reading`:
    as in `score_frame.load_scores`; `min_labels`: the fewest human labels an estimate needs for an interval."""
    need = get_settings().min_labels if min_labels is None else min_labels
    if judge_config_hash is None:
        choice = default_series(engine, rubric_name=rubric_name, rubric_version=rubric_version)
        series, why = (choice.series, choice.reason) if choice else (None, "")
    else:
        series = current_series(
            engine, rubric_name=rubric_name, rubric_version=rubric_version, judge_config_hash=judge_config_hash
        )
        why = "the configuration asked for"
        if series is None:
            raise LookupError(f"judge configuration {judge_config_hash!r} has no scored verdicts under {rubric_name!r}")
    summary = CalibrationSummary(generated_at=utcnow(), rubric_name=rubric_name, since=since, series=series)
    if series is not None:
        summary.series_reason = f"Showing judge series {series_label(series)}: {why}."
    summary.alerts = open_alerts(engine, rubric_name=rubric_name)
    if series is None:
        summary.notes = [f"No scored verdicts under rubric {rubric_name!r} yet."]
        return summary
    summary.gate = gate_rows(engine, judge_config_hash=series.judge.config_hash, since=since)
    frame = load_scores(
        engine,
        rubric_name=rubric_name,
        rubric_version=series.rubric.version,
        judge_config_hash=series.judge.config_hash,
        since=since,
        reading=reading,
    )
    tiered = frame["tier"] != NO_TIER
    mine = int(frame["verdict_id"].nunique())
    summary.untiered_verdicts = int(frame.loc[~tiered, "verdict_id"].nunique())
    summary.excluded_verdicts = count_scored(engine, rubric_name=rubric_name, since=since) - mine
    frame = frame[tiered]
    summary.frame = frame
    summary.min_labels = need
    scale = rubric_bounds(rubric_name)
    tiers = sorted(frame["tier"].unique().tolist())
    baseline, summary.baseline_reason = baseline_choice(engine, tiers, baseline)
    summary.baseline_tier = baseline
    summary.estimates = tier_estimates(frame, min_labels=need, bounds=scale)
    summary.differences = tier_differences(frame, summary.estimates, baseline=baseline, min_labels=need, bounds=scale)
    summary.traffic = traffic_estimates(frame, min_labels=need, bounds=scale)
    summary.traffic_monitor = traffic_monitor(frame, min_labels=need, bounds=scale)
    summary.release = release_estimates(frame, min_labels=need, bounds=scale)
    summary.gaps = traffic_gaps(frame, baseline=baseline, min_labels=need, bounds=scale)
    summary.gaps += same_item_gaps(frame, baseline=baseline, min_labels=need, bounds=scale)
    summary.traffic_covers = traffic_coverage(frame)
    summary.agreement = agreement_table(frame, categories=categories, n_boot=n_boot, min_labels=need)
    summary.label_counts = label_counts(frame)
    summary.daily = trend(frame, min_labels=need, bounds=scale)
    summary.weekly = trend(frame, width=timedelta(days=7), min_labels=need, bounds=scale)
    with session_scope(engine) as session:  # every anchor set: the configuration that judged it last vs the one before
        names = [a.name for a in list_anchor_sets(session=session, rubric_name=rubric_name)]
    found = (compare_on_anchors(engine, anchor_set=name, categories=categories, n_boot=n_boot) for name in names)
    summary.anchors = [comparison for comparison in found if comparison is not None]
    if with_trust:
        summary.trust = trust_for(engine, series.judge, series.rubric)
    summary.notes = _notes(summary)
    return summary
