"""A lone judge link (`--no-fallback-reference`) is behind the same circuit breaker as a chain's links: a hung
endpoint costs the breaker's threshold of timeouts, then the other items are stored unscored without a call.
Before, every item waited out its own timeout (493 items at 3 s took 18 min 41 s)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.simulator import run_simulator_in_thread

ROWS = 40
THRESHOLD = 5  # FallbackJudge's default failure_threshold


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("JUDGEWATCH_JUDGE_TIMEOUT_S", "0.5")
    monkeypatch.setenv("JUDGEWATCH_JUDGE_MAX_RETRIES", "0")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.usefixtures("short_timeout")
def test_a_hung_lone_judge_costs_the_breaker_threshold_of_calls_not_one_per_item(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    rows = [{"id": f"h{i}", "question": f"What is {i} + 7?", "answer": str(i + 7)} for i in range(ROWS)]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    with run_simulator_in_thread(latency_ms=0, mode="hang") as sim:
        args = ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(tmp_path / "o.jsonl")]
        args += ["--judge", sim.base_url, "--model", "sim-judge", "--no-fallback-reference", "--concurrency", "2"]
        result = CliRunner().invoke(get_app(), [*args, "--database-url", db])
        calls = sim.state.requests
    engine = make_engine(db)
    try:
        with session_scope(engine) as session:
            reasons = Counter(v.unscored_reason for v in session.scalars(select(VerdictRecord)).all())
    finally:
        engine.dispose()
    assert result.exit_code == 3 and result.output.startswith("DEGRADED run (exit 3)"), result.output
    assert THRESHOLD <= calls <= THRESHOLD + 2  # the threshold, plus what was in flight (concurrency 2)
    assert reasons == {"timeout": calls, "endpoint_down": ROWS - calls}
