"""`judgewatch metrics serve` (a Prometheus endpoint over the store) and `judgewatch metrics show` (print once)."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store

app = typer.Typer(help="Prometheus metrics read from the store: serve them, or print them once.", no_args_is_help=True)


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port, printed).")] = 9464,
    min_interval: Annotated[
        float, typer.Option(help="Seconds a store reading is reused by later scrapes (bounds database load).")
    ] = 5.0,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve Prometheus text format at http://HOST:PORT/metrics until interrupted (Ctrl-C or SIGTERM)."""
    from judgewatch.metrics.server import start_server

    with store(database_url) as engine:
        try:
            server, _thread = start_server(engine, host=host, port=port, min_interval_s=min_interval)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        typer.echo(f"serving metrics on http://{host}:{server.server_port}/metrics", err=True)
        stop.wait()
        server.shutdown()


@app.command("show")
def show(database_url: DatabaseUrl = None) -> None:
    """Print what a scrape would return now (Prometheus text format)."""
    from prometheus_client import generate_latest

    from judgewatch.metrics.collector import make_registry

    with store(database_url) as engine:
        typer.echo(generate_latest(make_registry(engine, min_interval_s=0)).decode(), nl=False)
