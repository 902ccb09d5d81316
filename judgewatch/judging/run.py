"""One judging run: the run record, what is already judged, the counts and the summary, in one context manager.

The judge CLI, the regression and sampling flows, judge validation and anchor re-judging all judge through a
`JudgingRun`:

    with JudgingRun(engine, kind=RunKind.regression, name=..., identity=..., rubric=rubric, judge=judge) as run:
        batch = await run.judge_stored([(interaction.id, interaction.to_item()) for interaction in answers])
        run.extra["routed_to_review"] = ...

Entering starts (or restarts) the `EvalRun` record, whose id is deterministic in (kind, identity, rubric, judge
configuration); leaving finishes it `completed`, or `failed` when an exception escapes, with the counts. Items
are keyed by the interaction their verdict belongs to. `judge_stored` skips interactions that already have a
verdict under this rubric and judge configuration; `judge_new` judges new items of a source, every one.
Without an engine nothing is stored and nothing skipped: the run only judges and counts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from judges.base import Judge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import Verdict
from judgewatch.judging.pipeline import DEFAULT_MAX_IN_FLIGHT, JudgingResult, JudgingSummary, Tally, judge_keyed
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import interaction_id
from judgewatch.storage.runs import RunKind, RunStatus, beat_run, finish_run, start_run
from judgewatch.storage.verdicts import judged_interactions, verdict_id

logger = logging.getLogger(__name__)


@dataclass
class StoredBatch:
    """What `judge_stored` did with one batch of stored interactions."""

    verdict_ids: dict[str, str] = field(default_factory=dict)  # interaction id -> its verdict id (old or new)
    judged_now: int = 0
    already_judged: int = 0
    verdicts: list[Verdict] = field(default_factory=list)  # the new verdicts, in input order


class JudgingRun:
    """One judging run: owns its run record, skips items already judged, keeps the counts and the summary.

    `lazy=True` starts the record on the first `start()` or judging call instead of on entry, so a run that
    finds nothing to do leaves no record. `retry_reasons`: unscored reasons (say "timeout") whose verdicts do
    not count as judged, so those items are judged again. `extra` holds the caller's own counts (quarantined
    rows, routed verdicts...), stored with the run's.
    """

    def __init__(
        self,
        engine: Engine | None,
        *,
        kind: RunKind,
        name: str,
        identity: str,
        rubric: Rubric,
        judge: Judge,
        params: dict[str, Any] | None = None,
        retry_reasons: Collection[str] = (),
        lazy: bool = False,
    ) -> None:
        self.engine, self.kind, self.name, self.identity = engine, kind, name, identity
        self.rubric, self.judge, self.params = rubric, judge, params or {}
        self.retry_reasons, self.lazy = frozenset(retry_reasons), lazy
        self.judge_config_hash = judge.identity(rubric).config_hash
        self.run_id: str | None = None
        self.extra: dict[str, Any] = {}
        self.judged_now = 0
        self.already_judged = 0
        self.reused = 0  # stored verdicts taken over as this run's own: always 0 until runs can resume
        self._tally = Tally()
        self._stored = 0
        self._wall_s = 0.0

    # -- the record ------------------------------------------------------------------------------------------

    def __enter__(self) -> JudgingRun:
        if not self.lazy:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.run_id is None or self.engine is None:
            return
        status = RunStatus.completed if exc is None else RunStatus.failed
        try:
            with session_scope(self.engine, write=True) as session:
                finish_run(session=session, run_id=self.run_id, status=status.value, counts=self.counts())
        except SQLAlchemyError:
            if exc is None:
                raise
            logger.exception("could not record the end of run %s", self.run_id)  # the first error is the news

    def start(self) -> str | None:
        """The run id, starting the record now if it is not started yet (None when nothing is stored)."""
        if self.run_id is None and self.engine is not None:
            with session_scope(self.engine, write=True) as session:
                run = start_run(
                    session=session,
                    kind=self.kind.value,
                    name=self.name,
                    identity=self.identity,
                    rubric=self.rubric.identity,
                    judge_config_hash=self.judge_config_hash,
                    params=self.params,
                )
                self.run_id = run.id
        return self.run_id

    def beat(self) -> None:
        """Record that the run is alive, with its counts so far."""
        if self.run_id is not None and self.engine is not None:
            with session_scope(self.engine, write=True) as session:
                beat_run(session=session, run_id=self.run_id, counts=self.counts())

    # -- counts ----------------------------------------------------------------------------------------------

    @property
    def summary(self) -> JudgingSummary:
        """Every verdict made in this run so far: counts, latency percentiles, tokens, stored rows, time."""
        return self._tally.summary(self._stored, self._wall_s)

    def counts(self) -> dict[str, Any]:
        """The run record's counts: the summary, judged now / already judged / reused, and the caller's extra."""
        own = {"judged_now": self.judged_now, "already_judged": self.already_judged, "reused": self.reused}
        return self.summary.model_dump(mode="json") | own | self.extra

    # -- judging ---------------------------------------------------------------------------------------------

    def already_judged_ids(self, interaction_ids: Sequence[str]) -> dict[str, str]:
        """{interaction id: verdict id} of those judged under this rubric and judge configuration already."""
        if self.engine is None or not interaction_ids:
            return {}
        with session_scope(self.engine) as session:
            return judged_interactions(
                session=session,
                interaction_ids=interaction_ids,
                rubric_hash=self.rubric.content_hash,
                judge_config_hash=self.judge_config_hash,
                retry_reasons=self.retry_reasons,
            )

    async def judge_stored(
        self,
        items: Sequence[tuple[str, JudgeItem]],
        *,
        force: Collection[str] = (),
        on_verdict: Callable[[str, Verdict], None] | None = None,
        collect: bool = False,
    ) -> StoredBatch:
        """Judge the stored interactions (interaction id, item) not judged yet (and those in `force`)."""
        unique = dict(items)
        done = self.already_judged_ids(list(unique))
        for key in force:
            done.pop(key, None)
        todo = [(key, item) for key, item in unique.items() if key not in done]
        batch = StoredBatch(verdict_ids=dict(done), already_judged=len(unique) - len(todo))
        self.already_judged += batch.already_judged
        if not todo:
            return batch

        def seen(key: str, verdict: Verdict) -> None:
            # The verdict's own judge identity: a fallback link's verdict is stored under that link's config hash.
            batch.verdict_ids[key] = verdict_id(key, verdict.rubric.hash, verdict.judge.config_hash)
            if on_verdict is not None:
                on_verdict(key, verdict)

        result = await self._judge(todo, new_source=None, on_verdict=seen, collect=collect)
        batch.judged_now, batch.verdicts = len(todo), result.verdicts
        return batch

    async def judge_new(
        self,
        items: Iterable[JudgeItem],
        *,
        source: str,
        on_verdict: Callable[[Verdict], None] | None = None,
        collect: bool = True,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> JudgingResult:
        """Judge new items of `source`, every one; stored as its interactions, keyed by (source, item id)."""
        keyed = ((interaction_id(source, item.id), item) for item in items)
        forward = (lambda _key, verdict: on_verdict(verdict)) if on_verdict is not None else None
        return await self._judge(
            keyed, new_source=source, on_verdict=forward, collect=collect, max_in_flight=max_in_flight
        )

    async def _judge(
        self,
        items: Iterable[tuple[str, JudgeItem]],
        *,
        new_source: str | None,
        on_verdict: Callable[[str, Verdict], None] | None,
        collect: bool,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> JudgingResult:
        run_id = self.start()
        before = sum(self._tally.status.values())
        started = time.perf_counter()
        try:
            result = await judge_keyed(
                items,
                self.rubric,
                self.judge,
                engine=self.engine,
                run_id=run_id,
                new_source=new_source,
                on_verdict=on_verdict,
                collect=collect,
                max_in_flight=max_in_flight,
                tally=self._tally,
            )
        finally:
            self.judged_now += sum(self._tally.status.values()) - before
            self._wall_s += time.perf_counter() - started
        self._stored += result.summary.stored
        return result
