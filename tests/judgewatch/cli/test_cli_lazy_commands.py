"""`judgewatch NAME ...` registers only NAME: the same command as with every command registered, fewer imports.

And `judgewatch judge` holds the garbage collector during its start-up only: it collects again while judging
and after, as before the command.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from judgewatch.cli import COMMAND_NAMES, app_for, get_app
from judgewatch.settings import REPO_ROOT


def _help_texts(app: typer.Typer, path: list[str]) -> dict[str, str]:
    """`--help` of `path` and of every subcommand below it, by their argument lists."""
    out = {" ".join(path): CliRunner().invoke(app, [*path, "--help"]).output}
    node = typer.main.get_command(app)
    for name in path:
        node = node.commands[name]  # type: ignore[attr-defined]
    for sub in getattr(node, "commands", {}):
        out.update(_help_texts(app, [*path, sub]))
    return out


@pytest.mark.parametrize("name", sorted(COMMAND_NAMES))
def test_a_command_alone_helps_and_parses_as_with_every_command_registered(name: str) -> None:
    alone, full = app_for(name), get_app()
    assert list(typer.main.get_command(alone).commands) == [name]  # type: ignore[attr-defined]
    assert _help_texts(alone, [name]) == _help_texts(full, [name])
    bogus = [name, "--no-such-option"]
    assert CliRunner().invoke(alone, bogus).output == CliRunner().invoke(full, bogus).output


def test_the_table_holds_every_command() -> None:
    assert set(typer.main.get_command(get_app()).commands) == COMMAND_NAMES  # type: ignore[attr-defined]


def test_judge_imports_no_other_command_module() -> None:
    script = (
        "import json, sys\n"
        "sys.argv = ['judgewatch', 'judge', '--help']\n"
        "from judgewatch.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('judgewatch.cli.') and m.endswith('_cmd'))),"
        " file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert json.loads(result.stderr.strip().splitlines()[-1]) == ["judgewatch.cli.judge_cmd"]
    assert "--rubric" in result.stdout


@pytest.mark.parametrize("enabled", [True, False])
def test_judge_gives_the_collector_back_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "question": "2+2?", "answer": "4", "reference_answer": "4"}) + "\n")
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        args = ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(tmp_path / "out.jsonl")]
        args += ["--judge", "reference", "--database-url", f"sqlite:///{tmp_path / 'jw.db'}"]
        result = CliRunner().invoke(get_app(), args)
        assert result.exit_code == 0, result.output
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()
