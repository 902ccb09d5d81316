"""`judgewatch alerts check`: check the alert rules once, as the flows do after each run (for a cron job)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store

app = typer.Typer(help="Alert rules: check them, send what fired or resolved to their webhooks.", no_args_is_help=True)

STATE_WORDS = {True: "FIRING", False: "ok", None: "not evaluated"}


@app.command("check")
def check(
    rules: Annotated[
        Path | None, typer.Option(help="Alert rules YAML file (default: JUDGEWATCH_ALERT_RULES_FILE)")
    ] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Check every rule now: open and send what fired, resolve what cleared, retry failed deliveries.

    Exit 0 when every event was delivered, 1 when a delivery failed (stored; retried by the next check), 2 when
    the rules cannot be read."""
    from judgewatch.alerts.check import check_alerts
    from judgewatch.alerts.rules import AlertRulesError, load_rules
    from judgewatch.settings import get_settings

    settings = get_settings()
    path = rules or settings.alert_rules_file
    if path is None:
        fail("no alert rules: pass --rules FILE or set JUDGEWATCH_ALERT_RULES_FILE")
    try:
        document = load_rules(path)
    except AlertRulesError as exc:
        fail(exc)
    with store(database_url) as engine:
        report = check_alerts(engine, document, settings)
    for rule, observed in report.observed.items():
        if not observed:
            typer.echo(f"{rule}: nothing to observe")
        for obs in observed:
            typer.echo(f"{rule}: {STATE_WORDS[obs.firing]}: {obs.text}")
    for sent in report.sent:
        outcome = f"not sent: {sent.error}" if sent.error else "sent"
        typer.echo(f"{sent.rule} {sent.event} ({sent.subject}) to webhook {sent.webhook}: {outcome}")
    if report.failed:
        raise typer.Exit(1)
