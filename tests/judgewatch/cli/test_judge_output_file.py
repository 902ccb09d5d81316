"""Two runs given the same `--output` never write into each other: the output is locked while one run writes
it, and each run writes its own temporary file, moved over the output only when complete."""

from __future__ import annotations

import json
from pathlib import Path

from filelock import FileLock
from typer.testing import CliRunner, Result

from judgewatch.cli import get_app


def run_judge(items: Path, out: Path, db: str) -> Result:
    args = ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(out), "--judge", "reference"]
    return CliRunner().invoke(get_app(), [*args, "--database-url", db])


def items_file(tmp_path: Path, n: int = 5) -> Path:
    rows = [{"id": f"o{i}", "question": "What is 2+2?", "answer": "4", "reference_answer": "4"} for i in range(n)]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_output_another_run_is_writing_is_refused_in_one_line(tmp_path: Path) -> None:
    out, db = tmp_path / "verdicts.jsonl", f"sqlite:///{tmp_path / 'jw.db'}"
    out.write_text("the other run's verdicts\n", encoding="utf-8")
    with FileLock(out.with_name(out.name + ".lock")):  # what the other run holds while it writes
        result = run_judge(items_file(tmp_path), out, db)
    assert result.exit_code == 2
    assert f"error: --output {out} is being written by another run" in result.output
    assert out.read_text(encoding="utf-8") == "the other run's verdicts\n"
    assert run_judge(items_file(tmp_path), out, db).exit_code == 0  # once it is free, the run goes ahead


def test_a_run_writes_its_own_partial_file_and_leaves_another_runs_alone(tmp_path: Path) -> None:
    out, db = tmp_path / "verdicts.jsonl", f"sqlite:///{tmp_path / 'jw.db'}"
    other = out.with_name(out.name + ".partial")  # the shared name two runs used to clobber
    other.write_text('{"id": "from-another-run"\n', encoding="utf-8")
    result = run_judge(items_file(tmp_path), out, db)
    assert result.exit_code == 0, result.output
    assert other.read_text(encoding="utf-8") == '{"id": "from-another-run"\n'
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == [f"o{i}" for i in range(5)]
    assert sorted(p.name for p in tmp_path.glob(".verdicts.jsonl.*")) == []  # its own partial file is gone
