"""Child processes a test starts: a free loopback port to give them, and stopping them for sure."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from typing import Any


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any], *, group: bool = False, timeout_s: float = 30) -> None:
    """SIGTERM to the process (to its process group with `group`), SIGKILL if it lingers past `timeout_s`."""
    if process.poll() is not None:
        return
    kill = os.killpg if group else os.kill
    kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout_s)
