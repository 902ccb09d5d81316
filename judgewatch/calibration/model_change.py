"""Served-model change: a tier's scores move within a release while the judge, measured on the anchors, does not
(docs/operations.md). Judge drift is measured where the answers cannot change (`drift`); here the question is
whether the answers changed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration.anchors import AnchorComparison
from judgewatch.calibration.drift import WINDOWS, DriftConfig, release_of, resolve_stale, series_fields, window_start
from judgewatch.calibration.estimands import split_populations
from judgewatch.calibration.judge_series import Series
from judgewatch.stats import time_windows
from judgewatch.stats.estimate import SCALE_BOUNDS
from judgewatch.stats.sequential import shift_p_values, window_stretches
from judgewatch.storage.calibration import SERVED_MODEL_CHANGE, DriftAlert, upsert_alert
from judgewatch.storage.db import session_scope

logger = logging.getLogger(__name__)

TEST_TEXT = (
    "anytime-valid: mean judge score of each stretch from a window's start to now vs the windows before it, same "
    "release and tier, two-sided, asymptotic confidence sequences; Bonferroni over the {n} series tested, "
    "family-wise alpha {alpha:g} per run; "
    "raised only while the judge is stable on the anchor set"
)


@dataclass(frozen=True, slots=True)
class JudgeStability:
    """Is the judge the same as before, measured on the anchors? `why` says what the answer rests on."""

    stable: bool
    why: str


def judge_stability(comparison: AnchorComparison | None) -> JudgeStability:
    """Stable unless the latest anchor comparison shows a mean shift whose interval excludes 0."""
    if comparison is None:
        return JudgeStability(True, "no other judge configuration or endpoint has judged the anchors")
    moved = [s for s in comparison.criteria if s.mean_shift.low > 0 or s.mean_shift.high < 0]
    if moved:
        shifts = ", ".join(f"{s.criterion} {s.mean_shift.estimate:+.2f}" for s in moved)
        return JudgeStability(False, f"the judge moved on {comparison.n_items} anchors ({shifts})")
    return JudgeStability(True, f"the judge is stable on {comparison.n_items} anchors")


@dataclass(frozen=True, slots=True)
class ScoreShift:
    """One series' latest window against its earlier windows of the same release."""

    release: str | None
    tier: str
    criterion: str
    window: str
    current_start: datetime
    reference_start: datetime
    n_ref: int
    n_cur: int
    mean_ref: float
    mean_cur: float
    p_value: float


@dataclass
class ModelChangeRun:
    series: Series
    stability: JudgeStability
    tested: list[ScoreShift]
    alpha_per_test: float
    alerts: list[DriftAlert] = field(default_factory=list)
    new_alert_ids: list[str] = field(default_factory=list)
    resolved: int = 0

    @property
    def moving(self) -> list[ScoreShift]:
        return [t for t in self.tested if t.p_value < self.alpha_per_test]


def _shifts(traffic: pd.DataFrame, window: str, cfg: DriftConfig) -> list[ScoreShift]:
    """Each series' anytime-valid check at this look (`stats.sequential.shift_p_values`, two-sided on the mean
    score): every stretch from a window's start to now against the windows before it, as the drift check does."""
    width = WINDOWS[window]
    out = []
    keys = [release_of(traffic), "tier", "criterion"]
    for (release, tier, criterion), group in traffic.groupby(keys, sort=True):
        group = group[group["judge"].notna()].sort_values("at", kind="stable")
        starts = time_windows(group["at"].dt.to_pydatetime(), width)
        if len(np.unique(starts)) < 2:
            continue
        stretches = window_stretches((starts - starts[0]) // np.timedelta64(width), cfg.reference_windows[window])
        x = group["judge"].to_numpy(dtype=float)
        sized = np.flatnonzero(
            (stretches.start - stretches.ref_start >= cfg.min_reference) & (x.size - stretches.start >= cfg.min_current)
        )
        if sized.size == 0:
            continue
        p, best = shift_p_values(
            x, stretches, [x.size], bounds=SCALE_BOUNDS, min_reference=cfg.min_reference, min_current=cfg.min_current
        )
        k = int(best[0]) if best[0] >= 0 else int(sized[-1])  # the stretch that alarms, else the latest tested
        s, r = int(stretches.start[k]), int(stretches.ref_start[k])
        out.append(ScoreShift(str(release) or None, str(tier), str(criterion), window, window_start(starts[s]),
                              window_start(starts[r]), s - r, x.size - s, float(x[r:s].mean()), float(x[s:].mean()),
                              float(p[0])))  # fmt: skip
    return out


def detect(
    frame: pd.DataFrame,
    series: Series,
    stability: JudgeStability,
    *,
    config: DriftConfig | None = None,
    family_alpha: float = 0.05,
) -> ModelChangeRun:
    """Test every traffic series of `frame` (one judge configuration and rubric version); see the docstring."""
    cfg = config or DriftConfig()
    traffic = frame[split_populations(frame) == "traffic"] if not frame.empty else frame
    tested = [s for window in WINDOWS for s in _shifts(traffic, window, cfg)] if not traffic.empty else []
    alpha = family_alpha / max(len(tested), 1)
    return ModelChangeRun(series, stability, tested, alpha)


def _alert(shift: ScoreShift, run: ModelChangeRun, family_alpha: float) -> DriftAlert:
    within = f" of release {shift.release}" if shift.release else ""
    message = (
        f"served-model change on tier {shift.tier}{within}, {shift.criterion} ({shift.window} window from "
        f"{shift.current_start:%Y-%m-%d}): mean judge score {shift.mean_ref:.2f} -> {shift.mean_cur:.2f} "
        f"(p={shift.p_value:.2g}, n {shift.n_ref} -> {shift.n_cur}) while {run.stability.why}; judge "
        f"{run.series.judge.name} {run.series.judge.config_hash[:12]}"
    )
    return DriftAlert(
        **series_fields(run.series, shift),
        kind=SERVED_MODEL_CHANGE,
        n_ref=shift.n_ref,
        n_cur=shift.n_cur,
        alpha=run.alpha_per_test,
        test=TEST_TEXT.format(n=len(run.tested), alpha=family_alpha),
        message=message,
        score_ref=shift.mean_ref,
        score_cur=shift.mean_cur,
        p_score_shift=shift.p_value,
    )


def store_alerts(engine: Engine, run: ModelChangeRun, *, family_alpha: float = 0.05) -> ModelChangeRun:
    """Store an alert per moving series (only while the judge is stable); resolve those now within chance."""
    moving = {id(s) for s in run.moving}
    with session_scope(engine, write=True) as session:
        for shift in run.tested:
            if id(shift) not in moving:
                run.resolved += resolve_stale(session, run.series, shift, served_model=True)
            elif run.stability.stable:  # else the judge moved: the score's move says nothing of the served model
                alert, created = upsert_alert(session=session, alert=_alert(shift, run, family_alpha))
                run.alerts.append(alert)
                if created:
                    run.new_alert_ids.append(alert.id)
    if run.moving and not run.stability.stable:
        logger.warning("%d tier score(s) moved, but %s: not a served-model change", len(run.moving), run.stability.why)
    if run.new_alert_ids:
        logger.warning("%d new served-model change alert(s)", len(run.new_alert_ids))
    return run
