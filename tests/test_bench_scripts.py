"""Every benchmark starts as `make bench` runs it (`python bench/NAME.py`): a bench whose imports only work from
another folder (`from bench.x import ...` without the repository root on the path) fails here, not in a
release's measurement."""

from __future__ import annotations

import subprocess
import sys

import pytest

from judgewatch.settings import REPO_ROOT

SCRIPTS = sorted(p for p in (REPO_ROOT / "bench").glob("*.py") if "__main__" in p.read_text(encoding="utf-8"))


@pytest.mark.slow  # imports numpy, pandas and the judges: seconds each
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_benchmark_starts_from_the_command_line(script, tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
