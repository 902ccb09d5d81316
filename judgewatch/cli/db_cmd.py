"""`judgewatch db create|migrate`: the store's database and schema, for operators and `make stack-up`."""

from __future__ import annotations

import typer

from judgewatch.cli._store import DatabaseUrl, fail

app = typer.Typer(help="The judgewatch store: create its database, bring its schema up to date.", no_args_is_help=True)


@app.command("create")
def create_cmd(database_url: DatabaseUrl = None) -> None:
    """Create the PostgreSQL database named in the URL if it does not exist (SQLite files create themselves)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from judgewatch.settings import get_settings

    url = make_url(database_url or get_settings().effective_database_url)
    if not url.drivername.startswith("postgresql"):
        typer.echo(f"{url.render_as_string(hide_password=True)}: not PostgreSQL, nothing to create")
        return
    name = url.database
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
            if not exists:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        fail(f"cannot create database {name!r} on {url.host}:{url.port}: {exc}")
    finally:
        admin.dispose()
    typer.echo(f"database {name}: {'exists' if exists else 'created'}")


@app.command("migrate")
def migrate_cmd(database_url: DatabaseUrl = None) -> None:
    """Apply the migrations the store has not recorded yet; prints what was applied."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from judgewatch.settings import get_settings
    from judgewatch.storage.db import make_engine
    from judgewatch.storage.migrations import migrate

    url = database_url or get_settings().effective_database_url
    engine = make_engine(url)
    try:
        applied = migrate(engine)
    except SQLAlchemyError as exc:
        shown = make_url(url).render_as_string(hide_password=True)
        fail(f"cannot migrate the store {shown}: {str(exc).splitlines()[0]}")
    finally:
        engine.dispose()
    typer.echo(f"migrations applied: {', '.join(applied) if applied else 'none (up to date)'}")
