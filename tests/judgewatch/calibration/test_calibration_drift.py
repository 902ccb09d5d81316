"""Drift alerts on seeded data: an injected bias shift alerts once, a stable series never does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from judgewatch.calibration.drift import DriftRun, detect, open_alerts, store_alerts
from judgewatch.calibration.judge_series import current_series
from judgewatch.calibration.score_frame import load_scores
from judgewatch.contract.rubric import Rubric
from judgewatch.storage.calibration import AlertState, get_alerts
from judgewatch.storage.db import session_scope
from judgewatch.testing.synthetic_labels import drift_from_day_four, write_synthetic

from .conftest import JUDGE_A

START = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday: the days fall in one epoch-aligned weekly window
SPEC = drift_from_day_four(JUDGE_A, START)


def run_drift(engine: Engine) -> DriftRun:
    series = current_series(engine, rubric_name="answer_quality")
    assert series is not None
    return store_alerts(engine, detect(load_scores(engine, rubric_name="answer_quality"), series))


def test_injected_bias_shift_raises_one_alert_and_the_stable_series_none(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    run = run_drift(engine)

    tested = {(r.tier, r.criterion, r.window) for r in run.results if r.test is not None}
    assert {(t, c) for t, c, w in tested if w == "daily"} == {
        (t, c) for t in ("stable", "drifting") for c in ("relevance", "faithfulness", "completeness")
    }
    assert run.n_tests == len(tested) and run.alpha_per_test == pytest.approx(0.05 / len(tested))
    alerting = {(r.tier, r.criterion, r.window) for r in run.results if r.test is not None and r.test.alert}
    assert alerting == {("drifting", "faithfulness", "daily")}
    assert len(run.new_alert_ids) == 1
    (alert,) = open_alerts(engine, rubric_name="answer_quality")
    assert (alert.tier, alert.criterion, alert.window, alert.state) == ("drifting", "faithfulness", "daily", "open")
    assert alert.window_start == datetime(2026, 1, 4, tzinfo=UTC) and alert.reference_start == START
    # the harsh judge agrees with no label on day 4: the anytime-valid check sees the agreement fall first
    assert "agreement_drop" in alert.kind and alert.bias_cur is not None and alert.bias_ref is not None
    assert alert.bias_cur < alert.bias_ref - 1.0 and alert.agreement_cur is not None and alert.agreement_cur < 0.2
    assert alert.n_cur >= 10 and alert.judge_config_hash == JUDGE_A.config_hash
    assert "anytime-valid" in alert.test and "Bonferroni" in alert.test

    again = run_drift(engine)  # the daily flow runs again the same day: the same alert, updated, not a new one
    assert again.new_alert_ids == [] and len(again.alerts) == 1
    with session_scope(engine) as session:
        (stored,) = get_alerts(session=session)
    assert stored.id == alert.id and stored.state == AlertState.open


def test_a_later_window_within_chance_resolves_the_open_alert(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    assert len(run_drift(engine).new_alert_ids) == 1
    # A fifth day with the judge back to normal, written as more traffic of the same judge.
    calm = replace(SPEC, days=1, per_day=40, start=datetime(2026, 1, 5, tzinfo=UTC), shift=None, source="day5", seed=6)
    write_synthetic(engine, rubric, calm)
    run = run_drift(engine)
    assert run.new_alert_ids == [] and run.resolved == 1
    assert open_alerts(engine) == []
    with session_scope(engine) as session:
        (alert,) = get_alerts(session=session)
    assert alert.state == AlertState.resolved and "2026-01-05" in (alert.resolution or "")
