"""Judge drift per release and tier (a new release starts a new series instead of reading as judge drift) and
criterion: agreement and bias over daily and weekly windows, the anytime-valid check `stats.drift_monitor`
(docs/statistics.md, "The drift check"), and alerts, stored once per series and window and resolved by a later
window that tests within chance."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

import numpy as np
import pandas as pd
from sqlalchemy import Engine
from sqlmodel import Session

from judgewatch.calibration.agreement import agreement_sample
from judgewatch.calibration.judge_series import Series
from judgewatch.calibration.report_render import jsonable
from judgewatch.stats import DriftTest, WindowStats, agreement_series, time_windows
from judgewatch.stats.drift import drift_monitor
from judgewatch.storage.calibration import (
    SERVED_MODEL_CHANGE,
    AlertState,
    DriftAlert,
    close_alerts,
    get_alerts,
    upsert_alert,
)
from judgewatch.storage.db import session_scope

logger = logging.getLogger(__name__)

WINDOWS = {"daily": timedelta(days=1), "weekly": timedelta(days=7)}
TEST_TEXT = (
    "anytime-valid: each stretch from a window's start to now vs the windows before it, asymptotic confidence "
    "sequences (exact agreement fell; bias judge - human shifted), Bonferroni over both and over the {n} series "
    "tested, family-wise alpha {alpha:g} over every look"
)


@dataclass(frozen=True, slots=True)
class DriftConfig:
    family_alpha: float = 0.05
    min_current: int = 10  # labeled pairs a stretch needs before it is tested
    min_reference: int = 20  # labeled pairs its reference windows need together
    reference_windows: dict[str, int] = field(default_factory=lambda: {"daily": 28, "weekly": 8})


@dataclass(frozen=True, slots=True)
class DriftResult:
    """One series: its per-window points and, when it had enough labels, the test of its latest window."""

    tier: str
    criterion: str
    window: str
    points: list[WindowStats]
    current_start: datetime | None = None
    reference_start: datetime | None = None
    test: DriftTest | None = None
    skipped: str | None = None  # why it was not tested
    release: str | None = None  # the release the series is within (None: traffic without a release)


@dataclass
class DriftRun:
    series: Series
    results: list[DriftResult]
    n_tests: int
    alpha_per_test: float
    alerts: list[DriftAlert] = field(default_factory=list)  # alerting series, stored (new or updated)
    new_alert_ids: list[str] = field(default_factory=list)
    resolved: int = 0


def window_start(value: object) -> datetime:
    return pd.Timestamp(value).tz_localize("UTC").to_pydatetime()


def release_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's release, "" for none (a groupby key: a missing release is a series of its own)."""
    return frame["release"].fillna("").astype(str)


def _prepare(frame: pd.DataFrame, window: str, cfg: DriftConfig) -> list[tuple[DriftResult, pd.DataFrame]]:
    """Windowed points of every series, with its pairs in time order (those with two windows get tested)."""
    width = WINDOWS[window]
    sample = agreement_sample(frame).sort_values("at", kind="stable")
    out = []
    for (rel, tier, criterion), group in sample.groupby([release_of(sample), "tier", "criterion"], sort=True):
        starts = time_windows(group["at"].dt.to_pydatetime(), width)
        points = agreement_series(starts, group["judge"], group["human"])
        skipped = None
        if len(points) < 2:
            skipped = "fewer than two windows"
        elif len(group) < cfg.min_reference + cfg.min_current:
            skipped = f"too few labels ({len(group)} < {cfg.min_reference} reference + {cfg.min_current} current)"
        result = DriftResult(str(tier), str(criterion), window, points, skipped=skipped, release=str(rel) or None)
        out.append((result, group.assign(window_start=starts)))
    return out


def _test(result: DriftResult, group: pd.DataFrame, cfg: DriftConfig, alpha: float) -> DriftResult:
    """The anytime-valid check of one series at this look (`stats.drift_monitor`)."""
    starts = group["window_start"].to_numpy()
    number = (starts - starts[0]) // np.timedelta64(WINDOWS[result.window])
    test, _, _ = drift_monitor(
        group["judge"],
        group["human"],
        number,
        alpha=alpha,
        reference_windows=cfg.reference_windows[result.window],
        min_reference=cfg.min_reference,
        min_current=cfg.min_current,
    )
    at = min(test.stretch_start, len(group) - 1) if test.stretch_start >= 0 else len(group) - 1
    first_ref = test.stretch_start - test.agreement_ref.n if test.stretch_start >= 0 else 0
    return replace(
        result, current_start=window_start(starts[at]), reference_start=window_start(starts[first_ref]), test=test
    )


def detect(frame: pd.DataFrame, series: Series, *, config: DriftConfig | None = None) -> DriftRun:
    """Window, split and test every series of `frame` (one judge configuration and rubric version)."""
    cfg = config or DriftConfig()
    prepared = [r for window in WINDOWS for r in _prepare(frame, window, cfg)]
    n_tests = sum(r.skipped is None for r, _ in prepared)
    alpha = cfg.family_alpha / max(n_tests, 1)
    results = [_test(r, group, cfg, alpha) if r.skipped is None else r for r, group in prepared]
    return DriftRun(series, results, n_tests, alpha)


