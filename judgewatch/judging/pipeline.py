"""Judge many items: every item scheduled on the judge, exactly one verdict each, verdicts stored in batches.

The judge bounds its own concurrency; a fixed pool of workers pulls from the item iterator (100k items never
become 100k coroutines) and one writer task stores full batches in a worker thread, so the event loop never waits
on the database. The run record, skipping what is judged already and the counts belong to `judgewatch.judging.run`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel, Field
from sqlalchemy import Engine

from judges.base import Judge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, TokenUsage, UnscoredReason, Verdict
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import interaction_id
from judgewatch.storage.verdicts import store_judged, upsert_verdicts

logger = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = 256
FLUSH_INTERVAL_S = 2.0  # a slow judge still gets its verdicts stored every few seconds


class JudgingSummary(BaseModel):
    """What a judging run produced: counts, latency percentiles, the judge's token cost."""

    items: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    by_unscored_reason: dict[str, int] = Field(default_factory=dict)
    by_judge: dict[str, int] = Field(default_factory=dict)  # "kind:name" of the judge that produced each verdict
    latency_ms: dict[str, float] = Field(default_factory=dict)  # p50, p90, p99, max
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    stored: int = 0
    wall_s: float = 0.0


@dataclass
class JudgingResult:
    summary: JudgingSummary
    verdicts: list[Verdict]  # input order; empty when `collect=False`


def percentiles(values: list[float]) -> dict[str, float]:
    """Nearest-rank p50/p90/p99 and max ({} for no values)."""
    if not values:
        return {}
    ordered = sorted(values)
    last = len(ordered) - 1

    def rank(q: float) -> float:
        return round(ordered[min(last, max(0, math.ceil(q * len(ordered) - 1e-9) - 1))], 1)

    return {"p50": rank(0.50), "p90": rank(0.90), "p99": rank(0.99), "max": round(ordered[-1], 1)}


@dataclass
class Tally:
    """Running counts of the verdicts seen; one tally may span several pipeline calls (a run's batches)."""

    status: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    judges: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    tokens: TokenUsage = field(default_factory=TokenUsage)

    def add(self, verdict: Verdict) -> None:
        self.status[verdict.status.value] += 1
        if verdict.unscored_reason is not None:
            self.reasons[verdict.unscored_reason.value] += 1
        self.judges[f"{verdict.judge.kind}:{verdict.judge.name}"] += 1
        self.latencies.append(verdict.latency_ms)
        self.tokens += verdict.tokens

    def summary(self, stored: int, wall_s: float) -> JudgingSummary:
        return JudgingSummary(
            items=len(self.latencies),
            by_status=dict(self.status),
            by_unscored_reason=dict(self.reasons),
            by_judge=dict(self.judges),
            latency_ms=percentiles(self.latencies),
            tokens=self.tokens.model_copy(),
            stored=stored,
            wall_s=round(wall_s, 3),
        )


OnVerdict = Callable[[str, Verdict], None]  # (interaction id, verdict)
OnStored = Callable[[list[tuple[str, Verdict]]], None]  # a batch of (interaction id, verdict), once committed


class _InOrder:
    """Delivers verdicts to `on_verdict` (and the collected list) in input order, whatever order they finish in."""

    def __init__(self, on_verdict: OnVerdict | None, collect: bool) -> None:
        self.on_verdict = on_verdict
        self.collected: list[Verdict] | None = [] if collect else None
        self.next = 0
        self.waiting: dict[int, tuple[str, Verdict]] = {}

    def put(self, index: int, key: str, verdict: Verdict) -> None:
        self.waiting[index] = (key, verdict)
        while self.next in self.waiting:
            self._emit(*self.waiting.pop(self.next))

    def _emit(self, key: str, verdict: Verdict) -> None:
        self.next += 1
        if self.collected is not None:
            self.collected.append(verdict)
        if self.on_verdict is not None:
            self.on_verdict(key, verdict)


_Judged = tuple[str, JudgeItem, Verdict]  # (interaction id, item, verdict)


class _BatchWriter:
    """Collects judged items; one task stores full batches in a thread, in order, with backpressure. With
    `new_source` the items are stored as new interactions too; without, only their verdicts are written."""

    def __init__(
        self, engine: Engine, *, new_source: str | None, run_id: str | None, batch_size: int, on_stored: OnStored | None
    ) -> None:
        self.engine, self.new_source, self.run_id, self.batch_size = engine, new_source, run_id, batch_size
        self.on_stored = on_stored
        self.pending: list[_Judged] = []
        self.pending_since = 0.0
        # A few batches may wait: if the database is slower than the judge, workers pause instead of piling up.
        self.queue: asyncio.Queue[list[_Judged] | None] = asyncio.Queue(maxsize=4)
        self.stored = 0

    def add(self, judged: _Judged) -> list[_Judged] | None:
        """Queue one judged item; returns a batch to put on `queue` when one is due."""
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append(judged)
        if len(self.pending) >= self.batch_size or time.monotonic() - self.pending_since >= FLUSH_INTERVAL_S:
            batch, self.pending = self.pending, []
            return batch
        return None

    async def close(self) -> None:
        if self.pending:
            await self.queue.put(self.pending)
        await self.queue.put(None)

    async def run(self) -> None:
        while (batch := await self.queue.get()) is not None:
            self.stored += await asyncio.to_thread(self._write, batch)

    def _write(self, batch: list[_Judged]) -> int:
        verdicts = [(key, verdict) for key, _, verdict in batch]
        with session_scope(self.engine) as session:
            if self.new_source is not None:
                pairs = [(item, verdict) for _, item, verdict in batch]
                stored = store_judged(session=session, source=self.new_source, run_id=self.run_id, judged=pairs)
            else:
                stored = upsert_verdicts(session=session, run_id=self.run_id, verdicts=verdicts)
        if self.on_stored is not None:
            self.on_stored(verdicts)
        return stored


