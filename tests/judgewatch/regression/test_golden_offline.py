"""Loading a golden set needs no network, whatever the environment says: HF `datasets` is kept from its S3
download-count ping by `judgewatch.regression.golden` itself, not by the test suite's HF_*_OFFLINE variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT

# Runs in a fresh interpreter: every connection and name lookup is refused and recorded, then one set loads.
_CHILD = """
import json, socket, sys
attempts = []

def refuse_connect(self, address):
    attempts.append(repr(address))
    raise OSError("network refused by the test")

def refuse_lookup(host, *args, **kwargs):
    attempts.append(repr(host))
    raise socket.gaierror("name lookup refused by the test")

socket.socket.connect = refuse_connect
socket.getaddrinfo = refuse_lookup
if sys.argv[2] == "datasets-imported-first":
    import datasets  # noqa: F401  (imported before judgewatch could set anything)
from judgewatch.regression.golden import load_golden_set

golden = load_golden_set(sys.argv[1], datasets_dir=sys.argv[3])
print(json.dumps({"items": len(golden.items), "attempts": attempts}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("order", ["golden-imports-datasets", "datasets-imported-first"])
def test_a_local_golden_set_loads_without_any_network_call(tmp_path: Path, order: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}  # no HF_*_OFFLINE from conftest
    env["HF_HOME"] = str(tmp_path / "hf")  # an empty cache: nothing already prepared to fall back on
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, "halueval_qa_mini", order, str(REPO_ROOT / "datasets")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["items"] > 0
    assert result["attempts"] == []
