"""Fixtures of the flow tests: a temporary Prefect server per module and a SQLite file store per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server for the flows one test module runs for real."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jw.db'}"