async def judge_one(judge: Judge, item: JudgeItem, rubric: Rubric, identity: JudgeIdentity) -> Verdict:
    """The judge's verdict; an exception or a wrong verdict becomes an unscored judge_error verdict, logged."""
    try:
        verdict = await judge.judge(item, rubric)
    except Exception as exc:
        logger.exception("judge %s:%s raised on item %r", identity.kind, identity.name, item.id)
        detail = f"{type(exc).__name__}: {exc}"
    else:
        if isinstance(verdict, Verdict) and verdict.item_id == item.id:
            return verdict
        detail = f"judge returned {type(verdict).__name__} for another item: {getattr(verdict, 'item_id', None)!r}"
        logger.error("judge %s:%s on item %r: %s", identity.kind, identity.name, item.id, detail)
    return Verdict.unscored(item.id, UnscoredReason.judge_error, judge=identity, rubric=rubric.identity, detail=detail)


async def judge_items(
    items: Iterable[JudgeItem],
    rubric: Rubric,
    judge: Judge,
    *,
    engine: Engine | None = None,
    source: str = "items",
    on_verdict: Callable[[Verdict], None] | None = None,
    batch_size: int = 200,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    collect: bool = True,
) -> JudgingResult:
    """Judge new items of `source` (`judge_keyed`), stored as interactions with their verdicts given an `engine`."""
    keyed = ((interaction_id(source, item.id), item) for item in items)
    return await judge_keyed(
        keyed,
        rubric,
        judge,
        engine=engine,
        new_source=source,
        on_verdict=(lambda _key, verdict: on_verdict(verdict)) if on_verdict is not None else None,
        batch_size=batch_size,
        max_in_flight=max_in_flight,
        collect=collect,
    )


async def judge_keyed(
    items: Iterable[tuple[str, JudgeItem]],
    rubric: Rubric,
    judge: Judge,
    *,
    engine: Engine | None = None,
    run_id: str | None = None,
    new_source: str | None = None,
    on_verdict: OnVerdict | None = None,
    batch_size: int = 200,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    collect: bool = True,
    tally: Tally | None = None,
    reuse: dict[str, Verdict] | None = None,
    on_stored: OnStored | None = None,
) -> JudgingResult:
    """Judge every (interaction id, item) once, in input order for `on_verdict` and the returned list; store each
    verdict under its interaction id when `engine` is given (`new_source`: as a new interaction of that source too).

    `max_in_flight` stays above the judge's own concurrency; `tally` accumulates across calls. `reuse`: stored
    verdicts by interaction id, filled while the items are read: such an item is delivered with that verdict, never
    judged, tallied or stored again. `on_stored` runs in the writer's thread once a batch is committed. A judge's
    exception is an unscored judge_error verdict; only the items, the callbacks or the store raise.
    """
    if batch_size < 1 or max_in_flight < 1:
        raise ValueError("batch_size and max_in_flight must be >= 1")
    identity = judge.identity(rubric)
    numbered: Iterator[tuple[int, tuple[str, JudgeItem]]] = enumerate(items)
    in_order = _InOrder(on_verdict, collect)
    tally = tally if tally is not None else Tally()
    writer = None
    if engine is not None:
        writer = _BatchWriter(engine, new_source=new_source, run_id=run_id, batch_size=batch_size, on_stored=on_stored)
    started = time.perf_counter()

    async def worker() -> None:
        # Every worker pulls from the one iterator: each item is taken exactly once, with no queue in between.
        for index, (key, item) in numbered:
            stored = reuse.pop(key, None) if reuse is not None else None
            if stored is not None:
                in_order.put(index, key, stored)
                continue
            verdict = await judge_one(judge, item, rubric, identity)
            tally.add(verdict)
            in_order.put(index, key, verdict)
            if writer is not None and (batch := writer.add((key, item, verdict))) is not None:
                await writer.queue.put(batch)

    try:
        async with asyncio.TaskGroup() as group:
            writer_task = group.create_task(writer.run()) if writer is not None else None
            workers = []
            for _ in range(max_in_flight):
                # One worker a loop turn: the first requests go out while the later items are still being read
                # and scrubbed (started all at once, every worker prepared its item before any request left).
                workers.append(group.create_task(worker()))
                await asyncio.sleep(0)
            await asyncio.gather(*workers)
            if writer is not None and writer_task is not None:
                await writer.close()
    except BaseExceptionGroup as group_error:
        # Surface the first real failure, not the group wrapper (callers handle plain exceptions).
        raise group_error.exceptions[0] from group_error
    summary = tally.summary(writer.stored if writer else 0, time.perf_counter() - started)
    if in_order.waiting:
        raise RuntimeError(f"{len(in_order.waiting)} verdicts were never delivered in order")  # a bug, not input
    return JudgingResult(summary=summary, verdicts=in_order.collected or [])
