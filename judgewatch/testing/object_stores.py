"""Local object stores for the `gs://` and `az://` source tests, on loopback: a GCS JSON API server
(gcp-storage-emulator, in this process) and Azurite's blob service (npm, a child process, installed on first use
into `.judgewatch/npm/` under a file lock). Without npm the test skips on a laptop and fails under CI."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.debian_tools import unavailable
from judgewatch.testing.processes import free_port, stop_process

NPM_PREFIX = REPO_ROOT / ".judgewatch" / "npm"
AZURITE = "azurite@3"
# Azurite's well-known development account (documented by Microsoft for the emulator; not a secret)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_blob() -> Path:
    """The `azurite-blob` executable, installed from npm into `.judgewatch/npm/` when missing."""
    binary = NPM_PREFIX / "node_modules" / ".bin" / "azurite-blob"
    with FileLock(str(NPM_PREFIX) + ".lock"):
        if binary.exists():
            return binary
        npm = shutil.which("npm")
        if npm is None:
            unavailable("npm is not installed (apt-get install -y npm): the az:// tests run Azurite from npm")
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", AZURITE]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0 or not binary.exists():
            unavailable(f"`{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return binary


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Azurite exited with {process.returncode}: {log.read_text(errors='replace')[-500:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"Azurite did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s (log: {log})")


@contextmanager
def azurite(workspace: Path) -> Iterator[str]:
    """Azurite's blob service on a free loopback port, in memory, telemetry off; yields its connection string."""
    port, log = free_port(), workspace / "azurite.log"
    # --skipApiVersionCheck: the Azure SDK on PyPI often speaks a newer API version than Azurite's latest release
    command = [str(azurite_blob()), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
               "--disableTelemetry", "--silent", "--loose", "--skipApiVersionCheck"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=workspace)
    try:
        _wait_listening(port, process, log)
        yield (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )
    finally:
        stop_process(process)


@contextmanager
def gcs_emulator(bucket: str) -> Iterator[str]:
    """gcp-storage-emulator in this process on a free loopback port, in memory, with `bucket`; yields its URL."""
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
