"""`judgewatch review-ui` says where it serves once it answers, so a person knows the app is up."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.processes import free_port, stop_process


@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_review_ui_prints_its_url_and_ready_when_it_answers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(make_engine(url))
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "JUDGEWATCH_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgewatch", "review-ui", "--port", str(port), "--database-url", url],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
        line = ""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and "ready" not in line:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, "review-ui exited before it said it was ready"
        assert f"review app ready: http://127.0.0.1:{port}" in line
        # "ready" is printed only after the server answers
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200
    finally:
        stop_process(proc)