def _alert_row(result: DriftResult, run: DriftRun, family_alpha: float) -> DriftAlert:
    t = result.test
    assert t is not None and result.current_start is not None and result.reference_start is not None
    threshold = t.alpha / 2
    kinds = [k for k, p in (("agreement_drop", t.p_agreement_drop), ("bias_shift", t.p_bias_shift)) if p < threshold]
    within = f" of release {result.release}" if result.release else ""
    message = (
        f"judge drift on tier {result.tier}{within}, {result.criterion} ({result.window} window from "
        f"{result.current_start:%Y-%m-%d}): agreement {t.agreement_ref.estimate:.2f} -> {t.agreement_cur.estimate:.2f} "
        f"(p={t.p_agreement_drop:.2g}), bias {t.bias_ref.estimate:+.2f} -> {t.bias_cur.estimate:+.2f} "
        f"(p={t.p_bias_shift:.2g}); judge {run.series.judge.name} {run.series.judge.config_hash[:12]}, "
        f"rubric {run.series.rubric.name} {run.series.rubric.version}"
    )
    clean = jsonable  # NaN p-values and agreements: JSON-safe None
    return DriftAlert(
        **series_fields(run.series, result),
        kind="+".join(kinds),
        n_ref=t.agreement_ref.n,
        n_cur=t.agreement_cur.n,
        agreement_ref=clean(t.agreement_ref.estimate),
        agreement_cur=clean(t.agreement_cur.estimate),
        bias_ref=clean(t.bias_ref.estimate),
        bias_cur=clean(t.bias_cur.estimate),
        p_agreement_drop=clean(t.p_agreement_drop),
        p_bias_shift=clean(t.p_bias_shift),
        alpha=threshold,
        test=TEST_TEXT.format(n=run.n_tests, alpha=family_alpha),
        message=message,
    )


class TestedWindow(Protocol):
    """A series' latest window that was tested: a drift result or a served-model score shift."""

    @property
    def tier(self) -> str: ...
    @property
    def criterion(self) -> str: ...
    @property
    def window(self) -> str: ...
    @property
    def release(self) -> str | None: ...
    @property
    def current_start(self) -> datetime | None: ...
    @property
    def reference_start(self) -> datetime | None: ...


def series_fields(series: Series, tested: TestedWindow) -> dict[str, Any]:
    """What every alert of one series and window carries: the judge and rubric, tier, criterion, release, windows."""
    start = tested.current_start
    assert start is not None
    return {
        "id": "",
        "judge_config_hash": series.judge.config_hash,
        "judge_name": series.judge.name,
        "rubric_name": series.rubric.name,
        "rubric_version": series.rubric.version,
        "tier": tested.tier,
        "criterion": tested.criterion,
        "release": tested.release,
        "window": tested.window,
        "window_start": start,
        "window_end": start + WINDOWS[tested.window],
        "reference_start": tested.reference_start,
    }


def resolve_stale(session: Session, series: Series, tested: TestedWindow, *, served_model: bool) -> int:
    """Resolve the series' open alerts of windows before `tested`'s, which tested within chance. `served_model`: the
    served-model-change alerts of the series (else its judge drift alerts)."""
    start = tested.current_start
    if start is None:
        return 0
    key = (series.judge.config_hash, series.rubric.version, tested.criterion, tested.window, tested.release)
    stale = [
        a.id
        for a in get_alerts(session=session, state=AlertState.open.value, tier=tested.tier)
        if (a.judge_config_hash, a.rubric_version, a.criterion, a.window, a.release) == key
        and (a.kind == SERVED_MODEL_CHANGE) == served_model
        and a.window_start < start
    ]
    note = f"the {tested.window} window from {start:%Y-%m-%d} tested within chance"
    return close_alerts(session=session, ids=stale, state=AlertState.resolved, by="calibration", note=note)


def store_alerts(engine: Engine, run: DriftRun, *, family_alpha: float = 0.05) -> DriftRun:
    """Store each alerting series' alert (once per window) and resolve older alerts of series now within chance."""
    with session_scope(engine, write=True) as session:
        for result in run.results:
            if result.test is not None and result.test.alert:
                alert, created = upsert_alert(session=session, alert=_alert_row(result, run, family_alpha))
                run.alerts.append(alert)
                if created:
                    run.new_alert_ids.append(alert.id)
            elif result.test is not None:
                run.resolved += resolve_stale(session, run.series, result, served_model=False)
    if run.new_alert_ids:
        logger.warning("%d new drift alert(s) for judge %s", len(run.new_alert_ids), run.series.judge.config_hash)
    return run


def open_alerts(engine: Engine, *, rubric_name: str | None = None) -> list[DriftAlert]:
    with session_scope(engine) as session:
        return get_alerts(session=session, state=AlertState.open.value, rubric_name=rubric_name)
