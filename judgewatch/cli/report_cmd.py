"""`judgewatch report tiers` (the model owners' tier comparison, from the calibration flow's snapshot, computed from
the store only when there is none) and `judgewatch calibrate` (the daily flow, once); exit 2 when they cannot run."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from judgewatch.cli._store import CannotRun, DatabaseUrl, fail, store, store_label
from judgewatch.url_secrets import hide_params

if TYPE_CHECKING:  # the calibration modules load matplotlib and pandas: imported when a report is made
    from sqlalchemy import Engine

    from judgewatch.calibration.report_render import Block

FILL_COMMAND = "judgewatch calibrate"

app = typer.Typer(help="Reports for people: the tier comparison model owners read.", no_args_is_help=True)


@app.callback()
def report() -> None:
    """Reports for people: the tier comparison model owners read."""


class ReportFormat(StrEnum):
    md = "md"
    html = "html"
    json = "json"


class ScoreReadingOption(StrEnum):
    """Which judge score the estimates read (`calibration.score_frame.load_scores(reading=...)`)."""

    integer = "integer"
    expected = "expected"


@app.command("tiers")
def tiers(
    since: Annotated[
        str | None, typer.Option(help="Only interactions since: 7d, 30d, 90d (stored), or a date / 12h / 4w ago")
    ] = None,
    format: Annotated[
        ReportFormat,
        typer.Option("--format", help="md (PNG files beside it), html, or json (estimates with their estimand)"),
    ] = ReportFormat.md,
    output: Annotated[
        Path | None, typer.Option(help="Report path (default: <data dir>/reports/tiers-<date>.<fmt>)")
    ] = None,
    rubric: Annotated[str, typer.Option(help="Rubric name")] = "answer_quality",
    judge_config: Annotated[
        str | None, typer.Option(help="Judge configuration hash (default: the series the latest gate used)")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline-tier",
            "--baseline",
            help="Tier the others are compared with (default: the newest release's declared baseline tier, from "
            "its tiers file's `baseline: true` or --baseline-tier)",
        ),
    ] = None,
    compute: Annotated[
        bool, typer.Option("--compute", help="Compute from the store instead of reading the calibration snapshot")
    ] = False,
    score_reading: Annotated[
        ScoreReadingOption,
        typer.Option(
            help="expected: PPI, Spearman and bias on the probability-weighted scores where verdicts carry them "
            "(computed from the store; snapshots hold the integer reading)"
        ),
    ] = ScoreReadingOption.integer,
    database_url: DatabaseUrl = None,
) -> None:
    """Per tier and criterion: judge raw mean, corrected estimate and interval, tier difference, agreement,
    trends, open drift alerts and the labels each number rests on.

    Read from the snapshot the calibration flow stored for this period and judge series; computed from the
    store (and said so) only when there is none, or for a --since, --baseline the flow does not store."""
    from judgewatch.calibration.report_render import write_blocks
    from judgewatch.settings import get_settings
    from judgewatch.storage.types import utcnow

    settings = get_settings()
    fresh = compute or baseline or score_reading is not ScoreReadingOption.integer
    try:
        with store(database_url) as engine:
            view = None if fresh else stored_report(engine, rubric, since, judge_config)
            if view is None:
                typer.echo(
                    "no calibration snapshot for this period and judge series: computing from the store now "
                    f"(slow on a large store; `{FILL_COMMAND}` stores one)",
                    err=True,
                )
                view = computed_report(engine, rubric, since, judge_config, baseline, settings, reading=score_reading)
        content, document, title = view
        path = output or settings.data_dir / "reports" / f"tiers-{utcnow():%Y-%m-%d}.{format.value}"
        written = write_blocks(content, document, path, format.value, title=title)
    except CannotRun as exc:
        fail(exc)
    for note in document.get("notes", []):
        typer.echo(f"warning: {note.splitlines()[0]}", err=True)
    if document.get("judge") is None:
        typer.echo(f"warning: no scored verdicts under rubric {rubric!r} in {store_label(database_url)}", err=True)
    typer.echo(document["provenance"])
    typer.echo(f"tier report: {written[0]}")
    for extra in written[1:]:
        typer.echo(f"  plot: {extra}")


Report = tuple["list[Block]", dict[str, Any], str]  # blocks, JSON document, title


def _with_provenance(content: list[Block], document: dict[str, Any], text: str) -> tuple[list[Block], dict[str, Any]]:
    from judgewatch.calibration.report_render import Block

    return [*content[:1], Block("p", text), *content[1:]], {**document, "provenance": text}


def stored_report(engine: Engine, rubric: str, since: str | None, judge_config: str | None) -> Report | None:
    """The report as the calibration flow stored it, when it stored this period (and judge series)."""
    from judgewatch.calibration.page_snapshots import PERIODS, stored_views

    period = (since or "").strip()
    if period not in PERIODS:
        return None
    stored = stored_views(engine, rubric_name=rubric, period=period)
    view = stored.pick(judge_config)
    if view is None or (judge_config is not None and view.judge_config_hash != judge_config):
        return None
    why = stored.reason_line(view).replace("**", "")
    text = (
        f"Read from the snapshot the calibration flow stored at {view.computed_at:%Y-%m-%d %H:%M} UTC "
        f"(`{FILL_COMMAND}` refreshes it). {why}"
    )
    content, document = _with_provenance(view.blocks, view.document, text)
    return content, document, view.title


def computed_report(
    engine: Engine,
    rubric: str,
    since: str | None,
    judge_config: str | None,
    baseline: str | None,
    settings: Any,
    *,
    reading: ScoreReadingOption = ScoreReadingOption.integer,
) -> Report:
    """The report computed from the store now (every verdict of the series is read), in the scores' `reading`."""
    from judgewatch.calibration.summary import summarize
    from judgewatch.calibration.tiers_report import blocks, blocks_title, report_document
    from judgewatch.contract.rubric import RubricError, load_rubric
    from judgewatch.since import parse_since

    try:
        start = parse_since(since)
    except ValueError as exc:
        raise CannotRun(str(exc)) from None
    try:
        levels = [float(x) for x in load_rubric(rubric, settings.rubrics_dir).scale.levels]
    except RubricError:
        levels = None  # a rubric only known from stored verdicts: weights follow the observed scores
    try:
        summary = summarize(
            engine,
            rubric_name=rubric,
            judge_config_hash=judge_config,
            since=start,
            baseline=baseline,
            categories=levels,
            reading="expected" if reading is ScoreReadingOption.expected else "integer",
        )
    except (LookupError, ValueError) as exc:
        raise CannotRun(str(exc)) from exc
    text = f"Computed from the store at {summary.generated_at:%Y-%m-%d %H:%M} UTC (no calibration snapshot was used)."
    if reading is ScoreReadingOption.expected:
        text += " Judge scores: probability-weighted where the verdicts carry them, integers elsewhere."
    content, document = _with_provenance(blocks(summary), report_document(summary), text)
    return content, document, blocks_title(summary)


