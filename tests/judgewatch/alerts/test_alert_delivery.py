"""Alert rules against a real local webhook receiver: an incident is sent once, however many checks run (in turn or
at once), and once more when its condition clears; Slack and generic payloads; a failing webhook is stored and
logged, retried by the next check, and never breaks the run that checks."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from judgewatch.alerts.check import check_alerts, check_alerts_quietly
from judgewatch.alerts.rules import RulesDocument, parse_rules
from judgewatch.calibration.drift import detect, store_alerts
from judgewatch.calibration.judge_series import current_series
from judgewatch.calibration.score_frame import load_scores
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.settings import ModelPrice, Settings
from judgewatch.storage.alerts import AlertIncident
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.types import utcnow
from judgewatch.testing.metrics_store import JUDGES, seed_store, written_at
from judgewatch.testing.synthetic_labels import SyntheticSpec, drift_from_day_four, write_synthetic

from .conftest import Receiver

HOOKS = [{"name": "team-slack", "format": "slack", "url_env": "HOOK_SLACK"},
         {"name": "team-json", "format": "json", "url_env": "HOOK_JSON"}]  # fmt: skip
PRICE = ModelPrice(input=1.0, output=4.0, cached_input=0.25)
PER_VERDICT = (100 * 1.0 + 300 * 0.25 + 60 * 4.0) / 1_000_000  # the seed's priced verdicts' tokens
SETTINGS = Settings(judge_prices={JUDGES[0]: PRICE}, cost_currency="EUR")


def rules(*entries: dict[str, object]) -> RulesDocument:
    return parse_rules({"webhooks": HOOKS, "rules": list(entries)}, origin="test-rules.yaml")


def incidents(engine: Engine) -> list[AlertIncident]:
    with session_scope(engine) as session:
        return list(session.query(AlertIncident).order_by(AlertIncident.rule, AlertIncident.seq))  # type: ignore[attr-defined]


def spent_today(engine: Engine) -> float:
    """Seed 20 verdicts (17 priced) written now: today's spend is 17 x PER_VERDICT."""
    seed_store(engine, verdicts=20)
    written_at(engine, utcnow())
    return 17 * PER_VERDICT


SPEND_RULE = {"name": "spend", "condition": "judge_spend_above", "threshold": 0.005, "webhook": "team-slack"}


def test_spend_alert_fires_once_across_workers_and_resolves_when_the_day_turns(
    engine: Engine, db_url: str, receiver: Receiver
) -> None:
    spend = spent_today(engine)
    document = rules(SPEND_RULE)
    # Two workers check at the same moment, each with its own engine: one of them opens and sends the incident.
    engines = [make_engine(db_url) for _ in range(2)]
    workers = [threading.Thread(target=check_alerts, args=(e, document, SETTINGS)) for e in engines]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    (fired,) = receiver.bodies("slack")
    assert set(fired) == {"text", "blocks"} and fired["text"].startswith(
        "[judgewatch] FIRING: spend (judge_spend_above)"
    )
    assert f"{spend:.4f} EUR for 20 verdicts" in fired["text"] and "threshold 0.005 EUR" in fired["text"]
    assert [b["type"] for b in fired["blocks"]] == ["header", "section", "context"]
    assert fired["blocks"][1]["text"]["type"] == "mrkdwn" and "Judge spend today" in fired["blocks"][1]["text"]["text"]

    again = check_alerts(engines[0], document, SETTINGS)  # a restart: the open incident is in the store
    assert again.sent == [] and [o.firing for o in again.observed["spend"]] == [True]
    assert len(receiver.posts) == 1

    written_at(engine, utcnow() - timedelta(days=1))  # all of it yesterday's: the condition clears
    cleared = check_alerts(engines[1], document, SETTINGS)
    assert [(s.event, s.error) for s in cleared.sent] == [("resolved", None)]
    resolved = receiver.bodies("slack")[1]
    assert (
        resolved["text"].startswith("[judgewatch] RESOLVED: spend") and "0.0000 EUR for 0 verdicts" in resolved["text"]
    )
    assert check_alerts(engines[0], document, SETTINGS).sent == [] and len(receiver.posts) == 2
    (incident,) = incidents(engine)
    assert (incident.state, incident.sent, incident.seq, incident.last_error) == ("resolved", "resolved", 1, None)
    for e in engines:
        e.dispose()


START = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=5)
JUDGE = JudgeIdentity(kind="fake", name="judge-a", endpoint="http://judge-a/v1", config_hash="a" * 16)
DRIFT = drift_from_day_four(JUDGE, START)  # as in test_calibration_drift: one alert on drifting / faithfulness


def drift(engine: Engine) -> None:
    series = current_series(engine, rubric_name="answer_quality")
    assert series is not None
    store_alerts(engine, detect(load_scores(engine, rubric_name="answer_quality"), series))


def test_drift_alert_goes_as_generic_json_and_resolves_with_the_drift(
    engine: Engine, rubric: Rubric, receiver: Receiver
) -> None:
    from dataclasses import replace

    write_synthetic(engine, rubric, DRIFT)
    drift(engine)
    document = rules({"name": "drift", "condition": "drift_alert", "rubric": "answer_quality", "tier": "drifting",
                      "webhook": "team-json"})  # fmt: skip
    check_alerts(engine, document, SETTINGS)
    check_alerts(engine, document, SETTINGS)
    (fired,) = receiver.bodies("json")
    assert set(fired) == {"source", "event", "rule", "condition", "threshold", "subject", "value", "message",
                          "incident", "details"}  # fmt: skip
    assert (fired["source"], fired["event"], fired["rule"], fired["condition"]) == ("judgewatch", "fired", "drift",
                                                                                 "drift_alert")  # fmt: skip
    assert fired["message"].startswith("judge drift on tier drifting") and "faithfulness" in fired["message"]
    assert (
        fired["details"]["tier"] == "drifting" and fired["subject"] == f"drift_alert={fired['details']['drift_alert']}"
    )
    assert fired["incident"]["seq"] == 1 and fired["incident"]["state"] == "open"
    assert fired["incident"]["resolved_at"] is None

    # A fifth day with the judge back to normal: the calibration resolves the drift alert, the rule resolves.
    calm = replace(DRIFT, days=1, per_day=40, start=START + timedelta(days=4), shift=None, source="day5", seed=6)
    write_synthetic(engine, rubric, calm)
    drift(engine)
    check_alerts(engine, document, SETTINGS)
    resolved = receiver.bodies("json")[1]
    assert (resolved["event"], resolved["incident"]["state"]) == ("resolved", "resolved")
    assert resolved["incident"]["id"] == fired["incident"]["id"] and "no longer open" in resolved["message"]
    assert len(receiver.posts) == 2


@pytest.mark.slow  # a calibration snapshot of 240 verdicts: seconds
def test_corrected_score_alert_carries_the_snapshots_estimate(
    engine: Engine, rubric: Rubric, receiver: Receiver
) -> None:
    from flows.calibration import tier_snapshot

    spec = SyntheticSpec(
        judge=JUDGE, days=3, per_day=40, review_share=0.5, start=START, seed=3
    )  # full 3.9, quantized 3.2
    write_synthetic(engine, rubric, spec)
    summary = tier_snapshot.fn(engine, rubric, 90)
    document = rules({"name": "low", "condition": "corrected_score_below", "threshold": 3.55,
                      "rubric": "answer_quality", "criterion": "faithfulness", "webhook": "team-json"})  # fmt: skip
    report = check_alerts(engine, document, SETTINGS)
    firing = {o.details["tier"]: o.firing for o in report.observed["low"]}
    assert firing == {"full": False, "quantized": True}
    (fired,) = receiver.bodies("json")
    row = next(r for r in summary.traffic if r.tier == "quantized" and r.criterion == "faithfulness")
    assert fired["value"] == pytest.approx(row.estimate) and fired["details"]["n_labeled"] == row.n_labeled
    assert f"corrected score {row.estimate:.2f} [{row.low:.2f}, {row.high:.2f}]" in fired["message"]
    assert "traffic_quality (production traffic), tier quantized" in fired["message"]
    assert f"n labeled {row.n_labeled}" in fired["message"]

    raised = rules({**document.rules[0].model_dump(), "threshold": 2.0})  # the condition clears
    check_alerts(engine, raised, SETTINGS)
    assert [b["event"] for b in receiver.bodies("json")] == ["fired", "resolved"]


