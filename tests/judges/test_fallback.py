"""The fallback chain: the next link serves only when an endpoint fails; a dead link is skipped quickly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from judges.base import Judge, config_hash, plan, scored_verdict
from judges.config import EndpointConfig
from judges.fallback import CircuitState, FallbackJudge, link_label
from judges.openai_judge import OpenAIJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.testing.simulator import Fault, SimulatorHandle

MakeItem = Callable[..., JudgeItem]


class FakeReferenceJudge:
    """An always-answering offline last link that counts its calls (the real one is tested below too)."""

    kind = "reference"

    def __init__(self) -> None:
        self.calls = 0

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name="reference", config_hash=config_hash(rubric, judge="fake"))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.calls += 1
        to_score, not_applicable = plan(rubric, item)
        scores = dict.fromkeys(to_score, 3)
        return scored_verdict(item, rubric, self.identity(rubric), scores, not_applicable, "fake reference")

    async def aclose(self) -> None:
        return None


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _remote(url: str, model: str = "sim-judge") -> OpenAIJudge:
    return OpenAIJudge(EndpointConfig(url, model, max_retries=0, backoff_s=0.01, timeout_s=5.0))


async def judge_once(links: list[Judge], item: JudgeItem, rubric: Rubric) -> Verdict:
    """One item through a new chain over `links`, closed afterwards."""
    chain = FallbackJudge(links)
    try:
        return await chain.judge(item, rubric)
    finally:
        await chain.aclose()


async def test_first_link_down_second_serves_and_the_verdict_names_both(
    closed_port_url: str, sim2: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    dead, alive = _remote(closed_port_url, "primary"), _remote(sim2.base_url, "sim-judge-2")
    verdict = await judge_once([dead, alive], make_item("1"), rubric)

    assert verdict.status is VerdictStatus.scored
    assert verdict.judge == alive.identity(rubric)
    assert verdict.fallback_from == [link_label(dead)]
    assert link_label(dead) == f"openai:primary@{closed_port_url}"


async def test_a_healthy_first_link_serves_alone_with_no_fallback_recorded(
    sim: SimulatorHandle, sim2: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    verdict = await judge_once([_remote(sim.base_url), _remote(sim2.base_url)], make_item("1"), rubric)
    assert verdict.fallback_from == [] and verdict.judge.endpoint == sim.base_url
    assert sim2.state.requests == 0


@pytest.mark.parametrize(
    ("marker", "reason"),
    [
        ("[[sim:garbage]]", UnscoredReason.parse_error),
        ("[[sim:400]]", UnscoredReason.refused),
        ("[[sim:content_filter]]", UnscoredReason.refused),
        ("[[sim:length_early]]", UnscoredReason.truncated),
    ],
)
async def test_the_judges_own_failures_are_kept_never_replaced_by_the_next_link(
    marker: str,
    reason: UnscoredReason,
    sim: SimulatorHandle,
    sim2: SimulatorHandle,
    rubric: Rubric,
    make_item: MakeItem,
) -> None:
    reference = FakeReferenceJudge()
    links: list[Judge] = [_remote(sim.base_url), _remote(sim2.base_url), reference]
    verdict = await judge_once(links, make_item("p", marker), rubric)

    assert verdict.unscored_reason is reason
    assert verdict.judge.endpoint == sim.base_url and verdict.fallback_from == []
    assert sim2.state.requests == 0 and reference.calls == 0


async def test_breaker_opens_after_the_threshold_so_later_items_skip_the_dead_link(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem, caplog: pytest.LogCaptureFixture
) -> None:
    sim.state.mode = Fault("503")
    primary, reference = _remote(sim.base_url), FakeReferenceJudge()
    chain = FallbackJudge([primary, reference], failure_threshold=3, cooldown_s=60, clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="judges.fallback"):
        verdicts = [await chain.judge(make_item(str(i), f"v{i}"), rubric) for i in range(10)]
    await chain.aclose()

    assert sim.state.requests == 3  # only the first three items paid for the outage
    assert all(v.status is VerdictStatus.scored and v.judge.kind == "reference" for v in verdicts)
    assert all(v.fallback_from == [link_label(primary)] for v in verdicts)
    first, second = chain.stats()
    assert (first.calls, first.failures, first.skipped, first.opened) == (3, 3, 7, 1)
    assert first.open and first.state is CircuitState.open
    assert (second.calls, second.open) == (10, False)
    assert len([r for r in caplog.records if "closed -> open" in r.getMessage()]) == 1


async def test_concurrent_items_during_an_outage_stop_hitting_the_dead_link(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    sim.state.mode = Fault("503")
    chain = FallbackJudge([_remote(sim.base_url), FakeReferenceJudge()], failure_threshold=5, clock=FakeClock())
    first_wave = await asyncio.gather(*(chain.judge(make_item(f"a{i}", f"a{i}"), rubric) for i in range(20)))
    before = sim.state.requests
    second_wave = await asyncio.gather(*(chain.judge(make_item(f"b{i}", f"b{i}"), rubric) for i in range(50)))
    await chain.aclose()

    assert len(first_wave) == 20 and len(second_wave) == 50
    assert sim.state.requests == before  # the circuit opened during the first wave
    assert all(v.judge.kind == "reference" for v in [*first_wave, *second_wave])


async def _tripped_chain(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem, clock: FakeClock, *, failures: int
) -> FallbackJudge:
    """A chain (threshold 2, cooldown 30 s) whose endpoint answered 503 to `failures` items: its circuit opened."""
    sim.state.mode = Fault("503")
    links: list[Judge] = [_remote(sim.base_url), FakeReferenceJudge()]
    chain = FallbackJudge(links, failure_threshold=2, cooldown_s=30, clock=clock)
    for i in range(failures):
        await chain.judge(make_item(str(i), f"x{i}"), rubric)
    return chain


async def test_half_open_probe_after_the_cooldown_closes_the_circuit_when_the_endpoint_is_back(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    clock = FakeClock()
    chain = await _tripped_chain(sim, rubric, make_item, clock, failures=4)
    assert chain.stats()[0].state is CircuitState.open

    clock.now += 31
    sim.state.mode = Fault("ok")
    probe = await chain.judge(make_item("probe"), rubric)
    after = await chain.judge(make_item("after"), rubric)
    await chain.aclose()

    assert probe.judge.kind == "openai" and probe.fallback_from == []
    assert after.judge.kind == "openai"
    assert chain.stats()[0].state is CircuitState.closed


async def test_a_failed_probe_reopens_the_circuit_for_another_cooldown(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    clock = FakeClock()
    chain = await _tripped_chain(sim, rubric, make_item, clock, failures=2)
    clock.now += 31
    await chain.judge(make_item("probe"), rubric)  # fails: open again
    requests = sim.state.requests
    await chain.judge(make_item("later"), rubric)
    await chain.aclose()

    assert requests == 3 and sim.state.requests == 3
    assert chain.stats()[0].opened == 2 and chain.stats()[0].state is CircuitState.open


async def test_every_link_down_gives_the_last_links_unscored_verdict_listing_the_others(
    closed_port_url: str, sim2: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    sim2.state.mode = Fault("503")
    first, last = _remote(closed_port_url, "a"), _remote(sim2.base_url, "b")
    verdict = await judge_once([first, last], make_item("1"), rubric)
    assert verdict.unscored_reason is UnscoredReason.endpoint_down
    assert verdict.judge == last.identity(rubric)
    assert verdict.fallback_from == [link_label(first)]


async def test_when_every_circuit_is_open_the_verdict_is_endpoint_down_without_a_call(
    closed_port_url: str, rubric: Rubric, make_item: MakeItem
) -> None:
    only = _remote(closed_port_url)
    chain = FallbackJudge([only], failure_threshold=1, clock=FakeClock())
    await chain.judge(make_item("1"), rubric)
    verdict = await chain.judge(make_item("2"), rubric)
    await chain.aclose()
    assert verdict.unscored_reason is UnscoredReason.endpoint_down
    assert verdict.attempts == 0 and "circuit open" in (verdict.detail or "")
    assert chain.stats()[0].calls == 1 and chain.stats()[0].skipped == 1


async def test_reference_judge_as_last_link_labels_its_verdicts_as_reference(
    closed_port_url: str, rubric: Rubric, make_item: MakeItem
) -> None:
    primary = _remote(closed_port_url, "primary")
    chain = FallbackJudge([primary, FakeReferenceJudge()])
    verdict = await chain.judge(make_item("1"), rubric)
    await chain.aclose()
    assert verdict.judge.kind == "reference" and verdict.judge.name == "reference"
    assert verdict.judge.config_hash != primary.identity(rubric).config_hash
    assert verdict.fallback_from == [link_label(primary)]
    assert chain.identity(rubric) == primary.identity(rubric)


async def test_the_real_reference_judge_serves_as_last_link_when_the_endpoint_is_down(
    closed_port_url: str, rubric: Rubric, make_item: MakeItem
) -> None:
    primary, reference = _remote(closed_port_url, "primary"), ReferenceJudge()
    chain = FallbackJudge([primary, reference])
    verdicts = await asyncio.gather(*(chain.judge(make_item(str(i)), rubric) for i in range(3)))
    await chain.aclose()
    assert [v.item_id for v in verdicts] == ["0", "1", "2"]
    assert all(v.status is VerdictStatus.scored and v.judge == reference.identity(rubric) for v in verdicts)
    assert all(v.fallback_from == [link_label(primary)] for v in verdicts)


async def test_health_reports_each_link(closed_port_url: str, sim: SimulatorHandle) -> None:
    up, down = _remote(sim.base_url), _remote(closed_port_url)
    chain = FallbackJudge([up, down, FakeReferenceJudge()])
    health = await chain.health()
    await chain.aclose()
    assert health == {link_label(up): True, link_label(down): False, "reference": True}
