"""Judge-test fixtures: the OpenAI-compatible simulator on 127.0.0.1 (a free port) and items."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from judgewatch.contract.items import JudgeItem
from judgewatch.testing.simulator import SimulatorHandle, serve_simulator


@pytest.fixture
async def sim() -> AsyncIterator[SimulatorHandle]:
    """A simulator with a short latency and a generous cap, in the test's event loop."""
    async with serve_simulator(latency_ms=5, max_concurrency=64) as handle:
        yield handle


@pytest.fixture
async def sim2() -> AsyncIterator[SimulatorHandle]:
    """A second, independent simulator (another endpoint of a fallback chain)."""
    async with serve_simulator(latency_ms=5, max_concurrency=64, model="sim-judge-2") as handle:
        yield handle


def _make_item(item_id: str, marker: str = "", *, references: bool = True) -> JudgeItem:
    """An English item whose answer carries a simulator fault marker (or none)."""
    return JudgeItem(
        id=item_id,
        question="What is the capital of France?",
        answer=f"The capital of France is Paris. {marker}".strip(),
        reference_answer="Paris." if references else None,
        reference_facts=["Paris is the capital of France."] if references else [],
    )


@pytest.fixture
def make_item() -> Callable[..., JudgeItem]:
    """`make_item(id, marker="", references=True)`: an item whose answer carries a simulator fault marker."""
    return _make_item
