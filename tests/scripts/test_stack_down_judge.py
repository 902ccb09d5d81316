"""`make stack-down` stops what stack-up started, and says so when a vLLM judge it did not start keeps running
(issue 35 §6.5: vLLM kept running after `make demo` and `make stack-down`, and nothing said so)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from judgewatch.settings import REPO_ROOT


def test_stack_down_names_make_judge_down_for_a_judge_it_did_not_start(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    site = tmp_path / "site"
    site.mkdir()
    (site / "health").write_text("ok")  # GET /health answers 200, as vLLM's does
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        judge_home = tmp_path / "judge"
        judge_home.mkdir()
        (judge_home / f"server-{port}.pid").write_text(str(server.pid))  # as `make judge-up` (or make demo) left it
        env = {**os.environ, "JUDGEWATCH_STACK_DIR": str(tmp_path / "stack"), "JUDGEWATCH_JUDGE_HOME": str(judge_home)}
        env["JUDGEWATCH_JUDGE_PORT"] = str(port)
        for _ in range(50):  # the stand-in judge is up once /health answers
            probe = subprocess.run(["curl", "-fsS", "-m", "1", f"http://127.0.0.1:{port}/health"], capture_output=True)
            if probe.returncode == 0:
                break
            time.sleep(0.1)
        (tmp_path / "stack").mkdir()
        down = subprocess.run(
            ["bash", "scripts/stack.sh", "down"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert down.returncode == 0, down.stderr
        assert f"the vLLM judge on port {port} was not started by stack-up and keeps running: make judge-down" in (
            down.stdout
        )
        assert server.poll() is None  # stack-down stops only what stack-up started
    finally:
        server.terminate()
        server.wait(timeout=10)
