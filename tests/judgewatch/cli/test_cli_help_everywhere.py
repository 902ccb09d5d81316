"""Every command and subcommand answers `--help` with its usage and exit 0, as `judgewatch ... --help` runs it.

Eight commands' help once crashed inside typer (an argument's type display called with `ctx=`), and the lazy
registration test compared two crashes as equal; this test runs the real entry point's command for each path.
"""

from __future__ import annotations

from typing import Any

import pytest

from judgewatch.cli import get_command


def _paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    subs = getattr(command, "commands", {})
    return [path] + [p for name, sub in subs.items() for p in _paths(sub, (*path, name))]


PATHS = [p for p in _paths(get_command()) if p]


def test_every_group_and_subcommand_is_walked() -> None:
    assert ("judges", "limit") in PATHS and ("reviewer", "enable") in PATHS and ("report", "tiers") in PATHS
    assert len(PATHS) > 40


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_help_runs_and_exits_zero(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        get_command(path[0])([*path, "--help"], prog_name="judgewatch")
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert out.startswith(f"Usage: judgewatch {' '.join(path)}")
