"""`regress --junit --summary-md` when the gate itself fails: both files still say exit 2, never a stale pass.

The gate's flow is replaced by one that raises (no Prefect run); `tests/flows/test_regression.py` runs the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml
from typer.testing import CliRunner

import judgewatch.cli.regress_cmd as regress_cmd


@pytest.fixture
def crashing_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(**_params: Any) -> dict[str, Any]:
        raise RuntimeError("the store is locked")

    monkeypatch.setattr(regress_cmd, "run_regression", crash)


def regress(*args: str) -> Any:
    base = ["regress", "--release", "r9", "--dataset", "halueval_qa_mini", "--judge", "reference"]
    return CliRunner().invoke(regress_cmd.standalone_app(), [*base, *args])


def test_a_gate_that_raises_writes_both_files_as_could_not_evaluate(crashing_gate: None, tmp_path: Path) -> None:
    junit, summary = tmp_path / "ci" / "junit.xml", tmp_path / "ci" / "summary.md"
    junit.parent.mkdir()
    junit.write_text("<testsuites/>", encoding="utf-8")  # a stale file from an earlier run is replaced
    result = regress("--junit", str(junit), "--summary-md", str(summary))
    assert result.exit_code == 2
    assert "COULD NOT EVALUATE (exit 2): RuntimeError: the store is locked" in result.output
    [suite] = list(JUnitXml.fromfile(str(junit)))
    assert (suite.tests, suite.failures, suite.errors) == (1, 0, 1)
    assert next(iter(suite)).result[0].message == "RuntimeError: the store is locked"
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("### Release gate: r9: COULD NOT EVALUATE (exit 2)\n")
    assert "- could not evaluate: RuntimeError: the store is locked" in text
    assert sorted(p.name for p in junit.parent.iterdir()) == ["junit.xml", "summary.md"]  # no partial file left


def test_an_unwritable_file_is_said_on_the_same_line_and_the_exit_stays_2(crashing_gate: None, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    result = regress("--junit", str(tmp_path / "a-file" / "junit.xml"))
    assert result.exit_code == 2
    [line] = [line for line in result.output.splitlines() if line.startswith("COULD NOT EVALUATE")]
    assert "RuntimeError: the store is locked (and the CI files could not be written: cannot write" in line
