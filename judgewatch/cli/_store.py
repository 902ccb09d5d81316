"""Opening the store from a command: migrate it, and say in one line (not a traceback) why it cannot be opened."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine

# Every command's `--database-url`.
DatabaseUrl = Annotated[str | None, typer.Option(help="SQLAlchemy URL of the store (default: the configured one)")]


class CannotRun(Exception):
    """The command cannot run at all; its message is printed as `error: ...` and the exit code is 2."""


def open_store(url: str | None = None) -> Engine:
    """The migrated store at `url` (default: the configured one), or CannotRun naming it without its password."""
    from sqlalchemy.engine import make_url  # SQLAlchemy only for the commands that open the store
    from sqlalchemy.exc import SQLAlchemyError

    from judgewatch.settings import get_settings
    from judgewatch.storage.db import make_engine
    from judgewatch.storage.migrations import migrate

    url = url or get_settings().effective_database_url
    try:
        engine = make_engine(url)
        migrate(engine)
    except (SQLAlchemyError, OSError) as exc:
        shown = make_url(url).render_as_string(hide_password=True)
        raise CannotRun(f"cannot open the store {shown}: {str(exc).splitlines()[0]}") from exc
    return engine


def open_store_or_exit(url: str | None = None) -> Engine:
    """`open_store` for commands that have nothing else to clean up: exit 2 with the message."""
    try:
        return open_store(url)
    except CannotRun as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
