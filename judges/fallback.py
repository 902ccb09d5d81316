"""The fallback chain: try judges in order, moving on only when an endpoint fails, never when a judge answers.

Endpoint failures (down, timeout, rate limited) move to the next link, behind a circuit breaker per link; any other
result of a link is kept. Each verdict names its link; `fallback_from` the links before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from judges.base import Judge, fit_item_ids, unscored
from judges.errors import is_endpoint_failure
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.redact import mask_url

logger = logging.getLogger(__name__)


class CircuitState(StrEnum):
    closed = "closed"  # calls go through
    open = "open"  # calls skip this link until the cooldown has passed
    half_open = "half_open"  # one probe call decides: closed again, or open for another cooldown


@dataclass
class LinkStats:
    """Counters of one link, as `FallbackJudge.stats()` reports them."""

    label: str
    calls: int = 0  # items sent to this link
    failures: int = 0  # endpoint-level failures among them
    skipped: int = 0  # items that passed this link by because its circuit was open
    opened: int = 0  # times the circuit opened
    state: CircuitState = CircuitState.closed

    @property
    def open(self) -> bool:
        return self.state is not CircuitState.closed


def link_label(judge: Judge) -> str:
    """'kind:model@endpoint' (or just the kind): how `fallback_from` and the counters name a link."""
    model, url = getattr(judge, "model", None), getattr(judge, "base_url", None)
    label = f"{judge.kind}:{model}" if model else judge.kind
    return f"{label}@{mask_url(url)}" if url else label


class _Link:
    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.stats = LinkStats(label=link_label(judge))
        self.consecutive_failures = 0
        self.opened_at = 0.0
        endpoint = getattr(judge, "endpoint", None)
        self.concurrency: int | None = getattr(endpoint, "concurrency", None)
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def slots(self) -> contextlib.AbstractAsyncContextManager[object]:
        """The link's requests in flight, at most its endpoint's concurrency: an item is admitted by the breaker
        only when it is about to be sent, so items queued behind a hung call are not all let through at once."""
        if self.concurrency is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:
            self._slots, self._loop = asyncio.Semaphore(self.concurrency), loop
        return self._slots


class FallbackJudge:
    """Judges tried in order (the offline reference judge last), each behind its own circuit breaker."""

    kind = "fallback"

    def __init__(
        self,
        links: Sequence[Judge],
        *,
        failure_threshold: int = 5,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not links:
            raise ValueError("a fallback chain needs at least one judge")
        if failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {failure_threshold}")
        self._links = [_Link(judge) for judge in links]
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock

    @property
    def links(self) -> list[Judge]:
        return [link.judge for link in self._links]

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        """The primary link's identity; each verdict carries the identity of the link that produced it."""
        return self._links[0].judge.identity(rubric)

    def fit_item_ids(self) -> frozenset[str]:
        """The primary link's fit items, as its identity is the chain's (validation leaves them out)."""
        return fit_item_ids(self._links[0].judge)

    def stats(self) -> list[LinkStats]:
        """Per link, in chain order: calls, endpoint failures, skips, circuit state."""
        return [link.stats for link in self._links]

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        before: list[str] = []
        last: Verdict | None = None
        for link in self._links:
            async with link.slots():
                admitted = self._admit(link)
                if admitted:
                    link.stats.calls += 1
                    verdict = await link.judge.judge(item, rubric)
                    failed = is_endpoint_failure(verdict)
                    self._record(link, failed)
            if not admitted:
                link.stats.skipped += 1
                before.append(link.stats.label)
                continue
            if not failed:
                return verdict.model_copy(update={"fallback_from": before}) if before else verdict
            last = verdict.model_copy(update={"fallback_from": list(before)})
            before.append(link.stats.label)
        if last is not None:
            return last
        final = self._links[-1]
        detail = "circuit open: the endpoint failed repeatedly (every link of the chain); no call was made"
        down, identity = UnscoredReason.endpoint_down, final.judge.identity(rubric)
        return unscored(item, rubric, identity, down, detail, fallback_from=before[:-1], attempts=0)

    def _admit(self, link: _Link) -> bool:
        state = link.stats.state
        if state is CircuitState.closed:
            return True
        if state is CircuitState.open and self._clock() - link.opened_at >= self.cooldown_s:
            self._transition(link, CircuitState.half_open, "cooldown over; sending one probe")
            return True
        return False  # open, or half-open with its probe already in flight

    def _record(self, link: _Link, endpoint_failure: bool) -> None:
        if not endpoint_failure:
            link.consecutive_failures = 0
            if link.stats.state is not CircuitState.closed:
                self._transition(link, CircuitState.closed, "endpoint answers again")
            return
        link.stats.failures += 1
        link.consecutive_failures += 1
        state = link.stats.state
        if state is CircuitState.half_open or (
            state is CircuitState.closed and link.consecutive_failures >= self.failure_threshold
        ):
            link.opened_at = self._clock()
            link.stats.opened += 1
            why = f"{link.consecutive_failures} consecutive endpoint failures"
            self._transition(link, CircuitState.open, f"{why}; skipping it for {self.cooldown_s:g}s")

    def _transition(self, link: _Link, state: CircuitState, why: str) -> None:
        old, link.stats.state = link.stats.state, state
        logger.warning("fallback link %s: circuit %s -> %s (%s)", link.stats.label, old.value, state.value, why)

    async def health(self) -> dict[str, bool]:
        """Per link: does its endpoint answer? Links without a `health()` (the reference judge) count as up."""
        results = await asyncio.gather(*(_answers(link.judge) for link in self._links))
        return {link.stats.label: ok for link, ok in zip(self._links, results, strict=True)}

    async def aclose(self) -> None:
        for link in self._links:
            await link.judge.aclose()


class GuardedJudge(FallbackJudge):
    """One endpoint judge behind the chain's circuit breaker (`--no-fallback-reference`, the gate's judge): a hung
    or dead endpoint costs `failure_threshold` timeouts, then its items are stored unscored (`endpoint_down`)
    without a call until a probe after the cooldown finds it back. Reads as the judge it guards otherwise."""

    def __init__(self, judge: Judge) -> None:
        super().__init__([judge])
        self.kind = judge.kind

    def __getattr__(self, name: str) -> object:  # model, base_url, endpoint...: the guarded judge's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._links[0].judge, name)

    async def health(self) -> bool:  # type: ignore[override]
        return await _answers(self._links[0].judge)


async def _answers(judge: Judge) -> bool:
    check = getattr(judge, "health", None)
    return bool(await check()) if check is not None else True
