"""Resumable runs: a `judgewatch judge` killed with SIGKILL shows as abandoned in `runs list`, and running it
again sends to the judge only the rows without a stored verdict (counted as reused)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.settings import get_settings
from judgewatch.storage import runs as run_records
from judgewatch.storage.db import make_engine, table
from judgewatch.storage.migrations import migrate
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.clocks import ShiftedUtcClock
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.store import count_rows

ROWS = 60


def write_items(path: Path) -> list[str]:
    questions = [f"Resume question number {n}: what is {n} plus {n}?" for n in range(ROWS)]
    lines = [json.dumps({"id": f"r{n}", "question": q, "answer": str(2 * n)}) for n, q in enumerate(questions)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return questions


def stored_item_ids(db_url: str) -> set[str]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            tbl = table(VerdictRecord)
            return set(conn.execute(select(tbl.c.item_id)).scalars())
    finally:
        engine.dispose()


def runs_json(db_url: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(get_app(), ["runs", "list", "--json", "--database-url", db_url])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


@pytest.fixture
def short_expiry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("JUDGEWATCH_RUN_EXPIRY_S", "1")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def runs_clock(monkeypatch: pytest.MonkeyPatch) -> ShiftedUtcClock:
    """The clock the run records are read and written with in this process (the killed judge wrote its
    heartbeats with the real one): the test advances it past the expiry instead of waiting."""
    clock = ShiftedUtcClock()
    monkeypatch.setattr(run_records, "utcnow", clock)
    return clock


@pytest.mark.slow
def test_a_killed_run_is_abandoned_and_its_rerun_sends_no_stored_item_again(
    tmp_path: Path, db_url: str, short_expiry: None, runs_clock: ShiftedUtcClock
) -> None:
    items, out = tmp_path / "items.jsonl", tmp_path / "verdicts.jsonl"
    questions = write_items(items)
    engine = make_engine(db_url)
    migrate(engine)  # before the subprocess: the test polls the verdict table while it runs
    engine.dispose()
    args = ["--rubric", "answer_quality", "--input", str(items), "--output", str(out)]
    with run_simulator_in_thread(latency_ms=150) as sim:
        judge_args = ["--judge", sim.base_url, "--model", "sim-judge", "--concurrency", "2", "--database-url", db_url]
        env = os.environ | {"JUDGEWATCH_RUN_HEARTBEAT_S": "0.2", "JUDGEWATCH_RUN_EXPIRY_S": "60"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "judgewatch", "judge", *args, *judge_args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while not stored_item_ids(db_url) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert proc.poll() is None, "the run ended before it could be killed: make it slower"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        stored_before = stored_item_ids(db_url)
        assert 0 < len(stored_before) < ROWS
        runs_clock.advance(1.2)  # older than the 1 s expiry of this test's settings

        [killed] = runs_json(db_url)
        assert killed["status"] == "abandoned"

        sim.state.reset()
        sim.state.latency_s = 0.005  # the latency only kept the killed run slow enough to kill mid-way
        result = CliRunner().invoke(get_app(), ["judge", *args, *judge_args])
        assert result.exit_code == 0, result.output
        first_line = result.stdout.splitlines()[0]
        assert f"{len(stored_before)} reused from an earlier run" in first_line, result.output
        assert f"resumed run {killed['id']}, which was abandoned" in result.stdout

        # Only the rows without a stored verdict went to the judge, each once.
        assert sim.state.requests == ROWS - len(stored_before)
        sent = [json.dumps(body["messages"]) for body in sim.state.captured]
        for n, question in enumerate(questions):
            times = sum(question in body for body in sent)
            assert times == (0 if f"r{n}" in stored_before else 1), (n, times)

    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [f"r{n}" for n in range(ROWS)]
    assert count_rows(db_url, VerdictRecord) == ROWS
    [rerun] = runs_json(db_url)
    assert rerun["id"] == killed["id"] and rerun["status"] == "completed"
    assert rerun["counts"] == {
        "items": ROWS - len(stored_before),
        "judged_now": ROWS - len(stored_before),
        "reused": len(stored_before),
        "already_judged": 0,
        "quarantined": 0,
    }


def test_runs_list_says_so_when_no_run_is_recorded(db_url: str) -> None:
    result = CliRunner().invoke(get_app(), ["runs", "list", "--database-url", db_url])
    assert result.exit_code == 0, result.output
    assert "no runs recorded" in result.output
