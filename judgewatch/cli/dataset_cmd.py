"""`judgewatch dataset ...`: check a golden set before a release depends on it, and list the shipped ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

logger = logging.getLogger(__name__)

app = typer.Typer(help="Golden regression sets: validate and list them.", no_args_is_help=True)

DatasetsDir = Annotated[
    Path | None,
    typer.Option("--datasets-dir", help="Folder holding the golden sets (default: the settings' datasets_dir)."),
]


@app.command()
def check(
    name: Annotated[str, typer.Argument(help="Set name, folder or .jsonl path, or hub id owner/name.")],
    datasets_dir: DatasetsDir = None,
) -> None:
    """Validate every row of a golden set; exit 0 when usable, 2 with the problems when not."""
    from judgewatch.regression.golden import GoldenSetError, load_golden_set

    try:
        golden = load_golden_set(name, datasets_dir=datasets_dir)
    except GoldenSetError as exc:
        for problem in exc.problems:
            typer.echo(problem, err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"ok: {golden.name} ({len(golden.items)} items, revision {golden.revision})")


@app.command("list")
def list_sets(datasets_dir: DatasetsDir = None) -> None:
    """Show the golden sets found in the datasets folder, with their sizes (rows are not validated here)."""
    from judgewatch.regression.golden import list_golden_sets

    summaries = list_golden_sets(datasets_dir=datasets_dir)
    if not summaries:
        typer.echo("no golden sets found")
        return
    width = max(len(summary.name) for summary in summaries)
    typer.echo(f"{'name':<{width}}  {'items':>6}  {'size':>9}  language  version")
    for summary in summaries:
        size = f"{summary.size_bytes / 1024:.1f} KiB"
        typer.echo(
            f"{summary.name:<{width}}  {summary.items:>6}  {size:>9}  {summary.language or '-':<8}  "
            f"{summary.version or '-'}"
        )
