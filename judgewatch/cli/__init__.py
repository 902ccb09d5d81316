"""The `judgewatch` command line: one Typer app; each command group lives in its own module, imported only when
its command runs, so `--help` and argument errors answer at once (tests/judgewatch/cli/test_cli_imports.py)."""

from __future__ import annotations

import functools
import gc
import importlib
import sys
from collections.abc import Collection
from typing import Annotated, Any

import typer

import judgewatch


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"judgewatch {judgewatch.__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Continuous quality evaluation for LLM applications: a measured judge, stored verdicts, release gates."""


def _new_app() -> typer.Typer:
    """The root app without commands."""
    new = typer.Typer(  # its help: `_root`'s docstring
        name="judgewatch", no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
        rich_markup_mode=None,  # click's plain help: whole option names at any width, and no rich import
    )  # fmt: skip
    new.callback()(_root)
    return new


app = _new_app()


# Every command and group, in `--help`'s order: its name and where it lives (module in judgewatch.cli, attribute).
# A Typer attribute is a group (`add_typer`), a function a command.
_COMMANDS = {
    "demo": "demo_cmd.demo", "judge": "judge_cmd.judge", "judges": "judges_cmd.app", "rubric": "rubric_cmd.app",
    "db": "db_cmd.app", "dataset": "dataset_cmd.app", "regress": "regress_cmd.regress", "plan": "plan_cmd.app",
    "baseline": "regress_cmd.baseline_app", "reviewer": "review_cmd.reviewer_app", "review": "review_cmd.review_app",
    "review-ui": "review_cmd.review_ui", "sample": "sample_cmd.sample", "runs": "runs_cmd.app",
    "report": "report_cmd.app", "calibrate": "report_cmd.calibrate", "metrics": "metrics_cmd.app",
    "alerts": "alerts_cmd.app", "compare": "workbench_cmd.compare", "export": "workbench_cmd.export",
    "ingest": "ingest_cmd.app",
}  # fmt: skip
COMMAND_NAMES = frozenset(_COMMANDS)


def _register(target: typer.Typer, names: Collection[str]) -> None:
    """Register the named commands and groups on `target`, importing only their modules."""
    for name, where in _COMMANDS.items():
        if name not in names:
            continue
        module_name, attribute = where.split(".")
        obj = getattr(importlib.import_module(f"judgewatch.cli.{module_name}"), attribute)
        if isinstance(obj, typer.Typer):
            target.add_typer(obj, name=name)
        else:
            target.command(name)(obj)


@functools.cache
def get_app() -> typer.Typer:
    """The app with every command group registered (imports are deferred so `--help` stays fast)."""
    _register(app, COMMAND_NAMES)
    return app


def app_for(name: str) -> typer.Typer:
    """A new app with only the command or group `name`: `judgewatch judge ...` imports no other command's
    module (every command registered cost 0.2 s of a 6 s run; bench/README.md). The same root callback, so
    `judgewatch NAME ...` parses, helps and errs as with every command registered."""
    single = _new_app()
    _register(single, {name})
    return single


# Typer shows a value's Python type (`<str>`, `<list[str]>`, `<float range>`); the help says what to type.
_METAVARS = {"str": "TEXT", "path": "PATH", "int": "INTEGER", "float": "NUMBER", "datetime": "DATETIME"}


def readable_metavar(typer_type: str) -> str:
    """`<list[str]>` -> TEXT, `<int range>` -> INTEGER, `<md|html>` -> [md|html]: the value a user types."""
    label = typer_type.strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    label = label.removesuffix(" range")
    if "|" in label:
        return f"[{label}]"
    return _METAVARS.get(label, label.upper())


def _set_metavars(command: Any, ctx: Any) -> None:
    # Typer's own (vendored) click classes: duck-typed, as `typer.main.get_command` builds them.
    for param in command.params:
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        if param.metavar is not None or not hasattr(param, "display_type"):
            continue
        if getattr(param, "param_type_name", "") == "argument":
            param.metavar = (param.name or "value").upper()  # its name says what to type: PATH, NAME
            param.display_type_rich = lambda **_: None  # no Python type after the name (typer passes ctx=ctx)
        else:
            param.metavar = readable_metavar(param.display_type(ctx))
    for name, sub in getattr(command, "commands", {}).items():
        _set_metavars(sub, sub.context_class(sub, parent=ctx, info_name=name))


def get_command(name: str | None = None) -> Any:
    """The command behind the app, with readable metavars; with `name` (a command or group), only that one."""
    command = typer.main.get_command(app_for(name) if name in COMMAND_NAMES else get_app())
    _set_metavars(command, command.context_class(command, info_name="judgewatch"))
    return command


def main() -> None:
    from judgewatch.logs import configure_logging

    try:
        configure_logging()  # JUDGEWATCH_LOG_LEVEL, JUDGEWATCH_LOG_FORMAT=text|json; URL passwords masked
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    try:
        get_command(sys.argv[1] if len(sys.argv) > 1 else None)(prog_name="judgewatch")
    except ValueError as exc:
        # an unreadable setting: exit 2 ("could not evaluate"), never 1, which a release gate reads as regressed.
        # Settings never imported (`--help`) cannot have raised it: the module is looked up, not imported here.
        settings = sys.modules.get("judgewatch.settings")
        if settings is None or not isinstance(exc, settings.SettingsInvalid):
            raise
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    finally:
        # The process ends here: what is left (the imported modules, mostly) is freed without the collector
        # walking it first. The walk cost 0.27 s of CPU at the exit of `judge` (bench/README.md, issue 32).
        gc.freeze()
