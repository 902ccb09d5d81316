"""`judgewatch judge`: one output row per good input row, quarantined rows listed, exit codes 0 and 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from judgewatch.cli import get_app
from judgewatch.storage.quarantine import QuarantinedRow
from judgewatch.storage.runs import EvalRun
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.store import count_rows

GOOD: list[dict[str, Any]] = [
    {"id": "g1", "question": "What is the capital of France?", "answer": "Paris.", "reference_answer": "Paris."},
    {
        "id": "g2",
        "question": "Who wrote Hamlet?",
        "answer": "Shakespeare wrote it.",
        "reference_facts": ["Hamlet was written by Shakespeare."],
    },
    {"id": "g3", "question": "2+2?", "answer": "4", "context": "Arithmetic: 2+2=4."},
    {"id": "g4", "question": "Any question", "answer": "An answer without references."},
]
BAD_LINES = {
    3: '{"id": "b1", "question": "broken"',
    5: '{"id": "b2", "question": "no answer"}',
    7: '{"id": "b3", "question": "q", "answer": "a", "reference_facts": "not a list"}',
}


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    good = iter(GOOD)
    lines = [BAD_LINES[n] if n in BAD_LINES else json.dumps(next(good)) for n in range(1, 8)]
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_judge(
    input_path: Path, output: Path, judge: str, db_url: str, *extra: str, rubric: str = "answer_quality"
) -> Result:
    """`judgewatch judge` on one input file; `extra` are further options."""
    args = ["--input", str(input_path), "--output", str(output), "--judge", judge, "--database-url", db_url]
    return CliRunner().invoke(get_app(), ["judge", "--rubric", rubric, *args, *extra])


def test_judge_writes_one_row_per_good_row_and_lists_quarantined_lines(
    items_file: Path, tmp_path: Path, db_url: str
) -> None:
    out = tmp_path / "verdicts.jsonl"
    result = run_judge(items_file, out, "reference", db_url)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [g["id"] for g in GOOD]
    assert {r["judge"]["kind"] for r in rows} == {"reference"}
    assert "line 3: not valid JSON" in result.output
    assert "line 5: field 'answer': required field is missing" in result.output
    assert "line 7: field 'reference_facts': expected a list of strings" in result.output
    assert "3 quarantined" in result.output
    assert count_rows(db_url, VerdictRecord) == len(GOOD)
    assert count_rows(db_url, QuarantinedRow) == 3
    assert not (tmp_path / "verdicts.jsonl.partial").exists()


def test_a_second_identical_run_stores_no_duplicate_verdicts(items_file: Path, tmp_path: Path, db_url: str) -> None:
    for _ in range(2):
        result = run_judge(items_file, tmp_path / "v.jsonl", "reference", db_url)
        assert result.exit_code == 0, result.output
    assert count_rows(db_url, VerdictRecord) == len(GOOD)
    assert count_rows(db_url, QuarantinedRow) == 3
    assert count_rows(db_url, EvalRun) == 1


def test_an_unknown_rubric_exits_2_with_a_one_line_message(items_file: Path, tmp_path: Path, db: str) -> None:
    result = run_judge(items_file, tmp_path / "v.jsonl", "reference", db, rubric="no_such_rubric")
    assert result.exit_code == 2
    assert "error: unknown rubric 'no_such_rubric'" in result.output
    assert "Traceback" not in result.output


def test_an_unreadable_input_file_exits_2(tmp_path: Path, db: str) -> None:
    result = run_judge(tmp_path / "missing.jsonl", tmp_path / "v.jsonl", "reference", db)
    assert result.exit_code == 2
    assert "error: cannot read input file" in result.output and "missing.jsonl" in result.output
    assert "Traceback" not in result.output


def test_a_down_judge_without_fallback_exits_2_and_says_so(
    items_file: Path, tmp_path: Path, db: str, closed_port_url: str
) -> None:
    result = run_judge(items_file, tmp_path / "v.jsonl", closed_port_url, db, "--no-fallback-reference")
    assert result.exit_code == 2
    assert f"judge at {closed_port_url} is not reachable" in result.output
    assert "no fallback is configured" in result.output
    assert not (tmp_path / "v.jsonl").exists()


def test_a_down_judge_falls_back_to_the_reference_judge_in_a_degraded_run(
    items_file: Path, tmp_path: Path, db: str, closed_port_url: str
) -> None:
    out = tmp_path / "v.jsonl"
    result = run_judge(items_file, out, closed_port_url, db)
    assert result.exit_code == 3, result.output  # judged, but not by the configured judge: never a silent success
    assert result.stdout.startswith("DEGRADED run (exit 3): 4 of 4 verdicts (100.0%)"), result.output
    assert f"warning: judge at {closed_port_url} is not reachable" in result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(GOOD) and {r["judge"]["kind"] for r in rows} == {"reference"}


def test_a_url_judge_grades_every_good_row(items_file: Path, tmp_path: Path, db: str) -> None:
    out = tmp_path / "v.jsonl"
    with run_simulator_in_thread(latency_ms=1) as sim:
        result = run_judge(items_file, out, sim.base_url, db, "--model", "sim-judge", "--concurrency", "4")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [g["id"] for g in GOOD]
    assert {r["judge"]["kind"] for r in rows} == {"openai"}


def test_a_malformed_judge_spec_exits_2_before_touching_the_store(items_file: Path, tmp_path: Path, db: str) -> None:
    result = run_judge(items_file, tmp_path / "v.jsonl", "bogus", db)
    assert result.exit_code == 2
    assert "error: --judge: expected 'reference' or an http(s):// URL, got 'bogus'" in result.output
    assert not (tmp_path / "jw.db").exists()


def test_the_summary_states_the_runs_judge_cost_from_the_price_table(
    items_file: Path, tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import make_engine, session_scope

    monkeypatch.setenv("JUDGEWATCH_JUDGE_PRICES", json.dumps({"sim-judge": {"input": 1.0, "output": 4.0}}))
    get_settings.cache_clear()
    try:
        with run_simulator_in_thread(latency_ms=1) as sim:
            result = run_judge(items_file, tmp_path / "v.jsonl", sim.base_url, db, "--model", "sim-judge")
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    with session_scope(make_engine(db)) as session:
        rows = session.query(VerdictRecord.prompt_tokens, VerdictRecord.completion_tokens).all()  # type: ignore[call-overload]
    expected = sum(p * 1.0 + c * 4.0 for p, c in rows) / 1_000_000
    assert sum(p for p, _ in rows) > 0
    assert f"judge cost: {expected:.4f} USD for {len(GOOD)} verdicts" in result.output
