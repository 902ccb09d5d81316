"""`judgewatch sample`: one run of the traffic-sampling flow, now, in this process (docs/sampling.md); prints what
it read, picked, quarantined, judged and routed; exit 2 with a one-line message when it could not run."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from judgewatch.cli._flow import echo_result, flow_result, prefect_defaults, run_or_exit
from judgewatch.cli._options import BorderlineShare, UnscoredShare
from judgewatch.cli._store import DatabaseUrl
from judgewatch.url_secrets import hide_params


def run_sampling(*, dry_run: bool, **params: Any) -> dict[str, Any]:
    """The flow's report as a dict; a dry run calls the flow's function without Prefect (nothing to record)."""
    prefect_defaults()
    from flows.sampling import traffic_sampling
    from judges.budget import prefect_api_url

    params = hide_params(params)  # flow parameters are stored by Prefect: never a credential
    if prefect_api_url() is None:  # no server, no workers: the partitions are read here, one after another
        params["partition_deployment"] = None
    if dry_run:
        return asyncio.run(traffic_sampling.fn(dry_run=True, **params))
    return flow_result(traffic_sampling(dry_run=False, **params), flow="sampling", result="a report")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _watermark(mark: dict[str, Any]) -> str:
    if files := mark.get("files"):
        return "; ".join(f"{path} up to row {m['rows']}" for path, m in files.items())
    if mark.get("last_id") is not None:
        return f"up to id {mark['last_id']}" + (f" at {mark['last_order']}" if mark.get("last_order") else "")
    return "nothing read yet"


def report_lines(r: dict[str, Any]) -> list[str]:
    """The report as the lines `sample` prints."""
    run = f" (run {r['run_id']})" if r.get("run_id") else ""
    head = "DRY RUN: nothing stored, nothing judged. " if r["dry_run"] else ""
    lines = [f"{head}source {r['source']}: {r['config']} -> {r['database']}{run}"]
    lines.append(f"read         {r['read']} rows, from {r['started_from']}")
    strata = ", ".join(
        f"{name} {s['picked']}/{s['eligible']} at rate {s['rate']:g}" for name, s in sorted(r["strata"].items())
    )
    eligible = sum(s["eligible"] for s in r["strata"].values())
    lines.append(f"picked       {r['picked']} of {eligible} eligible" + (f" ({strata})" if strata else ""))
    by = f" ({_counts(r['filtered_by'])})" if r["filtered_by"] else ""
    lines.append(f"filtered     {r['filtered']}{by}")
    lines.append(f"duplicates   {r['duplicate']}")
    by = f" ({_counts(r['quarantined_by'])})" if r["quarantined_by"] else ""
    lines.append(f"quarantined  {r['quarantined']}{by}")
    lines += [f"  {position}" for position in r["quarantine_positions"]]
    if r["quarantined"] > len(r["quarantine_positions"]):
        more = r["quarantined"] - len(r["quarantine_positions"])
        lines.append(f"  ... and {more} more" + ("" if r["dry_run"] else " (table quarantined_row)"))
    if r["pii"]:
        lines.append(f"pii redacted {_counts(r['pii'])}")
    if not r["dry_run"]:
        lines.append(f"stored       {r['stored']} interactions in {r['batches']} batch(es)")
        judged = r["judged"]
        reasons = f"; unscored: {_counts(r['unscored_reasons'])}" if r["unscored_reasons"] else ""
        status = f" ({_counts(judged)}{reasons})" if judged else ""
        lines.append(f"judged       {sum(judged.values())}{status}, {r['already_judged']} already judged")
        routed = r["routed"]
        uniform = routed.get("uniform", 0)
        targeted = {k: v for k, v in routed.items() if k != "uniform"}
        detail = f" ({_counts(targeted)})" if targeted else ""
        lines.append(
            f"routed       {sum(routed.values())} to review: uniform {uniform}, targeted {sum(targeted.values())}"
            f"{detail}; {r['review_items_created']} new review items"
        )
    lines += [f"partition    {label}: {what}" for label, what in r.get("partitions", {}).items()]
    if r["dry_run"]:
        lines.append(f"watermark    not saved (dry run): read {_watermark(r['watermark'])}")
    elif r["started_from"].startswith("--since"):
        lines.append("watermark    kept: a --since re-read never moves the stored watermark")
    else:
        state = "saved" if r["watermark_saved"] else "unchanged"
        lines.append(f"watermark    {state}: read {_watermark(r['watermark'])}")
    return lines


def sample(
    source: Annotated[Path, typer.Option(help="Traffic source config (YAML), e.g. examples/traffic/demo_source.yaml")],
    since: Annotated[
        str | None,
        typer.Option(
            help="Re-read a window instead of what is new: an ISO time (2024-06-03T12:00Z), an age (24h, 7d, 2w) "
            "or a watermark JSON; the stored watermark is left as it is"
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Read and sample only: store nothing, judge nothing")] = False,
    judge: Annotated[
        str | None,
        typer.Option(help="'reference' or judge URL(s), comma-separated (default: the configured judge)"),
    ] = None,
    database_url: DatabaseUrl = None,
    rubric: Annotated[str, typer.Option(help="Rubric name or YAML path")] = "answer_quality",
    review_share: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Uniform share of scored verdicts sent to review (default: settings; given, no review_budget)",
        ),
    ] = None,
    unscored_share: UnscoredShare = 0.0,
    borderline_share: BorderlineShare = 0.0,
    batch_size: Annotated[int, typer.Option(min=1, help="Picks stored, judged and checkpointed per batch")] = 500,
    partitions: Annotated[
        int,
        typer.Option(
            min=1,
            help="Split the source (its files, or a table's id/time ranges) into this many partitions, each a flow run "
            "any worker takes (with PREFECT_API_URL; else read here one after another), each with its own watermark",
        ),
    ] = 1,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """Sample a traffic source once: read what is new, pick, store, judge, route to review; print the counts."""
    params = {name: value for name, value in locals().items() if name != "json_output"} | {"source": str(source)}
    # one line, not a traceback: config errors, a busy source, a dead database
    report = run_or_exit(lambda: run_sampling(**params), what="sampling", failure=lambda exc: f"error: {exc}")
    echo_result(report, json_output=json_output, show=lambda r: typer.echo("\n".join(report_lines(r))))


def standalone_app() -> typer.Typer:
    """`sample` alone, as the real app registers it (for `python -m judgewatch.cli.sample_cmd` and tests)."""
    from judgewatch.cli import app_for

    return app_for("sample")


if __name__ == "__main__":
    logging.basicConfig(level=os.environ.get("JUDGEWATCH_LOG_LEVEL", "WARNING").upper())
    standalone_app()()