def test_a_failing_webhook_is_stored_logged_and_retried_without_breaking_the_run(
    engine: Engine, receiver: Receiver, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    spent_today(engine)
    receiver.statuses = [503, 503]  # the first delivery and its one retry fail
    path = tmp_path / "rules.yaml"
    path.write_text(
        "webhooks:\n- {name: team-slack, format: slack, url_env: HOOK_SLACK}\n"
        "- {name: unset, format: json, url_env: NO_SUCH_WEBHOOK_VARIABLE}\n"
        "rules:\n- {name: spend, condition: judge_spend_above, threshold: 0.005, webhook: team-slack}\n"
        "- {name: spend-elsewhere, condition: judge_spend_above, threshold: 0.005, webhook: unset}\n",
        encoding="utf-8",
    )
    settings = SETTINGS.model_copy(update={"alert_rules_file": path})
    with caplog.at_level(logging.WARNING):
        outcome = check_alerts_quietly(engine, settings)  # what a flow run calls: it returns, never raises
    errors = {sent["rule"]: sent["error"] for sent in outcome["sent"]}
    assert errors["spend"].startswith("webhook 'team-slack' (127.0.0.1): HTTP 503")
    assert errors["spend-elsewhere"] == "webhook 'unset': environment variable NO_SUCH_WEBHOOK_VARIABLE is not set"
    assert len(receiver.posts) == 2  # one retry of the transient 503
    assert "alert not sent: webhook 'team-slack' (127.0.0.1): HTTP 503" in caplog.text
    stored = {i.rule: i for i in incidents(engine)}
    assert (
        stored["spend"].state == "open"
        and stored["spend"].sent == ""
        and "HTTP 503" in (stored["spend"].last_error or "")
    )

    retried = check_alerts_quietly(engine, settings)  # the receiver answers now: the due event goes, once
    assert [(s["rule"], s["event"], s["error"]) for s in retried["sent"] if s["rule"] == "spend"] == [
        ("spend", "fired", None)
    ]
    assert len(receiver.bodies("slack")) == 3 and receiver.bodies("slack")[2]["text"].startswith("[judgewatch] FIRING")
    third = check_alerts_quietly(engine, settings)
    assert [s["rule"] for s in third["sent"]] == ["spend-elsewhere"] and len(receiver.posts) == 3

    path.write_text("rules: [", encoding="utf-8")  # a broken rules file: logged and returned, the run goes on
    assert check_alerts_quietly(engine, settings)["error"].startswith(f"AlertRulesError: {path}: not valid YAML")


def test_unscored_share_fires_above_its_threshold_and_is_not_evaluated_on_too_few_verdicts(
    engine: Engine, receiver: Receiver
) -> None:
    seed_store(engine, verdicts=40)  # 30 on traffic (k % 4 != 0), 10 on a release's golden items
    written_at(engine, utcnow())
    with engine.begin() as conn:  # a third of the traffic verdicts unscored, and every regression one
        conn.execute(text("UPDATE verdict SET status = 'unscored' WHERE CAST(item_id AS INTEGER) % 3 = 0 "
                          "OR CAST(item_id AS INTEGER) % 4 = 0"))  # fmt: skip
    rule = {"name": "unscored", "condition": "unscored_share_above", "threshold": 0.3, "webhook": "team-json"}
    (obs,) = check_alerts(engine, rules(rule), SETTINGS).observed["unscored"]
    assert obs.firing is True and obs.value == pytest.approx(10 / 30)
    assert "unscored share of sampled traffic's current verdicts written in the last 24 h" in obs.text
    assert "10 of 30 (33.3%), threshold 30%" in obs.text
    (fired,) = receiver.bodies("json")
    assert fired["details"] == {"unscored": 10, "verdicts": 30}
    (few,) = check_alerts(engine, rules({**rule, "name": "few", "min_verdicts": 31}), SETTINGS).observed["few"]
    assert few.firing is None and "fewer than 31 verdicts, not evaluated" in few.text
    assert len(receiver.posts) == 1
