"""`judgewatch rubric check [PATH]`."""

from __future__ import annotations

from pathlib import Path

import typer

from judgewatch.cli._store import fail

app = typer.Typer(help="Rubric files: validate them before they grade anything.", no_args_is_help=True)


@app.command("check")
def check(path: Path | None = typer.Argument(None, help="A rubric YAML file or a folder of them")) -> None:
    """Validate every rubric file and template; exit 1 naming the file, the field and the problem."""
    from judgewatch.contract.rubric_check import check_rubrics
    from judgewatch.settings import get_settings

    target = path or get_settings().rubrics_dir
    if not target.exists():
        fail(f"{target} does not exist")
    results = check_rubrics(target)
    if not results:
        fail(f"no rubric files (*.yaml) in {target}")
    for file, problems in results.items():
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        if not problems:
            typer.echo(f"ok: {file}")
    raise typer.Exit(1 if any(results.values()) else 0)
