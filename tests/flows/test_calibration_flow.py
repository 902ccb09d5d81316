"""The daily `calibration` flow in Prefect's ephemeral mode: computes, stores, alerts, re-judges the anchors once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import Engine, func, select

from judgewatch.calibration.summary import summarize
from judgewatch.contract.rubric import load_rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.calibration import CalibrationSnapshot, get_snapshots
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.trust import TrustEvidence, get_trust_records
from judgewatch.storage.types import utcnow
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.synthetic_labels import SyntheticSpec, write_synthetic

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

JUDGE = JudgeIdentity(kind="fake", name="traffic-judge", config_hash="t" * 16)


@pytest.fixture(scope="module", autouse=True)
def stop_ephemeral_server() -> Iterator[None]:
    """Stop Prefect's temporary server while pytest's output capture is still open (its atexit hook logs to it)."""
    yield
    from prefect.logging.handlers import APILogWorker
    from prefect.server.api.server import SubprocessASGIServer

    APILogWorker.drain_all()  # send the buffered flow-run logs while the server still listens

    for server in list(SubprocessASGIServer._instances.values()):
        if server.running:
            server.stop()


@pytest.mark.prefect_server  # runs the flow on Prefect's ephemeral server (make test-fast turns it off)
async def test_calibration_flow_stores_the_day_and_rejudges_the_anchors_once(
    engine: Engine, db_url: str, baseline_full: None
) -> None:
    from flows.calibration import calibration

    rubric = load_rubric("answer_quality")
    start = utcnow() - timedelta(days=3)
    # Labels stored as if people had given them in the UI: only people's labels become trust records.
    spec = SyntheticSpec(judge=JUDGE, days=3, per_day=20, review_share=0.4, start=start, label_via="ui")
    write_synthetic(engine, rubric, spec)
    params: dict[str, Any] = {
        "judge": "reference",
        "anchor_size": 10,
        "database_url": db_url,
    }

    first = await calibration(**params)
    assert first["judge_config_hash"] == JUDGE.config_hash and first["rubric_version"] == rubric.version
    assert first["tiers"] == ["full", "quantized"] and first["verdicts"] == 120 and first["labeled"] > 20
    assert first["trust_records"] == 2
    assert first["drift"]["new_alerts"] == 0 and first["alerts"] == {}  # no rules file: nothing checked
    anchors = first["anchors"]
    assert anchors["anchor_set"] == "answer_quality-anchors" and anchors["judged_now"] == 10
    assert anchors["compared_with"] == JUDGE.config_hash  # the reference judge against the traffic judge

    second = await calibration(**params)  # the same day again: nothing judged twice, nothing stored twice
    assert second["anchors"]["judged_now"] == 0 and second["anchors"]["compared_with"] == JUDGE.config_hash

    with session_scope(engine) as session:
        kinds = {k: len(get_snapshots(session=session, kind=k)) for k in ("tiers", "drift", "anchors", "tiers_view")}
        tiers = get_snapshots(session=session, kind="tiers")[0].payload
        records = get_trust_records(session=session, evidence=TrustEvidence.human_labels.value)
        n_verdicts = session.execute(select(func.count()).select_from(table(VerdictRecord))).scalar_one()
        n_snapshots = session.execute(select(func.count()).select_from(table(CalibrationSnapshot))).scalar_one()
    # one rendering of the Tiers page per period (7d, 30d, 90d, all time): what the page reads
    assert kinds == {"tiers": 1, "drift": 1, "anchors": 1, "tiers_view": 4} and n_snapshots == 7
    assert first["page_views"] == 4
    assert {(e["estimand"], e["tier"]) for e in tiers["traffic"]} == {
        ("traffic_quality", "full"),
        ("traffic_quality", "quantized"),
    }
    assert {(e["tier"], e["criterion"]) for e in tiers["estimates"]} == {
        (t, c) for t in ("full", "quantized") for c in ("relevance", "faithfulness", "completeness")
    }
    assert all(e["ppi"]["low"] is not None for e in tiers["estimates"])
    assert tiers["differences"][0]["tier"] == "quantized" and tiers["differences"][0]["baseline"] == "full"
    assert sorted((r.tier, r.dataset, r.judge_config_hash) for r in records) == [
        ("full", "review", JUDGE.config_hash),
        ("quantized", "review", JUDGE.config_hash),
    ]
    assert n_verdicts == 120 + 10  # the traffic, plus the anchors judged once by the reference judge


@pytest.mark.prefect_server  # runs the flow on Prefect's ephemeral server (make test-fast turns it off)
def test_calibrate_command_runs_the_flow_once(engine: Engine, db_url: str) -> None:
    import typer
    from typer.testing import CliRunner

    from judgewatch.cli.report_cmd import calibrate

    spec = SyntheticSpec(judge=JUDGE, days=1, per_day=20, review_share=0.3, start=utcnow() - timedelta(days=1))
    write_synthetic(engine, load_rubric("answer_quality"), spec)
    cli = typer.Typer()
    cli.command()(calibrate)
    result = CliRunner().invoke(cli, ["--database-url", db_url, "--judge", "reference"])
    assert result.exit_code == 0, result.output
    assert "calibration: 40 verdicts" in result.output and "tiers full, quantized" in result.output
    assert "'judged_now': 40" in result.output  # the anchor set (size 100 > 40 items) holds every item


def test_synthetic_labels_never_become_trust_records(engine: Engine) -> None:
    from flows.calibration import record_trust

    rubric = load_rubric("answer_quality")
    spec = SyntheticSpec(judge=JUDGE, days=1, per_day=30, review_share=0.5, start=utcnow() - timedelta(days=1))
    write_synthetic(engine, rubric, spec)
    summary = summarize(engine, categories=rubric.scale.levels, n_boot=50, with_trust=False)
    assert summary.synthetic and len(summary.agreement) == 6
    assert record_trust.fn(engine, summary, rubric) == 0
    with session_scope(engine) as session:
        assert get_trust_records(session=session) == []


def test_prefect_yaml_schedules_the_calibration_deployment_daily_with_valid_parameters() -> None:
    from prefect.flows import load_flow_from_entrypoint

    declared = yaml.safe_load((Path(REPO_ROOT) / "prefect.yaml").read_text(encoding="utf-8"))
    names = [d["name"] for d in declared["deployments"]]
    assert "post-release-regression" in names and names.count("calibration") == 1
    spec = next(d for d in declared["deployments"] if d["name"] == "calibration")
    flow: Any = load_flow_from_entrypoint(str(Path(REPO_ROOT) / spec["entrypoint"]))
    assert flow.name == "calibration"
    flow.validate_parameters(spec["parameters"])
    (schedule,) = spec["schedules"]
    minute, hour, *rest = schedule["cron"].split()
    assert rest == ["*", "*", "*"] and minute.isdigit() and hour.isdigit()  # once a day
