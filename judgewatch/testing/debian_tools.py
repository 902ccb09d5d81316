"""Finding the tools some tests drive (Debian's promtool, prometheus; npm's Azurite): failing instead of skipping
under CI."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def debian_tool(name: str) -> str:
    """The path of `name`; when it is missing, the test is `unavailable` (scripts/run_tests.sh installs these tools)."""
    path = shutil.which(name)
    if path is not None:
        return path
    hint = "apt-get install -y prometheus" if name in ("promtool", "prometheus") else "apt-get install it"
    unavailable(f"{name} is not installed ({hint}; scripts/run_tests.sh does it)")


def unavailable(message: str) -> NoReturn:
    """Skip the test on a laptop, fail it when `CI` is set: a CI run never passes by skipping what it checks."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
