"""`judgewatch export` (verdicts, labels and interactions out) and `judgewatch compare A B`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store, store_label
from judgewatch.cli.report_cmd import ReportFormat

Opt = typer.Option


class ExportFormatOption(StrEnum):
    parquet = "parquet"
    jsonl = "jsonl"
    hf = "hf"


def export(
    format: Annotated[ExportFormatOption, Opt("--format", help="parquet, jsonl, or hf (a datasets Dataset folder)")],
    output: Annotated[Path, Opt(help="File (parquet, jsonl) or folder (hf) to write")],
    release: Annotated[str | None, Opt(help="Only this release")] = None,
    tier: Annotated[str | None, Opt(help="Only this tier")] = None,
    dataset: Annotated[str | None, Opt(help="Only this golden set")] = None,
    stratum: Annotated[str | None, Opt(help="Only this traffic route")] = None,
    rubric: Annotated[str | None, Opt(help="Only this rubric")] = None,
    criterion: Annotated[str | None, Opt(help="The criterion --score-min/--score-max read")] = None,
    score_min: Annotated[int | None, Opt(help="Only items scored at least this")] = None,
    score_max: Annotated[int | None, Opt(help="Only items scored at most this")] = None,
    unscored_reason: Annotated[str | None, Opt(help="Only unscored verdicts with this reason")] = None,
    label_status: Annotated[
        str | None, Opt(help="unlabeled, labeled, disagreed or adjudicated", metavar="STATUS")
    ] = None,
    judge_series: Annotated[str | None, Opt(help="Judge configuration hash (or its prefix)", metavar="HASH")] = None,
    text: Annotated[str | None, Opt(help="Free text in the question, answer or reason")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write current verdicts with their interactions, labels and adjudications (one row per verdict); the rubric
    versions, judge configuration hashes and label provenance go in the metadata."""
    from pydantic import ValidationError

    from judgewatch.storage.db import session_scope
    from judgewatch.workbench.export import collect, write_export
    from judgewatch.workbench.items import ItemFilter

    options = {name: value for name, value in locals().items() if name in ItemFilter.model_fields}
    try:
        filt = ItemFilter.model_validate(options)
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"--{'-'.join(str(p) for p in first['loc']).replace('_', '-')}: {first['msg']}")
    with store(database_url) as engine, session_scope(engine) as session:
        rows, meta = collect(session, filt)
    if not rows:
        fail(f"nothing in {store_label(database_url)} matches the filter: no file written")
    written = write_export(rows, meta, format, output)
    typer.echo(f"exported {len(rows)} verdicts to {written[0]}" + (f" (metadata {written[1]})" if written[1:] else ""))


def compare(
    a: Annotated[str, typer.Argument(help="RELEASE or RELEASE/TIER (A, the reference side)", metavar="A")],
    b: Annotated[str, typer.Argument(help="RELEASE or RELEASE/TIER (B, compared with A)", metavar="B")],
    format: Annotated[ReportFormat, Opt("--format", help="md, html or json")] = ReportFormat.md,
    output: Annotated[Path | None, Opt(help="Report path (default: <data dir>/reports/compare-A-B.<fmt>)")] = None,
    rubric: Annotated[str, Opt(help="Rubric name")] = "answer_quality",
    judge_series: Annotated[
        str | None, Opt(help="Judge configuration hash (default: the series with most pairs)", metavar="HASH")
    ] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Compare two releases, or two tiers of one release, on the items both answered: per-criterion deltas with
    paired intervals, regressions first, answers side by side with the differing words marked."""
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import session_scope
    from judgewatch.workbench.compare import CompareError, Side
    from judgewatch.workbench.compare import compare as run_compare
    from judgewatch.workbench.compare_report import write_comparison

    try:
        side_a, side_b = Side.parse(a), Side.parse(b)
    except CompareError as exc:
        fail(exc)
    with store(database_url) as engine, session_scope(engine) as session:
        try:
            comparison = run_compare(session, side_a, side_b, rubric=rubric, judge_series=judge_series)
        except CompareError as exc:
            fail(f"{exc} (store: {store_label(database_url)})")
    safe = f"{side_a}-{side_b}".replace("/", "_")
    path = output or get_settings().data_dir / "reports" / f"compare-{safe}.{format.value}"
    written = write_comparison(comparison, path, format.value)
    for d in comparison.criteria:
        typer.echo(f"{d.criterion:<14} {d.estimate:+.2f} [{d.low:+.2f}, {d.high:+.2f}] over {d.n} pairs")
    typer.echo(
        f"{len(comparison.regressions)} regressed, {len(comparison.improvements)} improved, "
        f"{comparison.unchanged} unchanged, {len(comparison.unscored)} unscored on a side"
    )
    typer.echo(f"comparison: {written[0]}")
