"""A rubric with a JSON-schema check gates a release: recorded answers, the check judge, no judge endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.calibration.page_snapshots import save_views, stored_views
from judgewatch.cli.regress_cmd import standalone_app
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.verdicts import VerdictRecord

pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/flows/conftest.py: one server per module

DOWN = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there, and the check judge never asks
N = 20


@pytest.fixture(autouse=True)
def prefect_logging_outside_the_runner() -> None:
    """Prefect's console handler binds to the stream it first sees: let that be pytest's, not a CliRunner's, which
    closes after its invocation (the next flow run's log lines would then fail to print)."""
    from prefect.logging.configuration import setup_logging

    setup_logging(incremental=False)


def golden_set(folder: Path) -> Path:
    path = folder / "capitals.jsonl"
    rows = [
        {"id": f"q{n}", "question": f"What is the capital of country {n}?", "language": "en", "reference_answer": "X"}
        for n in range(N)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_release_whose_answers_break_the_schema_is_a_regression(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    golden = golden_set(tmp_path)
    good, broken = tmp_path / "good.jsonl", tmp_path / "broken.jsonl"
    ok = {f"q{n}": json.dumps({"answer": f"City {n}", "confidence": 0.8}) for n in range(N)}
    write_recorded_answers(good, list(ok.items()))
    # Every other answer drops the required "confidence": the schema check fails on half the items.
    write_recorded_answers(
        broken, [(key, json.dumps({"answer": "City"}) if n % 2 else value) for n, (key, value) in enumerate(ok.items())]
    )
    runner, app = CliRunner(), standalone_app()
    common = ["--rubric", "json_answer", "--dataset", str(golden), "--judge", DOWN, "--database-url", db]
    # No --accept-unvalidated-judge: deterministic checks have no model to measure (docs/checks.md).

    first = runner.invoke(
        app, ["regress", "--release", "r1", *common, "--answers", f"full={good}", "--report", str(tmp_path / "r1.md")]
    )
    assert first.exit_code == 0, first.output
    assert "trusted by construction" in (tmp_path / "r1.md").read_text()
    assert "ACCEPTED ON PURPOSE" not in first.output
    accepted = runner.invoke(app, ["baseline", "accept", "--release", "r1", "--database-url", db])
    assert accepted.exit_code == 0, accepted.output

    second = runner.invoke(
        app, ["regress", "--release", "r2", *common, "--answers", f"full={broken}", "--report", str(tmp_path / "r2.md")]
    )
    assert second.exit_code == 1, second.output
    assert "REGRESSION (exit 1" in second.output and "json_schema" in second.output

    engine = make_engine(db)
    with session_scope(engine) as session:
        rows = session.query(VerdictRecord.judge_kind, VerdictRecord.status).all()  # type: ignore[call-overload]
    assert len(rows) == 2 * N and {tuple(row) for row in rows} == {("check", "scored")}

    # The Tiers page's stored views (what the calibration flow saves) show the check series and both releases.
    save_views(engine, rubric_name="json_answer", categories=[1.0, 2.0, 3.0, 4.0, 5.0])
    view = stored_views(engine, rubric_name="json_answer", period="90d").pick(None)
    assert view is not None and "Showing judge series checks (" in view.header[0], view.header if view else None
    populations = {p.split(" / ")[0] for p in view.tables["Tier scores"]["population"]}
    assert {"r1", "r2"} <= populations, populations
