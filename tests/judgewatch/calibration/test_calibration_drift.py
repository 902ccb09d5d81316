"""Drift alerts on seeded data: an injected bias shift alerts once, a stable series never does."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import Engine

from judgewatch.calibration.drift import DriftRun, detect, notify, open_alerts, post_webhook, store_alerts
from judgewatch.calibration.score_frame import current_series, load_scores
from judgewatch.contract.rubric import Rubric
from judgewatch.storage.calibration import AlertState, get_alerts
from judgewatch.storage.db import session_scope
from judgewatch.testing.synthetic_labels import BiasShift, SyntheticSpec, TierTruth, write_synthetic

from .conftest import JUDGE_A

START = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday: the days fall in one epoch-aligned weekly window
SPEC = SyntheticSpec(
    judge=JUDGE_A,
    tiers={"stable": TierTruth(3.2, 0.3), "drifting": TierTruth(3.2, 0.3)},
    days=4,
    per_day=25,
    review_share=0.6,
    start=START,
    shift=BiasShift("drifting", "faithfulness", from_day=3, delta=-2.0),  # the judge turns harsh on day 4
    seed=1,  # fixed: a false alarm on the stable tier has a 5% chance per run by construction
)


class Hook:
    """A local webhook receiver on 127.0.0.1 that records each POSTed JSON body and answers `status`."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                hook.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    h.thread.start()
    yield h
    h.server.shutdown()
    h.server.server_close()


def run_drift(engine: Engine) -> DriftRun:
    series = current_series(engine, rubric_name="answer_quality")
    assert series is not None
    return store_alerts(engine, detect(load_scores(engine, rubric_name="answer_quality"), series))


def test_injected_bias_shift_raises_one_alert_and_the_stable_series_none(
    engine: Engine, rubric: Rubric, hook: Hook
) -> None:
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

    assert notify(engine, run, hook.url) == {alert.id: "posted: HTTP 200"}
    assert len(hook.bodies) == 1 and hook.bodies[0]["alert"]["id"] == alert.id
    assert "drifting" in hook.bodies[0]["text"]

    again = run_drift(engine)  # the daily flow runs again the same day: same alert, updated, not re-posted
    assert again.new_alert_ids == [] and len(again.alerts) == 1
    assert notify(engine, again, hook.url) == {} and len(hook.bodies) == 1
    with session_scope(engine) as session:
        (stored,) = get_alerts(session=session)
    assert stored.webhook_status == "posted: HTTP 200" and stored.state == AlertState.open


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


def test_webhook_failures_are_reported_never_raised(hook: Hook) -> None:
    from judgewatch.storage.calibration import DriftAlert

    alert = DriftAlert(
        id="x", judge_config_hash="a", judge_name="j", rubric_name="r", rubric_version="1", tier="t",
        criterion="c", window="daily", window_start=START, window_end=START, reference_start=START,
        kind="bias_shift", n_ref=1, n_cur=1, alpha=0.01, test="t", message="m",
    )  # fmt: skip
    hook.status = 500
    assert post_webhook(hook.url, alert) == "failed: HTTP 500"
    hook.server.shutdown()
    hook.server.server_close()
    assert post_webhook(hook.url, alert, timeout_s=2.0).startswith("failed: ConnectError")
    assert post_webhook("not a url", alert).startswith("failed:")
