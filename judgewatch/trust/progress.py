"""A progress line for long judge measurements: calls done of the planned total, calls per second, time left.
The judges are wrapped (`MeteredJudge`, `MeteredPairwiseJudge`) so every finished call ticks one meter."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from judges.pairwise import PairCall
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import Verdict

BAR_WIDTH = 24


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class CallMeter:
    """Counts finished calls against `total` and reports progress through `echo` (throttled by `every_s`)."""

    def __init__(
        self,
        total: int,
        echo: Callable[[str], None],
        *,
        every_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if total < 1:
            raise ValueError(f"a meter needs at least one planned call, got {total}")
        self.total, self.echo, self.every_s, self.clock = total, echo, every_s, clock
        self.done = 0
        self.started = clock()
        self._last_report = self.started
        self._first_done: float | None = None  # when the first call finished: the judge's warm-up is behind it

    def line(self) -> str:
        """'[######------------------]  30/120 calls, 1.4 calls/s, about 1 min 04 s left'. The rate counts from the
        first finished call: the first carries the judge's warm-up, which made a 2-minute measurement read 15."""
        now = self.clock()
        elapsed = now - self.started
        filled = min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        since = now - self._first_done if self._first_done is not None else 0.0
        rate = (self.done - 1) / since if self.done > 1 and since > 0 else 0.0
        if self.done >= self.total:
            left = f"done in {_duration(elapsed)}"
        elif rate > 0:
            left = f"about {_duration((self.total - self.done) / rate)} left"
        else:
            left = "time left unknown yet"
        return f"[{bar}] {self.done:>{len(str(self.total))}}/{self.total} calls, {rate:.1f} calls/s, {left}"

    def tick(self) -> None:
        """One call finished; report when `every_s` has passed since the last report, or at the last call."""
        self.done += 1
        now = self.clock()
        if self._first_done is None:
            self._first_done = now
        if self.done == self.total or now - self._last_report >= self.every_s:
            self._last_report = now
            self.echo(self.line())


class _Metered:
    """A judge that ticks `meter` after every call; everything else is the wrapped judge's own."""

    def __init__(self, judge: Any, meter: CallMeter) -> None:  # a Judge or a PairwiseJudge
        self.wrapped, self.meter = judge, meter

    def __getattr__(self, name: str) -> Any:  # identity(), aclose(), health(), base_url...: the wrapped judge's
        if name == "wrapped":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.wrapped, name)


class MeteredJudge(_Metered):
    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        try:
            return await self.wrapped.judge(item, rubric)
        finally:
            self.meter.tick()


class MeteredPairwiseJudge(_Metered):
    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        try:
            return await self.wrapped.prefer(item, answer_a, answer_b, rubric)
        finally:
            self.meter.tick()
