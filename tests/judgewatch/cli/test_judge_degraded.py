"""A judge outage is never a silent success: a run whose verdicts come mostly from the fallback judge exits 3,
says DEGRADED in its first line and is recorded `degraded`; a few fallback verdicts under the threshold do not."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from judgewatch.calibration.score_frame import count_scored
from judgewatch.cli import get_app
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.review import ReviewItem
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.settings_env import settings_env
from judgewatch.testing.simulator import Fault, SimulatorHandle, run_simulator_in_thread

ROWS = 40


@pytest.fixture
def no_retries() -> Iterator[None]:
    with settings_env(judge_max_retries=0):
        yield


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    rows = [
        {"id": f"d{n}", "question": f"Outage question {n}: what is {n} times 3?", "answer": str(3 * n)}
        for n in range(ROWS)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@contextmanager
def outage_after(sim: SimulatorHandle, requests: int) -> Iterator[None]:
    """The endpoint starts answering 503 once it has served `requests` requests: an outage mid-run."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if sim.state.requests >= requests:
                sim.state.mode = Fault("503")
                return
            stop.wait(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def judge(items: Path, out: Path, sim: SimulatorHandle, db_url: str) -> Result:
    args = ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(out)]
    args += ["--judge", sim.base_url, "--model", "sim-judge", "--concurrency", "1", "--database-url", db_url]
    return CliRunner().invoke(get_app(), args)


def route(db_url: str) -> str:
    """`review route` of every current verdict (share 1.0, no double labels); its output."""
    args = ["review", "route", "--share", "1.0", "--double-share", "0", "--database-url", db_url]
    result = CliRunner().invoke(get_app(), args)
    assert result.exit_code == 0, result.output
    return result.output


def run_record(db_url: str) -> dict[str, object]:
    result = CliRunner().invoke(get_app(), ["runs", "list", "--json", "--database-url", db_url])
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    return row


def test_an_outage_mid_run_makes_a_degraded_run_with_exit_3(
    items: Path, tmp_path: Path, db_url: str, no_retries: None
) -> None:
    out = tmp_path / "verdicts.jsonl"
    with run_simulator_in_thread(latency_ms=5) as sim, outage_after(sim, 10):
        result = judge(items, out, sim, db_url)
    assert result.exit_code == 3, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("DEGRADED run (exit 3): "), result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    fallback = sum(r["judge"]["kind"] == "reference" for r in rows)
    assert len(rows) == ROWS and fallback >= ROWS - 12  # the outage began after about 10 requests
    assert f"{fallback} from a fallback judge" in first
    record = run_record(db_url)
    assert record["status"] == "degraded"


def test_a_few_fallback_verdicts_under_the_threshold_still_complete(
    items: Path, tmp_path: Path, db_url: str, no_retries: None
) -> None:
    out = tmp_path / "verdicts.jsonl"
    lines = items.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["answer"] += " [[sim:503]]"  # one row of 40 (2.5%, under the default 5%) fails over to the reference judge
    lines[0] = json.dumps(row)
    items.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with run_simulator_in_thread(latency_ms=1) as sim:
        result = judge(items, out, sim, db_url)
    assert result.exit_code == 0, result.output
    assert not result.stdout.startswith("DEGRADED")
    assert "judged by: " in result.output and "reference" in result.output
    assert run_record(db_url)["status"] == "completed"


def test_a_rerun_after_the_outage_supersedes_the_fallback_verdicts_and_routes_each_interaction_once(
    items: Path, tmp_path: Path, db_url: str, no_retries: None
) -> None:
    out = tmp_path / "verdicts.jsonl"
    with run_simulator_in_thread(latency_ms=5) as sim:
        with outage_after(sim, 10):
            assert judge(items, out, sim, db_url).exit_code == 3
        fallback = sum(json.loads(line)["judge"]["kind"] == "reference" for line in out.read_text().splitlines())
        assert f"{ROWS} routed (uniform {ROWS}), {ROWS} new items" in route(
            db_url
        )  # fallback verdicts routed before the re-run
        sim.state.mode = Fault("ok")  # the judge is back
        sim.state.reset()
        again = judge(items, out, sim, db_url)
    assert again.exit_code == 0, again.output
    assert f"{ROWS - fallback} reused from an earlier run" in again.stdout.splitlines()[0]
    assert sim.state.requests == fallback  # only the rows judged by the fallback were sent again
    assert {json.loads(line)["judge"]["kind"] for line in out.read_text().splitlines()} == {"openai"}

    engine = make_engine(db_url)
    try:
        with session_scope(engine) as session:
            records = list(session.scalars(select(VerdictRecord)))
        by_id = {r.id: r for r in records}
        current = [r for r in records if r.superseded_by is None]
        assert len(records) == ROWS + fallback  # the fallback verdicts are kept as history
        assert len(current) == ROWS and {r.judge_kind for r in current} == {"openai"}
        for old in (r for r in records if r.superseded_by is not None):
            assert old.judge_kind == "reference"
            assert by_id[old.superseded_by].interaction_id == old.interaction_id
        assert count_scored(engine, rubric_name="answer_quality") == ROWS  # estimates count each item once
    finally:
        engine.dispose()

    # The superseding verdicts' interactions have their item already: nothing new, each interaction once.
    assert f", {ROWS - fallback} routed (uniform {ROWS - fallback}), 0 new items" in route(db_url)
    engine = make_engine(db_url)
    try:
        with session_scope(engine) as session:
            routed_items = list(session.scalars(select(ReviewItem)))
    finally:
        engine.dispose()
    assert len({i.interaction_id for i in routed_items}) == len(routed_items) == ROWS
