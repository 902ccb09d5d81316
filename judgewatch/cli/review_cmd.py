"""`judgewatch reviewer ...` (accounts), `judgewatch review ...` (route, replay, status) and `review-ui`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judgewatch.cli._options import BorderlineShare, UnscoredShare
from judgewatch.cli._store import DatabaseUrl, fail, open_store_or_exit, store

if TYPE_CHECKING:
    from sqlmodel import Session


reviewer_app = typer.Typer(help="Reviewer accounts for the review app.", no_args_is_help=True)
review_app = typer.Typer(
    help="Human review: route verdicts to people, replay labels, show the queue.", no_args_is_help=True
)
ROLE_HELP = (
    "reviewer (labels the queue), adjudicator (also settles disagreements and sees Tiers, Calibration, Judges) or "
    "owner (everything). Default: reviewer."
)


@reviewer_app.command("add")
def reviewer_add(
    name: Annotated[str, typer.Argument(help="Login name.")],
    password: Annotated[
        str | None,
        typer.Option(
            envvar="JUDGEWATCH_REVIEWER_PASSWORD",
            help="Password (else $JUDGEWATCH_REVIEWER_PASSWORD, else asked for, hidden).",
        ),
    ] = None,
    role: Annotated[str | None, typer.Option(help=ROLE_HELP)] = None,
    adjudicator: Annotated[bool, typer.Option(help="Same as --role adjudicator (kept for old scripts).")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Create a reviewer account with a role (the password is stored as a salted scrypt hash)."""
    from judgewatch.review.accounts import add_reviewer

    if role is not None and adjudicator and role != "adjudicator":
        fail(f"--adjudicator contradicts --role {role}", 1)
    chosen = role or ("adjudicator" if adjudicator else "reviewer")
    if password is None:
        password = typer.prompt(f"password for {name}", hide_input=True, confirmation_prompt=True)
    secret = password
    _change_account(
        database_url,
        lambda session: add_reviewer(session=session, name=name, password=secret, role=chosen),
        f"reviewer {name} added (role: {chosen})",
    )


@reviewer_app.command("role")
def reviewer_role(
    name: Annotated[str, typer.Argument(help="Login name.")],
    role: Annotated[str, typer.Argument(help="reviewer, adjudicator or owner.")],
    database_url: DatabaseUrl = None,
) -> None:
    """Change an account's role."""
    from judgewatch.review.accounts import set_role

    _change_account(
        database_url, lambda session: set_role(session=session, name=name, role=role), f"reviewer {name} is now {role}"
    )


def _set_active(name: str, active: bool, database_url: str | None) -> None:
    from judgewatch.review.accounts import set_active

    _change_account(
        database_url,
        lambda session: set_active(session=session, name=name, active=active),
        f"reviewer {name} {'enabled' if active else 'disabled'}",
    )


def _change_account(database_url: str | None, change: Callable[[Session], object], done: str) -> None:
    """Run one account change in a transaction; an AccountError becomes a one-line error and exit 1."""
    from judgewatch.review.accounts import AccountError
    from judgewatch.storage.db import session_scope

    try:
        with store(database_url) as engine, session_scope(engine) as session:
            change(session)
    except AccountError as exc:
        fail(exc, 1)
    typer.echo(done)


@reviewer_app.command("disable")
def reviewer_disable(name: str, database_url: DatabaseUrl = None) -> None:
    """Disable an account: it can no longer log in or act, and its open sessions end (its labels stay)."""
    _set_active(name, False, database_url)


@reviewer_app.command("enable")
def reviewer_enable(name: str, database_url: DatabaseUrl = None) -> None:
    """Re-enable a disabled account."""
    _set_active(name, True, database_url)


@reviewer_app.command("list")
def reviewer_list(database_url: DatabaseUrl = None) -> None:
    """Accounts with their status and how many items each has labeled."""
    from sqlalchemy import func, select

    from judgewatch.review.accounts import list_reviewers
    from judgewatch.storage.db import session_scope, table
    from judgewatch.storage.review import ReviewLabel

    labels = table(ReviewLabel)
    with session_scope(open_store_or_exit(database_url)) as session:
        rows = session.execute(
            select(labels.c.reviewer, func.count()).where(labels.c.skipped_reason.is_(None)).group_by(labels.c.reviewer)
        ).tuples()
        counts = dict(rows.all())
        for r in list_reviewers(session=session):
            status = "active" if r.active else "disabled"
            typer.echo(f"{r.name:<24} {status:<9} {r.role:<12} {counts.get(r.name, 0):>6} labels")


