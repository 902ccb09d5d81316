"""The `judgewatch` command line: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import logging
import os

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
    from judgewatch.cli import rubric_cmd

    app.add_typer(rubric_cmd.app, name="rubric")
    try:
        from judgewatch.cli import judge_cmd

        app.command("judge")(judge_cmd.judge)
    except ImportError:  # pragma: no cover - during bring-up only
        pass
    try:
        from judgewatch.cli import dataset_cmd

        app.add_typer(dataset_cmd.app, name="dataset", help="Golden regression sets: check and list them.")
    except ImportError:  # pragma: no cover - during bring-up only
        pass
    return app


def main() -> None:
    logging.basicConfig(
        level=os.environ.get("JUDGEWATCH_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    get_app()()
