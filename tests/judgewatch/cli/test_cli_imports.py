"""The command line starts without the heavy libraries: `--help` and argument errors never import them.

Each case runs the real entry point (`judgewatch.cli.main`) in a fresh interpreter and lists which of the heavy
modules ended up in `sys.modules`; a command module that imports one at its top fails here, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import judgewatch
from judgewatch.cli import get_app, readable_metavar
from judgewatch.settings import REPO_ROOT

HEAVY = ("openai", "sqlalchemy", "sqlmodel", "prefect", "pandas", "scipy")

RUNNER = """
import json, sys
sys.argv = ["judgewatch", *json.loads(sys.argv[1])]
from judgewatch.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)), file=sys.stderr)
"""


def heavy_modules_after(args: list[str]) -> list[str]:
    """The heavy modules loaded by `judgewatch <args>` in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", RUNNER.format(heavy=HEAVY), json.dumps(args)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(result.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [["--help"], ["judge", "--help"], ["regress", "--help"], ["report", "tiers", "--help"], ["--version"]],
)
def test_help_imports_none_of_the_heavy_libraries(args: list[str]) -> None:
    assert heavy_modules_after(args) == []


def test_the_runner_sees_a_heavy_import_when_a_command_makes_one() -> None:
    # the check can fail: `db create` on a SQLite URL creates nothing but reads the URL with SQLAlchemy
    assert "sqlalchemy" in heavy_modules_after(["db", "create", "--database-url", "sqlite:///unused.db"])


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(get_app(), ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"judgewatch {judgewatch.__version__}"


@pytest.mark.parametrize(
    ("shown", "typed"),
    [
        ("<str>", "TEXT"),
        ("<list[str]>", "TEXT"),
        ("<float range>", "NUMBER"),
        ("<int>", "INTEGER"),
        ("<path>", "PATH"),
        ("<md|html|json>", "[md|html|json]"),
    ],
)
def test_metavars_name_what_to_type_not_the_python_type(shown: str, typed: str) -> None:
    assert readable_metavar(shown) == typed


def test_help_shows_whole_option_names_at_80_columns() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "judgewatch", "regress", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert "--accept-unvalidated-judge / --no-accept-unvalidated-judge" in result.stdout
    assert "<str>" not in result.stdout and "<list[str]>" not in result.stdout
