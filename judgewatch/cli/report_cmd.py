"""`judgewatch report tiers [--since 7d] [--format md|html|json] [--output PATH]` and `judgewatch calibrate`.

`report tiers` writes the model owners' tier comparison from the store (Markdown with PNG plots beside it, or
one self-contained HTML file) and prints the paths. `calibrate` runs the daily `calibration` flow once, in
Prefect's ephemeral mode. Both exit 2 with a one-line message when they cannot run.
"""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.exc import SQLAlchemyError

from judgewatch.cli._store import CannotRun, open_store
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.settings import get_settings

logger = logging.getLogger(__name__)

app = typer.Typer(help="Reports for people: the tier comparison model owners read.", no_args_is_help=True)


@app.callback()
def report() -> None:
    """Reports for people: the tier comparison model owners read."""


class ReportFormat(StrEnum):
    md = "md"
    html = "html"
    json = "json"


@app.command("tiers")
def tiers(
    since: Annotated[str | None, typer.Option(help="Only interactions since: 2026-11-01, or 7d / 12h / 4w ago")] = None,
    format: Annotated[
        ReportFormat,
        typer.Option("--format", help="md (PNG files beside it), html, or json (estimates with their estimand)"),
    ] = ReportFormat.md,
    output: Annotated[
        Path | None, typer.Option(help="Report path (default: <data dir>/reports/tiers-<date>.<fmt>)")
    ] = None,
    rubric: Annotated[str, typer.Option(help="Rubric name")] = "answer_quality",
    judge_config: Annotated[str | None, typer.Option(help="Judge configuration hash (default: the latest)")] = None,
    baseline: Annotated[str | None, typer.Option(help="Tier the others are compared with (default: full)")] = None,
    database_url: Annotated[str | None, typer.Option(help="SQLAlchemy URL of the store")] = None,
) -> None:
    """Per tier and criterion: judge raw mean, corrected estimate and interval, tier difference, agreement,
    trends, open drift alerts and the labels each number rests on."""
    from judgewatch.calibration.report import write_report
    from judgewatch.calibration.summary import parse_since, summarize

    settings = get_settings()
    try:
        try:
            start = parse_since(since)
        except ValueError as exc:
            raise CannotRun(str(exc)) from None
        try:
            levels = [float(x) for x in load_rubric(rubric, settings.rubrics_dir).scale.levels]
        except RubricError:
            levels = None  # a rubric only known from stored verdicts: weights follow the observed scores
        engine = open_store(database_url or settings.effective_database_url)
        try:
            summary = summarize(
                engine,
                rubric_name=rubric,
                judge_config_hash=judge_config,
                since=start,
                baseline=baseline,
                categories=levels,
            )
        except (LookupError, ValueError) as exc:
            raise CannotRun(str(exc)) from exc
        finally:
            engine.dispose()
        stamp = summary.generated_at.strftime("%Y-%m-%d")
        path = output or settings.data_dir / "reports" / f"tiers-{stamp}.{format.value}"
        written = write_report(summary, path, format.value)
    except CannotRun as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for note in summary.notes:
        typer.echo(f"warning: {note.splitlines()[0]}", err=True)
    typer.echo(f"tier report: {written[0]}")
    for extra in written[1:]:
        typer.echo(f"  plot: {extra}")


def calibrate(
    rubric: Annotated[str, typer.Option(help="Rubric name")] = "answer_quality",
    judge: Annotated[
        str | None, typer.Option(help="Judge that re-judges the anchors: 'reference' or URL(s) (default: configured)")
    ] = None,
    anchor_set: Annotated[str | None, typer.Option(help="Anchor set name (default: <rubric>-anchors)")] = None,
    anchors: Annotated[bool, typer.Option(help="Re-judge the anchor set with the judge when it has not yet")] = True,
    webhook_url: Annotated[str | None, typer.Option(help="POST new drift alerts to this URL")] = None,
    lookback_days: Annotated[int, typer.Option(min=1, help="Days of verdicts the estimates and drift use")] = 90,
    database_url: Annotated[str | None, typer.Option(help="SQLAlchemy URL of the store")] = None,
) -> None:
    """Run the daily calibration once: tier estimates, agreement, drift alerts, anchor set (Prefect flow)."""
    from flows.calibration import calibration

    try:
        result = asyncio.run(
            calibration(
                rubric=rubric,
                judge=judge,
                anchor_set=anchor_set,
                rejudge_anchors=anchors,
                webhook_url=webhook_url,
                lookback_days=lookback_days,
                database_url=database_url,
            )
        )
    except (RubricError, LookupError, SQLAlchemyError, OSError) as exc:
        typer.echo(f"error: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(2) from None
    drift, anchor = result["drift"], result["anchors"]
    typer.echo(
        f"calibration: {result['verdicts']} verdicts, {result['labeled']} labeled, tiers {', '.join(result['tiers'])}; "
        f"drift: {drift['tested']} series tested, {drift['new_alerts']} new alert(s); anchors: {anchor}"
    )