@review_app.command("route")
def route(
    run_id: Annotated[str | None, typer.Option(help="Only this run's verdicts (default: all stored).")] = None,
    share: Annotated[
        float | None,
        typer.Option(help="Uniform share of scored verdicts (default: settings; given, no review_budget)."),
    ] = None,
    double_share: Annotated[float | None, typer.Option(help="Share of routed items labeled twice.")] = None,
    unscored_share: UnscoredShare = 0.0,
    borderline_share: BorderlineShare = 0.0,
    database_url: DatabaseUrl = None,
) -> None:
    """Turn stored verdicts into review items (deterministic: routing again creates nothing new)."""
    from judgewatch.review.routing import RoutingPolicy, route_verdicts
    from judgewatch.review.rubrics import RubricResolver
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import session_scope

    settings = get_settings()
    try:
        shares = {"unscored_share": unscored_share, "borderline_share": borderline_share}
        policy = RoutingPolicy.from_settings(settings, review_share=share, double_label_share=double_share, **shares)
    except ValueError as exc:
        fail(exc, 1)
    with session_scope(open_store_or_exit(database_url)) as session:
        report = route_verdicts(
            session=session, policy=policy, rubrics=RubricResolver(settings.rubrics_dir), run_id=run_id
        )
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(report.by_reason.items())) or "none"
    typer.echo(
        f"{report.considered} verdicts considered, {report.routed} routed ({reasons}), {report.created} new items"
    )


@review_app.command("replay")
def replay(
    labels: Annotated[
        Path | None, typer.Option(help="JSONL of {item_id|interaction_id, reviewer, scores, ...}.")
    ] = None,
    pandalm: Annotated[Path | None, typer.Option(help="PandaLM folder: replay its 3 human annotators.")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N PandaLM pairs.")] = None,
    judge: Annotated[str, typer.Option(help="PandaLM baseline whose verdict items show.")] = "gpt-3.5-turbo",
    database_url: DatabaseUrl = None,
) -> None:
    """Submit existing labels through the review service (same checks as the app); exit 1 if any was refused."""
    from judgewatch.review.queue import ReviewQueue
    from judgewatch.review.replay import read_label_rows, replay_labels, replay_pandalm
    from judgewatch.settings import get_settings

    if (labels is None) == (pandalm is None):
        fail("give exactly one of --labels FILE or --pandalm DIR", 1)
    settings = get_settings()
    queue = ReviewQueue(
        open_store_or_exit(database_url), lease_seconds=settings.lease_seconds, rubrics_dir=settings.rubrics_dir
    )
    try:
        if labels is not None:
            report = replay_labels(queue, read_label_rows(labels))
        else:
            assert pandalm is not None
            report = replay_pandalm(queue, pandalm, limit=limit, judge=judge)
    except (OSError, ValueError) as exc:
        fail(exc, 1)
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items()))
    typer.echo(f"{report.rows} rows: {outcomes}")
    for problem in report.problems:
        typer.echo(f"  {problem}", err=True)
    if report.outcomes.get("refused"):
        raise typer.Exit(1)


@review_app.command("status")
def status(database_url: DatabaseUrl = None) -> None:
    """Review items by state and pick reason, and labels stored."""
    from sqlalchemy import func, select

    from judgewatch.storage.db import session_scope, table
    from judgewatch.storage.review import ReviewItem, ReviewLabel

    items, labels = table(ReviewItem), table(ReviewLabel)
    with session_scope(open_store_or_exit(database_url)) as session:
        states = session.execute(select(items.c.state, func.count()).group_by(items.c.state)).tuples()
        reasons = session.execute(select(items.c.pick_reason, func.count()).group_by(items.c.pick_reason)).tuples()
        by_state, by_reason = dict(states.all()), dict(reasons.all())
        n_labels = session.execute(select(func.count()).select_from(labels)).scalar_one()
    typer.echo(f"review items: {sum(by_state.values())}")
    for state_name in ("available", "leased", "done", "adjudication", "flagged"):
        typer.echo(f"  {state_name:<13} {by_state.get(state_name, 0)}")
    typer.echo("picked: " + (", ".join(f"{k} {v}" for k, v in sorted(by_reason.items())) or "none"))
    typer.echo(f"labels: {n_labels}")


def review_ui(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 7860,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the review app (login with `judgewatch reviewer add` accounts)."""
    from judgewatch.settings import get_settings
    from review_ui.app import serve
    from review_ui.origins import OriginPolicy

    settings = get_settings()
    try:
        OriginPolicy.of(settings.review_allowed_origins)
    except ValueError as exc:
        fail(exc)
    app = serve(open_store_or_exit(database_url), settings, host=host, port=port, block=False)
    typer.echo(f"review app ready: http://{host}:{port} (Ctrl+C stops it)")
    app.block_thread()
