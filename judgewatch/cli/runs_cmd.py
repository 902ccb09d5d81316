"""`judgewatch runs list`: the judging runs recorded in the store, newest first, with their status and counts (stale
running runs are marked `abandoned` first, docs/judging.md; a `paused` run says why and until when)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from judgewatch.cli._store import DatabaseUrl, store, store_label
from judgewatch.storage.run_states import RunKind, RunStatus

app = typer.Typer(help="Judging runs: list them with their status and counts.", no_args_is_help=True)

SHOWN_COUNTS = ("items", "judged_now", "reused", "already_judged", "quarantined", "paused_items")


@app.command("list")
def runs_list(
    kind: Annotated[RunKind | None, typer.Option(help="Only runs of this kind")] = None,
    status: Annotated[RunStatus | None, typer.Option(help="Only runs with this status")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many runs")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line instead of a table")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Recorded runs, newest first: id, kind, status, name, start, last heartbeat and counts."""
    from judgewatch.judging.costs import judge_costs
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.runs import expire_runs, list_runs

    with store(database_url) as engine:
        with session_scope(engine, write=True) as session:
            expire_runs(session=session, expiry_s=get_settings().run_expiry_s)
        with session_scope(engine) as session:
            runs = list_runs(
                session=session, kind=kind.value if kind else None, status=status.value if status else None, limit=limit
            )
            rows: list[dict[str, Any]] = [
                {
                    "id": run.id, "kind": run.kind, "status": run.status, "name": run.name,
                    "started_at": run.started_at.isoformat(timespec="seconds"),
                    "heartbeat_at": run.heartbeat_at.isoformat(timespec="seconds") if run.heartbeat_at else None,
                    "counts": {k: run.counts[k] for k in SHOWN_COUNTS if k in run.counts},
                    "note": run.counts.get("paused"),
                }
                for run in runs
            ]  # fmt: skip
            settings = get_settings()
            costs = judge_costs(
                session, by="run", prices=settings.judge_prices, currency=settings.cost_currency,
                run_ids=[row["id"] for row in rows],
            )  # fmt: skip
            for row in rows:
                cost = costs.get(row["id"])
                row["cost"] = cost.to_json() if cost else None
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    if not rows:
        typer.echo(f"no runs recorded in {store_label(database_url)}")
        return
    typer.echo(f"{'id':<32} {'kind':<10} {'status':<10} {'started':<25} {'last heartbeat':<25} name / counts")
    for row in rows:
        counts = " ".join(f"{k}={v}" for k, v in row["counts"].items())
        counts += f" cost={_cost_cell(row['cost'])}" if row["cost"] else ""
        typer.echo(
            f"{row['id']:<32} {row['kind']:<10} {row['status']:<10} {row['started_at']:<25} "
            f"{row['heartbeat_at'] or '-':<25} {row['name']} {counts}".rstrip()
        )
        if row["note"]:
            typer.echo(f"  {row['status']}: {row['note']}")


def _cost_cell(cost: dict[str, Any]) -> str:
    """`0.0012USD`, or `unpriced` when tokens were spent on models without a price (never a silent 0)."""
    if cost["unpriced_models"]:
        return "unpriced(" + ",".join(sorted(cost["unpriced_models"])) + ")"
    return f"{cost['amount']:.4f}{cost['currency']}"
