"""`judgewatch dataset ...`: check a golden set before a release depends on it, and list the shipped ones."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store, store_label

app = typer.Typer(help="Golden regression sets: check and list them.", no_args_is_help=True)

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


@app.command()
def promote(
    name: Annotated[str, typer.Argument(help="Name of the golden set to create or extend.")],
    ids: Annotated[
        list[str] | None, typer.Option("--id", help="Interaction id to promote (repeatable; default: every match)")
    ] = None,
    release: Annotated[str | None, typer.Option(help="Only items of this release")] = None,
    tier: Annotated[str | None, typer.Option(help="Only items of this tier")] = None,
    stratum: Annotated[str | None, typer.Option(help="Only items of this traffic route")] = None,
    source: Annotated[str | None, typer.Option(help="Only items of this source (e.g. traffic:gateway)")] = None,
    criterion: Annotated[str, typer.Option(help="The criterion whose settled score makes an answer good or bad")] = (
        "faithfulness"
    ),
    good_at: Annotated[int, typer.Option(help="Settled score at or above which the answer is known-good")] = 4,
    bad_at: Annotated[int, typer.Option(help="Settled score at or below which the answer is known-bad")] = 2,
    datasets_dir: DatasetsDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Turn traffic items whose scores people settled (adjudicated, or two or more agreeing labels) into a
    versioned golden set, PII scrubbed again; items already in the set are not added twice."""
    from judgewatch.regression.golden import load_golden_set
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import session_scope
    from judgewatch.workbench.items import ItemFilter
    from judgewatch.workbench.promote import PromoteError
    from judgewatch.workbench.promote import promote as run_promote

    root = datasets_dir or get_settings().datasets_dir
    filt = ItemFilter(release=release, tier=tier, stratum=stratum, source=source)
    with store(database_url) as engine, session_scope(engine) as session:
        try:
            result = run_promote(
                session, name, datasets_dir=root, filt=filt, interaction_ids=ids, criterion=criterion,
                good_at=good_at, bad_at=bad_at,
            )  # fmt: skip
        except PromoteError as exc:
            fail(f"{exc} (store: {store_label(database_url)})")
    left = ", ".join(f"{n} {why}" for why, n in sorted(result.skipped.items())) or "none"
    if result.version is None:
        found = f" in {store_label(database_url)}" if result.already == 0 else ""
        typer.echo(f"nothing new for {name}{found}: {result.already} already in it; left out: {left}")
        if result.already == 0:
            raise typer.Exit(1)
        return
    golden = load_golden_set(str(result.folder))
    typer.echo(
        f"{name} {result.version}: {result.added} items added ({result.already} already in it), {len(golden.items)} "
        f"in all, revision {golden.revision}, at {result.folder}; left out: {left}"
    )
