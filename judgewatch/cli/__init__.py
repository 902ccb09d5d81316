"""The `judgewatch` command line: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="judgewatch",
    help="Continuous quality evaluation for LLM applications: a measured judge, stored verdicts, release gates.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


_registered = False


def get_app() -> typer.Typer:
    """The app with every command group registered (imports are deferred so `--help` stays fast)."""
    global _registered
    if _registered:
        return app
    _registered = True
    from judgewatch.cli import (
        dataset_cmd,
        db_cmd,
        demo_cmd,
        ingest_cmd,
        judge_cmd,
        judges_cmd,
        metrics_cmd,
        regress_cmd,
        report_cmd,
        review_cmd,
        rubric_cmd,
        runs_cmd,
        sample_cmd,
        workbench_cmd,
    )

    app.command("demo")(demo_cmd.demo)
    app.command("judge")(judge_cmd.judge)
    app.add_typer(judges_cmd.app, name="judges", help="Judges: measure their trust, list what was measured.")
    app.add_typer(rubric_cmd.app, name="rubric")
    app.add_typer(db_cmd.app, name="db")
    app.add_typer(dataset_cmd.app, name="dataset", help="Golden regression sets: check and list them.")
    app.command("regress")(regress_cmd.regress)
    app.add_typer(regress_cmd.baseline_app, name="baseline")
    app.add_typer(review_cmd.reviewer_app, name="reviewer")
    app.add_typer(review_cmd.review_app, name="review")
    app.command("review-ui")(review_cmd.review_ui)
    app.command("sample")(sample_cmd.sample)
    app.add_typer(runs_cmd.app, name="runs", help="Judging runs: list them with their status and counts.")
    app.add_typer(report_cmd.app, name="report")
    app.command("calibrate")(report_cmd.calibrate)
    app.add_typer(metrics_cmd.app, name="metrics")
    app.command("compare")(workbench_cmd.compare)
    app.command("export")(workbench_cmd.export)
    app.add_typer(ingest_cmd.app, name="ingest")
    return app


def main() -> None:
    from judgewatch.logs import configure_logging

    try:
        configure_logging()  # JUDGEWATCH_LOG_LEVEL, JUDGEWATCH_LOG_FORMAT=text|json; URL passwords masked
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    get_app()()
