"""The OTLP receiver on loopback in a thread, for tests and the ingest benchmark."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn

from judgewatch.ingest.server import create_app
from judgewatch.ingest.store import SpanStore
from judgewatch.testing.processes import free_port


@contextlib.contextmanager
def run_receiver_in_thread(store: SpanStore, token: str) -> Iterator[str]:
    """Serve the receiver on 127.0.0.1 until the block exits; yields its base URL (POST {url}/v1/traces)."""
    port = free_port()
    config = uvicorn.Config(create_app(store, token), host="127.0.0.1", port=port, log_level="warning",
                            access_log=False, lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="judgewatch-ingest", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the OTLP receiver did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
