"""The daily judge spend cap on the real flows, with a priced judge (the simulator on loopback): the sampling flow
pauses once the day's spend reaches the cap, stores its picks and says so; the release gate is not paused and states
its cost; the next UTC day the sampling flow judges every paused pick.

Prefect runs against a temporary test server (prefect_test_harness) for the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.types import utcnow
from judgewatch.testing.metrics_store import written_at
from judgewatch.testing.sampling_runs import sample_flow
from judgewatch.testing.simulator import SimulatorHandle, run_simulator_in_thread

pytestmark = [pytest.mark.usefixtures("prefect_server"), pytest.mark.slow]  # one Prefect server per module; a minute

SET = "halueval_qa_mini"
BATCH = 60


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatorHandle]:
    """A priced judge (1 EUR / 4 EUR per million input / output tokens) and a cap one batch of picks exceeds."""
    monkeypatch.setenv("JUDGEWATCH_JUDGE_MODEL", "sim-judge")
    monkeypatch.setenv("JUDGEWATCH_JUDGE_PRICES", json.dumps({"sim-judge": {"input": 1.0, "output": 4.0}}))
    monkeypatch.setenv("JUDGEWATCH_COST_CURRENCY", "EUR")
    monkeypatch.setenv("JUDGEWATCH_JUDGE_DAILY_SPEND_CAP", "0.000001")
    get_settings.cache_clear()
    with run_simulator_in_thread(latency_ms=0) as handle:
        yield handle
    get_settings.cache_clear()


def scalar(db: str, sql: str) -> int:
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql)).scalar_one())
    finally:
        engine.dispose()


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def a_day_passes(db: str) -> None:
    """Every verdict so far was written yesterday (UTC): today's spend starts again from 0."""
    engine = make_engine(db)
    written_at(engine, utcnow() - timedelta(days=1))
    engine.dispose()


async def test_sampling_pauses_at_the_cap_the_gate_does_not_and_the_next_day_judges_the_paused_picks(
    sim: SimulatorHandle, source: Path, db: str, tmp_path: Path
) -> None:
    first = await sample_flow(source, db, judge=sim.base_url, batch_size=BATCH)
    picked = first["picked"]
    assert picked > 3 * BATCH and first["stored"] == picked and first["watermark_saved"]
    # the first batch is judged (the day's spend was 0), then the cap holds: every later pick is stored, unjudged
    assert sum(first["judged"].values()) == BATCH and first["paused_picks"] == picked - BATCH
    assert first["paused"].startswith("spend_cap: sampling-side judging paused until ")
    assert scalar(db, "SELECT count(*) FROM verdict") == BATCH
    assert scalar(db, "SELECT count(*) FROM paused_pick") == picked - BATCH
    listed = CliRunner().invoke(get_app(), ["runs", "list", "--kind", "sampling", "--database-url", db]).output
    assert " paused " in listed and "  paused: spend_cap: sampling-side judging paused until" in listed

    # The release gate is never paused: every golden answer is judged although the cap holds, and it states its cost.
    items = load_golden_set(SET).items
    answers = tmp_path / "good.jsonl"
    write_recorded_answers(answers, [(i.id, i.good_answers[0]) for i in items])
    from flows.regression import post_release_regression

    gate = await post_release_regression(
        release="r1", datasets=[SET], answers=[f"full={answers}", f"quantized={answers}"], judge=sim.base_url,
        accept_unvalidated_judge=True, database_url=db, report=str(tmp_path / "r1.md"), fail_on_gate=False,
    )  # fmt: skip
    assert isinstance(gate, dict) and gate["exit_code"] in (0, 1), gate["summary"]  # evaluated, not exit 2
    judged = scalar(db, "SELECT count(*) FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
                        "WHERE i.release = 'r1' AND v.judge_name = 'sim-judge' AND v.status = 'scored'")  # fmt: skip
    assert judged == 2 * len(items)
    assert gate["cost"]["amount"] > 0 and gate["cost"]["currency"] == "EUR"
    assert gate["cost"]["text"].startswith(f"{gate['cost']['amount']:.4f} EUR for {2 * len(items)} verdicts")
    assert f"- judge cost of this release so far: {gate['cost']['text']}" in read(gate["report"])

    same_day = await sample_flow(source, db, judge=sim.base_url, batch_size=BATCH)  # still capped: still waiting
    assert same_day["resumed"] == 0 and scalar(db, "SELECT count(*) FROM paused_pick") == picked - BATCH

    a_day_passes(db)  # the next UTC day: today's spend starts from 0, one batch may be judged before the check
    next_day = await sample_flow(source, db, judge=sim.base_url, batch_size=picked)
    assert next_day["read"] == 0 and next_day["resumed"] == picked - BATCH and next_day["paused"] is None
    assert scalar(db, "SELECT count(*) FROM paused_pick") == 0
    traffic = "SELECT id FROM interaction WHERE source LIKE 'traffic:%'"
    judged_picks = f"SELECT count(DISTINCT interaction_id) FROM verdict WHERE interaction_id IN ({traffic})"
    assert scalar(db, judged_picks + " AND judge_name = 'sim-judge'") == picked
    assert next_day["routed"] and next_day["review_items_created"] > 0
