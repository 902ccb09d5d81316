"""An ASGI app on loopback in a thread, for tests and the ingest benchmark: the OTLP receiver, a webhook receiver."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from judgewatch.ingest.server import create_app
from judgewatch.ingest.store import SpanStore
from judgewatch.testing.processes import free_port


@contextlib.contextmanager
def serve_in_thread(app: Any, name: str) -> Iterator[str]:
    """Serve the ASGI `app` on 127.0.0.1 at a free port until the block exits; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"judgewatch-{name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the {name} server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def run_receiver_in_thread(store: SpanStore, token: str) -> Iterator[str]:
    """The OTLP receiver on 127.0.0.1; yields its base URL (POST {url}/v1/traces)."""
    with serve_in_thread(create_app(store, token), "ingest") as url:
        yield url
