"""`judgewatch metrics show|serve`: the store's metrics once, or served; a store that cannot open is exit 2."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.metrics_store import seed_store


def _store(tmp_path: Path, verdicts: int = 60) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    migrate(engine)
    seed_store(engine, verdicts=verdicts)
    engine.dispose()
    return url


def test_show_prints_the_exposition_of_the_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(get_app(), ["metrics", "show", "--database-url", _store(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "# TYPE judgewatch_verdicts_total counter" in result.output
    assert 'judgewatch_gate_decisions_total{exit_code="2"} 1.0' in result.output
    assert "judgewatch_store_up 1.0" in result.output


def test_a_store_that_cannot_open_exits_2_without_its_password() -> None:
    url = "postgresql://jw:hunter2@127.0.0.1:1/nowhere"
    result = CliRunner().invoke(get_app(), ["metrics", "show", "--database-url", url])
    assert result.exit_code == 2
    assert "cannot open the store" in result.output and "hunter2" not in result.output


def test_serve_answers_on_its_port_and_stops_on_sigterm(tmp_path: Path) -> None:
    url = _store(tmp_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgewatch", "metrics", "serve", "--port", str(port), "--database-url", url],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        body = ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not body:
            assert proc.poll() is None
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
                body = response.text if response.status_code == 200 else ""
            except httpx.TransportError:
                time.sleep(0.3)
        assert "judgewatch_verdicts_total" in body
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert f"serving metrics on http://127.0.0.1:{port}/metrics" in (proc.stderr.read() if proc.stderr else "")
