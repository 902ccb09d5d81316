"""The anchors are re-judged on a schedule (`anchor_rejudge_days`) as well as on a fingerprint change: a silent
server change is caught within the period. The clock is injected (`now`); stored timestamps do the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from judgewatch.calibration.anchors import freeze_anchor_set, last_anchor_judging, rejudge_due
from judgewatch.calibration.summary import summarize
from judgewatch.contract.rubric import Rubric
from judgewatch.settings import Settings
from judgewatch.testing.synthetic_labels import write_synthetic

from .conftest import JUDGE_A
from .test_calibration_model_change import SPEC, Swappable

UNCHANGED: dict[str, Any] = {"fingerprint": "same", "previous_fingerprint": "same", "fingerprint_changed": False}


def test_rejudge_is_due_from_the_period_on_and_never_for_anchors_never_judged() -> None:
    last = datetime(2026, 1, 10, tzinfo=UTC)
    week = timedelta(days=7)
    assert not rejudge_due(last, now=last + week - timedelta(seconds=1), period=week)
    assert rejudge_due(last, now=last + week, period=week)
    assert not rejudge_due(None, now=last + 10 * week, period=week)  # never judged: judged as missing anyway


async def test_anchors_are_rejudged_after_the_period_without_a_fingerprint_change_and_not_before(
    engine: Engine, rubric: Rubric, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.calibration as calibration_flow

    write_synthetic(engine, rubric, SPEC)
    freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=10)
    last = last_anchor_judging(engine, anchor_set="anchors", judge_config_hash=JUDGE_A.config_hash)
    assert last is not None  # the synthetic verdicts judged the anchors when they were written
    judge = Swappable(JUDGE_A, score=1)  # the server now answers otherwise, and nothing reports it
    monkeypatch.setattr(calibration_flow, "judge_links", lambda *_args, **_kwargs: [judge])
    monkeypatch.setattr(calibration_flow, "endpoint_fingerprint", lambda *_args: dict(UNCHANGED))
    summary = summarize(engine, rubric_name="answer_quality", with_trust=False)
    settings = Settings(anchor_rejudge_days=7)

    async def step(now: datetime) -> dict[str, Any]:
        return await calibration_flow.anchors.fn(
            engine,
            summary,
            rubric,
            settings,
            name="anchors",
            size=10,
            judge_spec=None,
            rejudge=True,
            now=now,
        )

    early = await step(last + timedelta(days=6, hours=23))
    assert early["judged_now"] == 0 and early["scheduled_rejudge"] is False
    assert early["anchors_last_judged"] == last.isoformat()

    due = await step(last + timedelta(days=7))
    assert due["judged_now"] == 10 and due["scheduled_rejudge"] is True and due["fingerprint_changed"] is False
    assert due["compared_with"] == f"{JUDGE_A.config_hash}@{last:%Y-%m-%d}"
    assert due["judge_stable"] is False  # the scores moved on the anchors: the silent change is caught
    rejudged = last_anchor_judging(engine, anchor_set="anchors", judge_config_hash=JUDGE_A.config_hash)
    assert rejudged is not None and rejudged > last

    again = await step(rejudged + timedelta(days=1))  # the next period counts from this judging
    assert again["judged_now"] == 0 and again["scheduled_rejudge"] is False
