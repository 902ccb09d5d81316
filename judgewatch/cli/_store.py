"""Opening the store from a command: migrate it, and say in one line (not a traceback) why it cannot be opened.
Messages name the store they read (`store_label`): a shell without the stack's env file reads the default SQLite
file, and an empty result must say so rather than look like an empty stack."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine

# Every command's `--database-url`.
DatabaseUrl = Annotated[str | None, typer.Option(help="SQLAlchemy URL of the store (default: the configured one)")]


class CannotRun(Exception):
    """The command cannot run at all; its message is printed as `error: ...` and the exit code is 2."""


def fail(message: object, code: int = 2) -> NoReturn:
    """`error: <message>` on stderr, then exit `code` (2: the command could not run)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def stack_env_file() -> Path:
    """The env file `make stack-up` writes (scripts/stack.sh: `$JUDGEWATCH_STACK_DIR/env`), shown relative to the
    working directory when it lies below it."""
    from judgewatch.settings import REPO_ROOT

    path = Path(os.environ.get("JUDGEWATCH_STACK_DIR") or REPO_ROOT / ".judgewatch" / "stack") / "env"
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def store_label(url: str | None = None) -> str:
    """The store a command read, for its messages: the URL with its password masked; on the default SQLite file
    (no --database-url, no JUDGEWATCH_DATABASE_URL), how to read another one, the stack's env file first."""
    from judgewatch.redact import mask_url
    from judgewatch.settings import get_settings

    settings = get_settings()
    url = url or settings.effective_database_url
    shown = mask_url(url)
    if settings.database_url or url != settings.effective_database_url:
        return shown
    env = stack_env_file()
    if env.exists():
        return f"{shown} (the default store; for the stack's: `source {env}`, or --database-url)"
    return f"{shown} (the default store; set JUDGEWATCH_DATABASE_URL or --database-url for another, e.g. the stack's)"


def open_store(url: str | None = None) -> Engine:
    """The migrated store at `url` (default: the configured one), or CannotRun naming it without its password."""
    from sqlalchemy.exc import SQLAlchemyError  # SQLAlchemy only for the commands that open the store

    from judgewatch.settings import get_settings
    from judgewatch.storage.db import make_engine
    from judgewatch.storage.migrations import migrate

    try:
        engine = make_engine(url or get_settings().effective_database_url)
        migrate(engine)
    except (SQLAlchemyError, OSError) as exc:
        raise CannotRun(f"cannot open the store {store_label(url)}: {str(exc).splitlines()[0]}") from exc
    return engine


def open_store_or_exit(url: str | None = None) -> Engine:
    """`open_store` for commands that have nothing else to clean up: exit 2 with the message."""
    try:
        return open_store(url)
    except CannotRun as exc:
        fail(exc)


@contextmanager
def store(url: str | None = None) -> Iterator[Engine]:
    """`open_store_or_exit`, the engine disposed of when the block ends."""
    engine = open_store_or_exit(url)
    try:
        yield engine
    finally:
        engine.dispose()
