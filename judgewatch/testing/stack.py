"""What the stack tests share: their ports, a git repository the workers clone, dropping the databases a test
created, and starting a deployment's flow run over the REST API and waiting for its end."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.processes import free_port


def stack_ports() -> tuple[int, int]:
    """The stack's Prefect server and review UI ports: JUDGEWATCH_TEST_PORTS="a,b" when set (a range of one's
    own on a shared machine), else two free ones."""
    given = os.environ.get("JUDGEWATCH_TEST_PORTS")
    if not given:
        return free_port(), free_port()
    first, second = (int(p) for p in given.split(","))
    return first, second


def source_repository(dest: Path) -> Path:
    """A git repository (branch main) holding the checkout's tracked and new files, as they are now: what the
    workers' git_clone pull step clones (a detached HEAD names no branch to clone)."""
    listed = subprocess.check_output(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT, stderr=subprocess.PIPE
    )
    for name in filter(None, listed.decode().split("\0")):
        src = REPO_ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(dest)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "judgewatch under test"], check=True)
    return dest


def admin_sql(database_url: str, statement: str) -> None:
    """Run `statement` outside a transaction in the server's `postgres` database (CREATE/DROP DATABASE)."""
    engine = create_engine(database_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


FINAL_STATES = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def run_via_rest(api: str, deployment: str, parameters: dict[str, Any]) -> str:
    """POST /deployments/{id}/create_flow_run: what a pipeline without the Prefect CLI does; the flow run id."""
    found = httpx.get(f"{api}/deployments/name/{deployment}", timeout=30).raise_for_status().json()
    created = httpx.post(
        f"{api}/deployments/{found['id']}/create_flow_run", json={"parameters": parameters}, timeout=30
    ).raise_for_status()
    return str(created.json()["id"])


def wait_final(api: str, run_id: str, timeout_s: float = 600) -> dict[str, Any]:
    """The flow run once it is in a final state; TimeoutError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run: dict[str, Any] = httpx.get(f"{api}/flow_runs/{run_id}", timeout=30).raise_for_status().json()
        if run["state"] and run["state"]["type"] in FINAL_STATES:
            return run
        time.sleep(2)
    raise TimeoutError(f"flow run {run_id} not finished after {timeout_s} s")
