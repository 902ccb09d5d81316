"""`judgewatch demo --quick` (without the slow vLLM step) run into a fresh store, for the tests that read it."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate


@dataclass(frozen=True)
class QuickDemo:
    """The store the quick demo leaves, with what it did and said."""

    engine: Engine
    database_url: str
    folder: Path  # the settings' data folder, and where the releases' reports are written
    outcomes: list[Any]  # judgewatch.cli.demo_run's release outcomes, r1 to r4
    lines: list[str]  # what the demo printed


def run_quick_demo(folder: Path) -> QuickDemo:
    """The quick demo into a SQLite store in `folder`, under a temporary Prefect server of its own."""
    from prefect.testing.utilities import prefect_test_harness

    from flows.regression import post_release_regression
    from judgewatch.cli.demo_run import run_demo

    database_url = f"sqlite:///{folder / 'jw.db'}"
    engine = make_engine(database_url)
    migrate(engine)

    def run_gate(**params: Any) -> dict[str, Any]:
        params.setdefault("report", str(folder / f"{params['release']}.md"))
        result = asyncio.run(post_release_regression(**params, database_url=database_url, fail_on_gate=False))
        assert isinstance(result, dict)
        return result

    lines: list[str] = []

    def load() -> list[Any]:
        with prefect_test_harness(server_startup_timeout=120):
            return run_demo(engine, Settings(data_dir=folder), run_gate, lines.append, quick=True, judge_trust=False)

    # a thread of its own: a browser test would otherwise run it inside playwright's running event loop
    with ThreadPoolExecutor(max_workers=1) as pool:
        outcomes = pool.submit(load).result()
    return QuickDemo(engine=engine, database_url=database_url, folder=folder, outcomes=outcomes, lines=lines)