def calibrate(
    rubric: Annotated[str, typer.Option(help="Rubric name")] = "answer_quality",
    judge: Annotated[
        str | None, typer.Option(help="Judge that re-judges the anchors: 'reference' or URL(s) (default: configured)")
    ] = None,
    anchor_set: Annotated[str | None, typer.Option(help="Anchor set name (default: <rubric>-anchors)")] = None,
    anchors: Annotated[bool, typer.Option(help="Re-judge the anchor set with the judge when it has not yet")] = True,
    lookback_days: Annotated[int, typer.Option(min=1, help="Days of verdicts the estimates and drift use")] = 90,
    database_url: DatabaseUrl = None,
) -> None:
    """Run the daily calibration once: tier estimates, agreement, drift alerts, anchor set (Prefect flow)."""
    from sqlalchemy.exc import SQLAlchemyError

    from flows.calibration import calibration
    from judgewatch.contract.rubric import RubricError

    try:
        params = {"judge": judge, "database_url": database_url}
        result = asyncio.run(
            calibration(
                rubric=rubric,
                anchor_set=anchor_set,
                rejudge_anchors=anchors,
                lookback_days=lookback_days,
                **hide_params(params),  # flow parameters are stored by Prefect: never a credential
            )
        )
    except (RubricError, LookupError, SQLAlchemyError, OSError) as exc:
        fail(str(exc).splitlines()[0])
    drift, anchor = result["drift"], result["anchors"]
    typer.echo(
        f"calibration: {result['verdicts']} verdicts, {result['labeled']} labeled, tiers {', '.join(result['tiers'])}; "
        f"drift: {drift['tested']} series tested, {drift['new_alerts']} new alert(s); anchors: {anchor}"
    )
