"""Drift versus model change: a new release starts a new drift series, anchors are re-judged at once when the
judge endpoint's fingerprint changes, and a tier's moving scores raise a served-model-change alert only while
the judge is stable on the anchors."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sqlalchemy import Engine, update

from judgewatch.calibration import model_change
from judgewatch.calibration.anchors import (
    anchor_scores,
    compare_before_after,
    ensure_anchor_verdicts,
    freeze_anchor_set,
)
from judgewatch.calibration.drift import DriftConfig
from judgewatch.calibration.drift import detect as detect_drift
from judgewatch.calibration.judge_series import current_series
from judgewatch.calibration.model_change import JudgeStability, judge_stability
from judgewatch.calibration.score_frame import load_scores
from judgewatch.calibration.summary import summarize
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict, VerdictStatus
from judgewatch.settings import get_settings
from judgewatch.storage.calibration import SERVED_MODEL_CHANGE, get_alerts
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.testing.synthetic_labels import BiasShift, TierTruth, write_synthetic

from .conftest import JUDGE_A
from .test_calibration_drift import SPEC as DRIFT_SPEC

DAY4 = datetime(2026, 1, 4, tzinfo=UTC)
# The drift tests' data with one tier whose faithfulness scores drop by two points on day 4, at 100 verdicts a day
# (the check reads every scored verdict, not only the labelled ones; its anytime-valid sequences need more than the
# drift tests' 25 a day to see a shift on the first day it appears).
SPEC = replace(
    DRIFT_SPEC,
    per_day=100,
    tiers={"stable": TierTruth(3.2, 0.3), "moving": TierTruth(3.2, 0.3)},
    shift=BiasShift("moving", "faithfulness", from_day=3, delta=-2.0),
)


def day4_is_release(engine: Engine, release: str) -> None:
    """Day 4's traffic came from a new release: the shift arrived with it."""
    c = table(Interaction).c
    with session_scope(engine, write=True) as session:
        session.execute(update(table(Interaction)).where(c.created_at >= DAY4).values(release=release))


def served_model_run(engine: Engine, stability: JudgeStability) -> model_change.ModelChangeRun:
    series = current_series(engine, rubric_name="answer_quality")
    assert series is not None
    frame = load_scores(engine, rubric_name="answer_quality")
    return model_change.store_alerts(engine, model_change.detect(frame, series, stability))


