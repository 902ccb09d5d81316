"""`judgewatch plan gate`: how many golden items a gate margin needs for 80% power (docs/statistics.md, "Gate
power"), from a stated spread of the paired differences or from the ones a release's last gate decision paired."""

from __future__ import annotations

from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store
from judgewatch.regression.options import DEFAULTS

app = typer.Typer(no_args_is_help=True, help="Plan: how many golden items a gate margin needs.")


@app.command("gate")
def gate(
    margin: Annotated[float, typer.Option(min=0.0, help="The gate's margin (rubric scale)")] = DEFAULTS.margin,
    sd: Annotated[
        float | None, typer.Option(min=0.0, help="Standard deviation of candidate - baseline per item")
    ] = None,
    from_release: Annotated[
        str | None, typer.Option(help="Read the spread from this release's last gate decision in the store")
    ] = None,
    dataset: Annotated[str | None, typer.Option(help="Only this golden set (with --from-release)")] = None,
    drop: Annotated[
        float | None, typer.Option(help="The drop to catch (default: twice the margin)", show_default=False)
    ] = None,
    power: Annotated[float, typer.Option(min=0.5, max=0.99, help="Probability of catching it")] = 0.8,
    level: Annotated[float, typer.Option(min=0.5, max=0.999, help="The gate's interval level")] = 0.95,
    database_url: DatabaseUrl = None,
) -> None:
    """Golden items needed so the gate catches a drop of --drop (default 2 x margin) with --power probability."""
    from judgewatch.stats.power import detectable_drop, items_needed

    target = 2 * margin if drop is None else drop
    if (sd is None) == (from_release is None):
        fail("give either --sd S or --from-release R (optionally with --dataset NAME)")
    if not target > margin:
        fail(f"--drop {target} must exceed the margin {margin}: the margin is what it tolerates")
    aim = f"to catch a drop of {target:g} with {power:.0%} probability at margin {margin:g} ({level:.0%} interval)"
    if sd is not None:
        if sd == 0:
            fail("--sd 0: identical scores need 2 items; give the spread you expect")
        typer.echo(f"paired sd {sd:g}: {items_needed(sd, margin, target, level=level, power=power)} golden items {aim}")
        return
    assert from_release is not None
    from judgewatch.regression.scores import paired_spreads
    from judgewatch.storage.db import session_scope

    with store(database_url) as engine, session_scope(engine) as session:
        try:
            spreads = paired_spreads(session=session, release=from_release, dataset=dataset)
        except ValueError as exc:
            fail(exc)
    if not spreads:
        where = f" on golden set {dataset}" if dataset else ""
        fail(f"release {from_release} has no item paired with its baseline{where}")
    typer.echo(f"golden items {aim}:")
    for s in spreads:
        need = items_needed(s.sd, margin, target, level=level, power=power) if s.sd > 0 else 2
        now = detectable_drop(s.sd, s.n, margin, level=level, power=power)
        typer.echo(
            f"  tier {s.tier} {s.criterion} on {s.dataset} (vs {s.baseline}): paired sd {s.sd:.3f} over {s.n} items; "
            f"needs {need}; at {s.n} items the drop caught with {power:.0%} probability is {now:.2f}"
        )
