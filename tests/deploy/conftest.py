"""Debian's prometheus package for the deploy tests: `promtool` and `prometheus` on PATH.

`scripts/run_tests.sh` installs the package when missing. Without it these tests skip on a laptop, but
FAIL when `CI` is set: a CI run must never pass by skipping the checks of the alert rules and dashboard.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"


def debian_tool(name: str) -> str:
    """The path of `name` from Debian's prometheus package; fail under CI, skip elsewhere, when missing."""
    path = shutil.which(name)
    if path is not None:
        return path
    message = f"{name} is not installed (apt-get install -y prometheus; scripts/run_tests.sh does it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def promtool() -> str:
    return debian_tool("promtool")


@pytest.fixture
def prometheus_bin() -> str:
    return debian_tool("prometheus")


@pytest.fixture
def deploy_dir() -> Path:
    return DEPLOY