def test_a_new_release_starts_a_new_drift_series_instead_of_reading_as_drift(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    series = current_series(engine, rubric_name="answer_quality")
    assert series is not None
    within = detect_drift(load_scores(engine, rubric_name="answer_quality"), series)
    assert {(r.release, r.tier) for r in within.results if r.test is not None and r.test.alert} == {("r1", "moving")}

    day4_is_release(engine, "r2")
    split = detect_drift(load_scores(engine, rubric_name="answer_quality"), series)
    assert not [r for r in split.results if r.test is not None and r.test.alert]
    daily = {
        (r.release, r.skipped)
        for r in split.results
        if (r.tier, r.criterion, r.window) == ("moving", "faithfulness", "daily")
    }
    assert daily == {("r1", None), ("r2", "fewer than two windows")}  # r2 is a new series of one window


def test_moving_scores_with_a_stable_judge_alert_as_a_served_model_change(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    run = served_model_run(engine, judge_stability(None))
    assert {(s.tier, s.criterion, s.window) for s in run.moving} == {("moving", "faithfulness", "daily")}
    with session_scope(engine) as session:
        (alert,) = get_alerts(session=session)
    assert alert.kind == SERVED_MODEL_CHANGE and (alert.tier, alert.release) == ("moving", "r1")
    assert alert.score_ref is not None and alert.score_cur is not None and alert.score_cur < alert.score_ref - 1.0
    assert alert.p_score_shift is not None and alert.p_score_shift < run.alpha_per_test
    assert "served-model change" in alert.message and "anytime-valid" in alert.test
    again = served_model_run(engine, judge_stability(None))  # the same day again: the same alert, not a new one
    assert again.new_alert_ids == [] and len(again.alerts) == 1


def test_moving_scores_with_a_moving_judge_are_not_a_served_model_change(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    run = served_model_run(engine, JudgeStability(False, "the judge moved on 10 anchors"))
    assert run.moving and run.alerts == []
    with session_scope(engine) as session:
        assert get_alerts(session=session) == []


def test_a_score_change_that_came_with_a_new_release_is_no_served_model_change(engine: Engine, rubric: Rubric) -> None:
    write_synthetic(engine, rubric, SPEC)
    day4_is_release(engine, "r2")
    run = served_model_run(engine, judge_stability(None))
    assert run.moving == [] and run.alerts == []


class Swappable:
    """A judge whose configuration hash never changes while the weights behind it do (`score`)."""

    kind = "fake"

    def __init__(self, identity: JudgeIdentity, score: int) -> None:
        self.own, self.score = identity, score

    def identity(self, rubric: Rubric) -> JudgeIdentity:  # noqa: ARG002
        return self.own

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        scores: dict[str, int | None] = {c.name: self.score for c in rubric.criteria}
        return Verdict(
            item_id=item.id,
            status=VerdictStatus.scored,
            scores=scores,
            overall=float(self.score),
            judge=self.own,
            rubric=rubric.identity,
        )

    async def aclose(self) -> None:
        return None


async def test_a_changed_fingerprint_rejudges_every_anchor_at_once_and_compares_with_before(
    engine: Engine, rubric: Rubric
) -> None:
    write_synthetic(engine, rubric, SPEC)
    freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=10)
    judge = Swappable(JUDGE_A, score=5)
    same = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=judge, rubric=rubric)
    assert same.judged_now == 0  # this configuration judged every anchor already

    before = anchor_scores(engine, anchor_set="anchors", judge_config_hash=JUDGE_A.config_hash)
    judge.score = 1  # other weights behind the same model name: the configuration hash cannot see it
    forced = await ensure_anchor_verdicts(engine, anchor_set="anchors", judge=judge, rubric=rubric, force=True)
    assert forced.judged_now == 10 and forced.judge_config_hash == JUDGE_A.config_hash
    after = anchor_scores(engine, anchor_set="anchors", judge_config_hash=JUDGE_A.config_hash)
    comparison = compare_before_after("anchors", before, after, before_label="a@old", after_label="a@new", n_boot=50)
    assert comparison.n_items == 10 and {s.criterion for s in comparison.criteria} >= {"faithfulness"}
    assert all(s.mean_new == 1.0 and s.mean_shift.high < 0 for s in comparison.criteria)
    stability = judge_stability(comparison)
    assert not stability.stable and "moved on 10 anchors" in stability.why


async def test_the_calibration_anchors_step_rejudges_when_the_endpoint_fingerprint_changed(
    engine: Engine, rubric: Rubric, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.calibration as calibration_flow

    write_synthetic(engine, rubric, SPEC)
    freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=10)
    judge = Swappable(JUDGE_A, score=1)
    fingerprint: dict[str, Any] = {"fingerprint": "new", "previous_fingerprint": "old", "fingerprint_changed": True}
    monkeypatch.setattr(calibration_flow, "judge_links", lambda *_args, **_kwargs: [judge])
    monkeypatch.setattr(calibration_flow, "endpoint_fingerprint", lambda *_args: fingerprint)
    summary = summarize(engine, rubric_name="answer_quality", with_trust=False)
    out = await calibration_flow.anchors.fn(
        engine, summary, rubric, get_settings(), name="anchors", size=10, judge_spec=None, rejudge=True
    )
    assert out["judged_now"] == 10 and out["fingerprint_changed"] is True
    assert out["compared_with"] == f"{JUDGE_A.config_hash}@old" and out["judge_stable"] is False
    served = calibration_flow.served_model_change.fn(engine, summary, out, 0.05)
    assert served["moving"] >= 1 and served["judge_stable"] is False and served["new_alerts"] == 0


def _stable_month(rng: np.random.Generator, per_day: int = 40, days: int = 30) -> pd.DataFrame:
    at = [DAY4 + timedelta(days=d, minutes=float(m)) for d in range(days) for m in rng.uniform(0, 1440, per_day)]
    judge = np.clip(np.rint(rng.normal(3.2, 1.0, len(at))), 1, 5)
    frame = pd.DataFrame({"at": pd.to_datetime(at, utc=True), "judge": judge})
    return frame.assign(release="r1", tier="t", criterion="faithfulness").sort_values("at", ignore_index=True)


@pytest.mark.slow  # 40 simulated months, a check a day: about 20 s of CPU
def test_a_stable_tier_checked_every_day_for_a_month_seldom_alarms_where_a_one_look_test_would() -> None:
    # the served-model check runs at every calibration run: its p-values stay valid over all those looks
    rng, alpha, trials = np.random.default_rng(7), 0.05, 40
    any_alarm = {"anytime": 0, "welch": 0}
    for _ in range(trials):
        month = _stable_month(rng)
        fired = {"anytime": False, "welch": False}
        for day in range(2, 31):
            seen = month[month["at"] < DAY4 + timedelta(days=day)]
            (shift,) = model_change._shifts(seen, "daily", DriftConfig())
            fired["anytime"] |= shift.p_value < alpha
            last = seen["at"] >= DAY4 + timedelta(days=day - 1)
            ref = seen["at"] >= DAY4 + timedelta(days=max(day - 29, 0))
            welch = sps.ttest_ind(seen.loc[last, "judge"], seen.loc[ref & ~last, "judge"], equal_var=False).pvalue
            fired["welch"] |= welch < alpha
        for kind in any_alarm:
            any_alarm[kind] += fired[kind]
    assert any_alarm["anytime"] / trials <= alpha  # 40 months: at most 2 with a false alarm
    assert any_alarm["welch"] / trials > 0.3  # the single-look test of the latest day, as it ran before, does not
