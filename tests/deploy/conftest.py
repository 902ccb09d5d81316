"""Debian's prometheus package for the deploy tests: `promtool` and `prometheus` on PATH.

`scripts/run_tests.sh` installs the package when missing. Without it these tests skip on a laptop, but
FAIL when `CI` is set: a CI run must never pass by skipping the checks of the alert rules and dashboard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.debian_tools import debian_tool

DEPLOY = REPO_ROOT / "deploy"


@pytest.fixture
def promtool() -> str:
    return debian_tool("promtool")


@pytest.fixture
def prometheus_bin() -> str:
    return debian_tool("prometheus")


@pytest.fixture
def deploy_dir() -> Path:
    return DEPLOY
