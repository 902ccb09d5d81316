"""A `judge` run that scores nothing never reports success: the rubric is checked before the first call, a run
scoring less than the floor share of its rows exits 4 with one line saying why, and only scored and
not-applicable verdicts are final, so a refused item is sent again on the next run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from judgewatch.cli import get_app
from judgewatch.settings import REPO_ROOT
from judgewatch.testing.simulator import Fault, run_simulator_in_thread

ROWS = 20


def items_file(tmp_path: Path) -> Path:
    rows = [{"id": f"z{i}", "question": f"What is {i} + 5?", "answer": str(i + 5)} for i in range(ROWS)]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def judge(tmp_path: Path, items: Path, *, judge_url: str = "reference", rubric: str = "answer_quality") -> Result:
    args = ["judge", "--rubric", rubric, "--input", str(items), "--output", str(tmp_path / "out.jsonl")]
    args += ["--judge", judge_url, "--database-url", f"sqlite:///{tmp_path / 'jw.db'}"]
    if judge_url != "reference":
        args += ["--model", "sim-judge", "--no-fallback-reference"]
    return CliRunner().invoke(get_app(), args)


def error_lines(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error: ")]


def test_a_template_that_cannot_render_fails_before_the_first_call(tmp_path: Path) -> None:
    folder = tmp_path / "rubrics"
    shutil.copytree(REPO_ROOT / "rubrics", folder)
    template = folder / "answer_quality.en.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\n{{ no_such_variable }}\n", encoding="utf-8")
    with run_simulator_in_thread(latency_ms=0) as sim:
        result = judge(
            tmp_path, items_file(tmp_path), judge_url=sim.base_url, rubric=str(folder / "answer_quality.yaml")
        )
        requests = sim.state.requests
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result)
    assert line.startswith("error: the rubric fails its check: ") and "answer_quality" in line
    assert requests == 0 and not (tmp_path / "out.jsonl").exists()


def test_a_judge_refusing_every_request_fails_the_run_and_the_next_run_sends_them_again(tmp_path: Path) -> None:
    items = items_file(tmp_path)
    with run_simulator_in_thread(latency_ms=0, mode="400") as sim:
        refused = judge(tmp_path, items, judge_url=sim.base_url)
        assert sim.state.requests == ROWS
        sim.state.mode = Fault("ok")
        again = judge(tmp_path, items, judge_url=sim.base_url)
        resent = sim.state.requests - ROWS
    assert refused.exit_code == 4, refused.output
    (line,) = error_lines(refused)
    assert line.startswith(f"error: only 0 of {ROWS} rows judged (0%), below the floor of 50%")
    assert f"refused {ROWS}" in line
    assert resent == ROWS  # the refused verdicts were not reused
    assert again.exit_code == 0, again.output
    assert f"{ROWS} scored, 0 unscored" in again.output


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("items.csv", ("id,question,answer\n" + "".join(f"c{i},What is {i}?,{i}\n" for i in range(ROWS))).encode()),
        ("items.bin", bytes(range(256)) * 40),
    ],
    ids=["csv", "binary"],
)
def test_a_file_whose_every_row_is_quarantined_is_not_a_success(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = judge(tmp_path, path)
    if name.endswith(".bin"):  # a binary file is refused whole, before any row: one line, exit 2
        assert result.exit_code == 2, result.output
        assert error_lines(result) == [f"error: {path}: the file is a binary file, not JSONL text (one JSON object "
                                       "per line, UTF-8)"]  # fmt: skip
        return
    assert result.exit_code == 4, result.output
    (line,) = error_lines(result)
    assert line.startswith("error: only 0 of ") and "(0%), below the floor of 50%" in line
    rows = int(line.split()[4])
    assert rows > 1 and line.endswith(f"unscored: none; quarantined: {rows}")
