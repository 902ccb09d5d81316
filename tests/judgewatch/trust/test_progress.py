"""The progress line of a long judge measurement: calls done, calls per second, time left; throttled."""

from __future__ import annotations

import pytest

from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.testing.clocks import ManualClock
from judgewatch.trust.progress import CallMeter, MeteredJudge


def test_line_states_calls_done_rate_and_time_left() -> None:
    clock, lines = ManualClock(100.0), []
    meter = CallMeter(120, lines.append, every_s=5.0, clock=clock)
    for _ in range(30):
        clock.now += 0.5  # 2 calls per second
        meter.tick()
    assert meter.line() == "[######------------------]  30/120 calls, 2.0 calls/s, about 45 s left"
    for _ in range(90):
        clock.now += 1.0
        meter.tick()
    assert lines[-1].startswith("[########################] 120/120 calls") and "done in 1 min 45 s" in lines[-1]


def test_the_judges_warm_up_does_not_inflate_the_first_time_left() -> None:
    """Issue 35 §6.9: the first estimate said 15 min for 2 min of work; the first call had carried the warm-up."""
    clock, lines = ManualClock(100.0), []
    meter = CallMeter(120, lines.append, every_s=5.0, clock=clock)
    clock.now += 60.0  # the first call waits for the judge to warm up
    meter.tick()
    assert meter.line().endswith("time left unknown yet")
    for _ in range(29):
        clock.now += 1.0  # then one call a second
        meter.tick()
    assert meter.line().endswith("1.0 calls/s, about 1 min 30 s left")  # not 4 min 27 s, as timed from the start


def test_reports_are_throttled_but_the_last_call_always_reports() -> None:
    clock, lines = ManualClock(100.0), []
    meter = CallMeter(10, lines.append, every_s=5.0, clock=clock)
    for _ in range(10):
        clock.now += 1.0
        meter.tick()
    assert [line.split("]")[1].split(" calls")[0].strip() for line in lines] == ["5/10", "10/10"]


def test_a_meter_needs_a_planned_call() -> None:
    with pytest.raises(ValueError, match="at least one planned call"):
        CallMeter(0, print)


class Broken(ReferenceJudge):
    async def judge(self, item: JudgeItem, rubric: Rubric):  # type: ignore[no-untyped-def]  # noqa: ARG002
        raise RuntimeError("endpoint fell over")


async def test_metered_judge_ticks_on_every_call_even_a_failed_one_and_keeps_the_identity(rubric: Rubric) -> None:
    lines: list[str] = []
    meter = CallMeter(2, lines.append, every_s=3600)
    item = JudgeItem(id="x", question="Capital of France?", answer="Paris", reference_facts=["Paris is the capital."])
    ok, broken = MeteredJudge(ReferenceJudge(), meter), MeteredJudge(Broken(), meter)
    assert ok.identity(rubric) == ReferenceJudge().identity(rubric)
    assert (await ok.judge(item, rubric)).item_id == "x"
    with pytest.raises(RuntimeError):
        await broken.judge(item, rubric)
    assert meter.done == 2 and len(lines) == 1 and "2/2 calls" in lines[0]
    assert ok.kind == ReferenceJudge().kind  # everything else is the wrapped judge's
