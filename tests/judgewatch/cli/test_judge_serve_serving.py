"""`scripts/judge_serve.sh` writes the dtype it chose beside its pid file, in the form the settings read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT, Settings

SCRIPT = REPO_ROOT / "scripts" / "judge_serve.sh"


def run(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "JUDGEWATCH_JUDGE_HOME": str(home),
        "JUDGEWATCH_JUDGE_PORT": "1",  # nothing answers there: `spawn` does not wait for health
        "JUDGEWATCH_JUDGE_DTYPE": "float32",
    }
    return subprocess.run(["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_spawn_writes_the_chosen_dtype_and_stop_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models" / "SmolLM2-135M-Instruct").mkdir(parents=True)
    (tmp_path / "models" / "SmolLM2-135M-Instruct" / ".complete").touch()
    fake_python = tmp_path / "venv" / "bin" / "python"  # stands in for vLLM: a process that lives until stopped
    fake_python.parent.mkdir(parents=True)
    fake_python.write_text("#!/bin/sh\nexec sleep 60\n")
    fake_python.chmod(0o755)
    spawned = run("spawn", tmp_path)
    try:
        assert spawned.returncode == 0, spawned.stderr
        serving = tmp_path / "server-1.serving.json"
        assert json.loads(serving.read_text()) == {"dtype": "float32"}
        assert f"export JUDGEWATCH_JUDGE_SERVING='{serving.read_text().strip()}'" in spawned.stdout
        monkeypatch.setenv("JUDGEWATCH_JUDGE_SERVING", serving.read_text())
        assert Settings().judge_serving == {"dtype": "float32"}
    finally:
        pid = int((tmp_path / "server-1.pid").read_text())
        stopped = run("stop", tmp_path)
    assert stopped.returncode == 0 and not serving.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
