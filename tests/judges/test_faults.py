"""Every way a judge call can fail becomes the right unscored reason, retries stay bounded, nothing is lost."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import httpx
import pytest

from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import UnscoredReason, Verdict, VerdictStatus
from judgewatch.testing.simulator import SimulatorHandle, serve_simulator

MakeItem = Callable[..., JudgeItem]
MAX_RETRIES = 2

# marker -> (unscored reason or None for scored, requests the simulator must see for one item)
OUTCOMES: dict[str, tuple[UnscoredReason | None, int]] = {
    "": (None, 1),
    "[[sim:500]]": (UnscoredReason.endpoint_down, 1 + MAX_RETRIES),
    "[[sim:503]]": (UnscoredReason.endpoint_down, 1 + MAX_RETRIES),
    "[[sim:reset]]": (UnscoredReason.endpoint_down, 1 + MAX_RETRIES),
    "[[sim:429]]": (UnscoredReason.rate_limited, 1 + MAX_RETRIES),
    "[[sim:quota]]": (UnscoredReason.rate_limited, 1),
    "[[sim:400]]": (UnscoredReason.refused, 1),
    "[[sim:401]]": (UnscoredReason.refused, 1),
    "[[sim:403]]": (UnscoredReason.refused, 1),
    "[[sim:404]]": (UnscoredReason.refused, 1),
    "[[sim:422]]": (UnscoredReason.refused, 1),
    "[[sim:content_filter]]": (UnscoredReason.refused, 1),
    "[[sim:garbage]]": (UnscoredReason.parse_error, 2),  # one repair: the same request once more
    "[[sim:schema]]": (UnscoredReason.parse_error, 2),
    "[[sim:garbled=1]]": (None, 2),  # malformed, then repaired by the second request
    "[[sim:length]]": (None, 1),
    "[[sim:length_early]]": (UnscoredReason.truncated, 1),
    "[[sim:flaky=2]]": (None, 3),
    "[[sim:flaky=9]]": (UnscoredReason.endpoint_down, 1 + MAX_RETRIES),
    "[[sim:slow=30]]": (None, 1),
}


def _judge(url: str, **kw: object) -> OpenAIJudge:
    options: dict[str, object] = {"max_retries": MAX_RETRIES, "backoff_s": 0.01, "timeout_s": 5.0, **kw}
    return OpenAIJudge(EndpointConfig(url, "sim-judge", **options))  # type: ignore[arg-type]


async def _judge_one(sim: SimulatorHandle, rubric: Rubric, item: JudgeItem) -> Verdict:
    """One item through a fresh judge on the simulator (closed afterwards)."""
    judge = _judge(sim.base_url)
    try:
        return await judge.judge(item, rubric)
    finally:
        await judge.aclose()


@pytest.mark.parametrize("marker", list(OUTCOMES))
async def test_each_fault_maps_to_its_unscored_reason_with_bounded_requests(
    marker: str, sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    reason, requests = OUTCOMES[marker]
    verdict = await _judge_one(sim, rubric, make_item("f", marker))

    assert verdict.unscored_reason is reason, verdict.detail
    assert verdict.status is (VerdictStatus.scored if reason is None else VerdictStatus.unscored)
    assert sim.state.requests == requests
    assert verdict.attempts == requests
    if reason is not None:
        assert verdict.detail and verdict.overall is None


async def test_parse_error_keeps_an_excerpt_of_the_raw_reply(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    verdict = await _judge_one(sim, rubric, make_item("g", "[[sim:garbage]]"))
    assert verdict.unscored_reason is UnscoredReason.parse_error
    assert "I think this answer is quite good" in (verdict.detail or "")
    assert verdict.tokens.completion > 0  # the judge's cost is accounted even when its reply is unusable


@pytest.mark.parametrize(
    ("garbled", "status", "reason"),
    [(1, VerdictStatus.scored, None), (2, VerdictStatus.unscored, UnscoredReason.parse_error)],
    ids=["repaired", "not-repaired"],
)
async def test_a_malformed_reply_is_asked_again_exactly_once_with_the_same_request(
    garbled: int,
    status: VerdictStatus,
    reason: UnscoredReason | None,
    sim: SimulatorHandle,
    rubric: Rubric,
    make_item: MakeItem,
) -> None:
    """One malformed reply: repaired and scored; two: unscored (parse_error) after that one repair."""
    verdict = await _judge_one(sim, rubric, make_item("r", f"[[sim:garbled={garbled}]]"))
    assert verdict.status is status and verdict.unscored_reason is reason
    assert verdict.attempts == 2 and sim.state.requests == 2
    first, second = list(sim.state.captured)
    assert first["messages"] == second["messages"]  # the same request, not a new prompt
    assert first["response_format"] == second["response_format"]
    assert verdict.tokens.completion > len("I think this answer is quite good") // 4  # both replies are paid for


async def test_a_truncated_reply_is_not_asked_again(sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem) -> None:
    verdict = await _judge_one(sim, rubric, make_item("t", "[[sim:length_early]]"))
    assert verdict.unscored_reason is UnscoredReason.truncated
    assert sim.state.requests == 1


async def test_reply_cut_after_every_score_is_scored_and_its_reason_marked_truncated(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    verdict = await _judge_one(sim, rubric, make_item("l", "[[sim:length]]"))
    assert verdict.status is VerdictStatus.scored
    assert all(verdict.scores[c] is not None for c in ("relevance", "faithfulness", "completeness"))
    assert verdict.reason.endswith("[truncated]")


async def test_a_hanging_endpoint_times_out_within_the_configured_timeout(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    judge = _judge(sim.base_url, timeout_s=0.3, max_retries=0)
    verdict = await asyncio.wait_for(judge.judge(make_item("h", "[[sim:hang]]"), rubric), timeout=30)
    await judge.aclose()
    assert verdict.unscored_reason is UnscoredReason.timeout
    assert verdict.attempts == 1
    assert verdict.latency_ms < 30_000  # the simulator hangs for an hour: the client's timeout ended it


async def test_timeouts_are_retried_then_reported_as_timeout(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    judge = _judge(sim.base_url, timeout_s=0.2, max_retries=1)
    verdict = await judge.judge(make_item("h", "[[sim:hang]]"), rubric)
    await judge.aclose()
    assert verdict.unscored_reason is UnscoredReason.timeout
    assert verdict.attempts == 2 and sim.state.requests == 2


async def test_a_closed_port_is_endpoint_down_after_the_bounded_retries(
    closed_port_url: str, rubric: Rubric, make_item: MakeItem
) -> None:
    judge = _judge(closed_port_url)
    verdict = await asyncio.wait_for(judge.judge(make_item("d"), rubric), timeout=30)
    await judge.aclose()
    assert verdict.unscored_reason is UnscoredReason.endpoint_down
    assert verdict.attempts == 1 + MAX_RETRIES
    assert "connect" in (verdict.detail or "").lower()


async def test_server_wide_mode_applies_to_requests_without_a_marker(rubric: Rubric, make_item: MakeItem) -> None:
    async with serve_simulator(latency_ms=1, mode="503") as sim:
        judge = _judge(sim.base_url, max_retries=1)
        verdicts = await asyncio.gather(*(judge.judge(make_item(str(i), f"v{i}"), rubric) for i in range(5)))
        await judge.aclose()
    assert {v.unscored_reason for v in verdicts} == {UnscoredReason.endpoint_down}
    assert sim.state.requests == 5 * 2


async def test_mixed_batch_of_every_fault_returns_one_verdict_per_item_in_order(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    markers = [m for m in OUTCOMES for _ in range(3)]
    random.Random(7).shuffle(markers)
    items = [make_item(f"item-{i}", f"{m} #{i}") for i, m in enumerate(markers)]
    judge = _judge(sim.base_url, concurrency=16)
    verdicts = await asyncio.gather(*(judge.judge(item, rubric) for item in items))
    await judge.aclose()

    assert [v.item_id for v in verdicts] == [item.id for item in items]
    for marker, verdict in zip(markers, verdicts, strict=True):
        assert verdict.unscored_reason is OUTCOMES[marker][0], (marker, verdict.detail)
    assert sim.state.requests == sum(OUTCOMES[m][1] for m in markers)


async def test_sim_stats_endpoint_counts_requests_and_statuses(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    judge = _judge(sim.base_url)
    await judge.judge(make_item("a", "[[sim:503]]"), rubric)
    await judge.judge(make_item("b", "[[sim:400]]"), rubric)
    await judge.aclose()
    async with httpx.AsyncClient() as client:
        stats = (await client.get(sim.root_url + "/sim/stats")).json()
    assert stats["requests"] == 1 + MAX_RETRIES + 1
    assert stats["status"] == {"400": 1, "503": 1 + MAX_RETRIES}
