"""Running one Prefect flow from a command, in this process: quiet Prefect, a dict result, and anything the flow
raises as exit 2 with one line on stderr (never a traceback, never an ambiguous exit code)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

import typer

logger = logging.getLogger(__name__)

# The ephemeral server migrates a fresh database on first use: slow on a busy 2-core machine, hence the timeout.
PREFECT_QUIET_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def prefect_defaults() -> None:
    """Quiet, telemetry-free Prefect unless the operator said otherwise (before Prefect is imported)."""
    for key, value in PREFECT_QUIET_DEFAULTS.items():
        os.environ.setdefault(key, value)


def flow_result(run: Coroutine[Any, Any, Any], *, flow: str, result: str) -> dict[str, Any]:
    """The dict the flow coroutine `run` returns; RuntimeError naming the `flow` when it returns anything else."""
    returned = asyncio.run(run)
    if not isinstance(returned, dict):
        raise RuntimeError(f"the {flow} flow returned {type(returned).__name__}, not {result}")
    return returned


def run_or_exit(run: Callable[[], dict[str, Any]], *, what: str, failure: Callable[[Exception], str]) -> dict[str, Any]:
    """`run()`'s result; when it raises, `failure(exc)` on stderr and exit 2 (the traceback only in debug logs). The
    settings are read first: an unreadable one is the entry point's one-line error before any flow starts."""
    from judgewatch.settings import get_settings

    get_settings()
    try:
        return run()
    except Exception as exc:
        logger.debug("%s failed", what, exc_info=True)
        typer.echo(failure(exc), err=True)
        raise typer.Exit(2) from exc


def echo_result(result: dict[str, Any], *, json_output: bool, show: Callable[[dict[str, Any]], None]) -> None:
    """The result as indented JSON, or as `show` prints it for people."""
    if json_output:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        show(result)
