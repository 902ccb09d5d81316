"""`judgewatch judge` refuses bad paths up front, survives rows that used to abort a run, and masks credentials."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import func, select
from typer.testing import CliRunner, Result

from judgewatch.cli import get_app
from judgewatch.storage.db import make_engine, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.runs import EvalRun
from judgewatch.storage.verdicts import VerdictRecord


def run_judge(*args: str) -> Result:
    """`judgewatch judge --rubric answer_quality ARGS...` in this process."""
    return CliRunner().invoke(get_app(), ["judge", "--rubric", "answer_quality", *args])


def _rows(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _row(i: int, **extra: object) -> str:
    return json.dumps({"id": f"r{i}", "question": "What is 2+2?", "answer": "4", "reference_answer": "4", **extra})


def test_output_equal_to_input_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    path = _rows(tmp_path / "items.jsonl", [_row(1)])
    before = path.read_bytes()
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = run_judge("--input", str(path), "--output", str(path), "--judge", "reference", "--database-url", db)
    assert result.exit_code == 2
    assert "is the --input file" in result.output
    assert path.read_bytes() == before
    assert not (tmp_path / "jw.db").exists()  # refused before the store was even opened


def test_output_that_is_a_directory_is_refused_up_front(tmp_path: Path) -> None:
    path = _rows(tmp_path / "items.jsonl", [_row(1)])
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = run_judge("--input", str(path), "--output", str(tmp_path), "--judge", "reference", "--database-url", db)
    assert result.exit_code == 2
    assert "is a directory" in result.output
    assert not (tmp_path / "jw.db").exists()


def test_an_empty_input_file_gets_one_message_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b"")
    out = tmp_path / "out.jsonl"
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = run_judge("--input", str(path), "--output", str(out), "--judge", "reference", "--database-url", db)
    assert result.exit_code == 2
    assert "is empty" in result.output and result.output.count("\n") == 1


def test_a_row_with_nul_no_longer_aborts_the_run_and_the_other_rows_are_stored(tmp_path: Path, db_url: str) -> None:
    """Real PostgreSQL under the postgres parameter: text there cannot hold NUL."""
    path = _rows(tmp_path / "items.jsonl", [_row(1), _row(2, answer="4\u0000 exactly"), _row(3)])
    out = tmp_path / "out.jsonl"
    result = run_judge("--input", str(path), "--output", str(out), "--judge", "reference", "--database-url", db_url)
    assert result.exit_code == 0, result.output
    assert "line 2: field 'answer': removed 1 NUL character(s)" in result.output
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            verdicts = conn.execute(select(func.count()).select_from(table(VerdictRecord))).scalar_one()
            answers = set(conn.execute(select(table(Interaction).c.answer)).scalars())
            run = conn.execute(select(table(EvalRun))).one()
    finally:
        engine.dispose()
    assert verdicts == 3 and "4 exactly" in answers
    assert run.counts["repaired"] == 1 and run.counts["quarantined"] == 0


def test_a_row_nested_a_thousand_levels_is_quarantined_and_the_run_completes(tmp_path: Path) -> None:
    deep = '{"id": "deep", "question": "q", "answer": "a", "x": ' + "[" * 1000 + "]" * 1000 + "}"
    path = _rows(tmp_path / "items.jsonl", [_row(1), deep, _row(3)])
    out = tmp_path / "out.jsonl"
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = run_judge("--input", str(path), "--output", str(out), "--judge", "reference", "--database-url", db)
    assert result.exit_code == 0, result.output
    assert "line 2: not usable JSON: nested more than 64 levels deep" in result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


def test_credentials_in_the_judge_url_are_masked_in_output_and_in_the_stored_run(tmp_path: Path) -> None:
    path = _rows(tmp_path / "items.jsonl", [_row(1)])
    out = tmp_path / "out.jsonl"
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    url = "http://alice:s3cr3t-token@127.0.0.1:9/v1"  # port 9 (discard): nothing answers, the fallback judges
    result = run_judge("--input", str(path), "--output", str(out), "--judge", url, "--database-url", db)
    assert result.exit_code == 3, result.output  # every verdict from the fallback judge: a degraded run
    assert "http://alice:***@127.0.0.1:9/v1" in result.output
    assert "s3cr3t" not in result.output
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            params, counts = conn.execute(select(table(EvalRun).c.params, table(EvalRun).c.counts)).one()
    finally:
        engine.dispose()
    assert params["judge"] == "http://alice:***@127.0.0.1:9/v1"
    assert counts["configured_judge"] == "judge at http://alice:***@127.0.0.1:9/v1"
