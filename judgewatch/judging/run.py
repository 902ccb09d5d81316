"""One judging run: the run record, what is already judged, the counts and the summary, in one context manager.

The record's id is deterministic in (kind, identity, rubric, judge configuration): a run started again is the same
record. Resume, heartbeat, abandoned and degraded runs are as docs/judging.md says; a sampling-side run
(`spend_cap=True`) pauses at the daily judge spend cap (docs/operations.md), `judge_stored` returning the items it
left unjudged in `paused`. Without an engine nothing is stored and nothing skipped: the run only judges and counts.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from types import TracebackType
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from judges.base import Judge
from judges.errors import RETRIED_REASONS, is_endpoint_failure
from judges.fallback import link_label
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.pii import Scrubber, scrub_content
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict
from judgewatch.judging.evaluations import evaluation_events
from judgewatch.judging.pipeline import (
    DEFAULT_MAX_IN_FLIGHT,
    JudgingResult,
    JudgingSummary,
    OnStored,
    Tally,
    judge_keyed,
)
from judgewatch.judging.spend_cap import settings_day_spend
from judgewatch.settings import get_settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import interaction_id, traced_spans
from judgewatch.storage.runs import RunKind, RunStatus, beat_run, expire_runs, finish_run, get_run, start_run
from judgewatch.storage.runs import run_id as make_run_id
from judgewatch.storage.verdicts import get_verdicts, judged_interactions, verdict_id

logger = logging.getLogger(__name__)

RESUME_CHUNK = 200  # items looked up in the store at once when resuming


class _NotConfigured:
    """The run's judge when the configured one was down from the start: its verdicts name the configured judge in
    `fallback_from`, so a later verdict of that judge supersedes them (`storage.verdicts.refresh_current`)."""

    def __init__(self, judge: Judge, configured_hash: str, configured_label: str) -> None:
        self.inner, self.configured_hash, self.configured_label = judge, configured_hash, configured_label
        self.kind = judge.kind

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return self.inner.identity(rubric)

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        verdict = await self.inner.judge(item, rubric)
        if verdict.judge.config_hash != self.configured_hash and not verdict.fallback_from:
            verdict = verdict.model_copy(update={"fallback_from": [self.configured_label]})
        return verdict

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class StoredBatch:
    """What `judge_stored` did with one batch of stored interactions."""

    verdict_ids: dict[str, str] = field(default_factory=dict)  # interaction id -> its verdict id (old or new)
    judged_now: int = 0
    already_judged: int = 0
    paused: list[str] = field(default_factory=list)  # interaction ids left unjudged: the spend cap holds


class JudgingRun:
    """One judging run: owns its run record, skips items already judged, keeps the counts and the summary.

    `lazy=True` starts the record on the first `start()` or judging call instead of on entry, so a run that
    finds nothing to do leaves no record. `retry_reasons`: unscored reasons (say "timeout") whose verdicts do
    not count as judged, so those items are judged again. `extra` holds the caller's own counts (quarantined
    rows, routed verdicts...), stored with the run's. `spend_cap`: the run pauses at the daily judge spend cap.
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
        configured: Judge | None = None,
        scrub_pii: bool | None = None,
        spend_cap: bool = False,
    ) -> None:
        self.engine, self.kind, self.name, self.identity = engine, kind, name, identity
        self.rubric, self.judge, self.params = rubric, judge, params or {}
        self.retry_reasons, self.lazy = frozenset(retry_reasons), lazy
        self.paused: str | None = None  # why judging paused (the spend cap's note), None while it judges
        self.paused_items = 0
        self.judge_config_hash = judge.identity(rubric).config_hash
        self.run_id: str | None = None
        self.extra: dict[str, Any] = {}
        self.judged_now = 0
        self.already_judged = 0
        self.reused = 0  # stored verdicts delivered instead of judging again (a resumed run)
        settings = get_settings()
        # PII is scrubbed from every item before it is stored as a new interaction or sent to the judge.
        self.scrubber = Scrubber() if (settings.pii_scrub if scrub_pii is None else scrub_pii) else None
        self.pii: Counter[str] = Counter()
        # Verdicts of interactions that came from a trace also go back onto their span (JUDGEWATCH_OTEL_EVALUATIONS).
        self.evaluations = evaluation_events(settings) if engine is not None else None
        self.heartbeat_s, self.expiry_s = settings.run_heartbeat_s, settings.run_expiry_s
        self.degraded_share = settings.run_degraded_share
        # Sampling-side runs pause at the daily spend cap (priced by the settings): None, never.
        self._cap_settings = settings if spend_cap and settings.judge_daily_spend_cap is not None else None
        # The judge the operator asked for (default: `judge`): its verdicts are the run's own, others' a fallback.
        self.configured_config_hash = configured.identity(rubric).config_hash if configured else self.judge_config_hash
        self._judging: Judge = judge
        if configured is not None and self.configured_config_hash != self.judge_config_hash:
            self._judging = _NotConfigured(judge, self.configured_config_hash, link_label(configured))
        self.fallback = 0  # verdicts made by another judge than the configured one
        self.endpoint_failed = 0  # verdicts left unscored because the endpoint failed
        self._last_beat = 0.0
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
        status = RunStatus.failed if exc is not None else RunStatus.degraded if self.degraded else RunStatus.completed
        if status is RunStatus.completed and self.paused:
            status = RunStatus.paused
        if status is RunStatus.degraded:
            logger.warning("run %s is degraded: %s", self.run_id, self.degraded_summary())
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
                expire_runs(session=session, expiry_s=self.expiry_s)
                rid = make_run_id(self.kind.value, self.identity, self.rubric.identity.hash, self.judge_config_hash)
                previous = get_run(session=session, run_id=rid)
                if previous is not None and previous.status != RunStatus.completed.value:
                    self.extra["restarted_from"] = previous.status  # running (another process?), failed, abandoned
                    logger.info("run %s was %s; starting it again", rid, previous.status)
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
            self._last_beat = time.monotonic()
        return self.run_id

    def beat(self) -> None:
        """Record that the run is alive, with its counts so far."""
        if self.run_id is not None and self.engine is not None:
            with session_scope(self.engine, write=True) as session:
                beat_run(session=session, run_id=self.run_id, counts=self.counts())
            self._last_beat = time.monotonic()

    # -- counts ----------------------------------------------------------------------------------------------

    @property
    def summary(self) -> JudgingSummary:
        """Every verdict made in this run so far: counts, latency percentiles, tokens, stored rows, time."""
        return self._tally.summary(self._stored, self._wall_s)

    def counts(self) -> dict[str, Any]:
        """The run record's counts: the summary, judged now / already judged / reused, and the caller's extra."""
        own: dict[str, Any] = {"judged_now": self.judged_now, "already_judged": self.already_judged,
                               "reused": self.reused}  # fmt: skip
        if self.fallback or self.endpoint_failed:
            own |= {"fallback": self.fallback, "endpoint_failed": self.endpoint_failed}
        if self.paused:
            own |= {"paused": self.paused, "paused_items": self.paused_items}
        return self.summary.model_dump(mode="json") | own | self.extra

    @property
    def not_own_share(self) -> float:
        """Share of this run's verdicts (judged now or reused) not made by the configured judge working normally."""
        total = self.judged_now + self.reused
        return (self.fallback + self.endpoint_failed) / total if total else 0.0

    @property
    def degraded(self) -> bool:
        return self.not_own_share > self.degraded_share

    def degraded_summary(self) -> str:
        """One line: how many verdicts are not the configured judge's, and the threshold they passed."""
        total = self.judged_now + self.reused
        return (
            f"{self.fallback + self.endpoint_failed} of {total} verdicts ({self.not_own_share:.1%}) are not the "
            f"configured judge's: {self.fallback} from a fallback judge, {self.endpoint_failed} unscored because the "
            f"endpoint failed (threshold {self.degraded_share:.0%})"
        )

    def _count(self, verdict: Verdict) -> None:
        if verdict.judge.config_hash != self.configured_config_hash:
            self.fallback += 1
        elif is_endpoint_failure(verdict):
            self.endpoint_failed += 1

    # -- judging ---------------------------------------------------------------------------------------------

    def already_judged_ids(
        self, interaction_ids: Sequence[str], *, retry_reasons: Collection[str] | None = None
    ) -> dict[str, str]:
        """{interaction id: verdict id} of those judged under this rubric and judge configuration already (a verdict
        unscored for one of `retry_reasons`, default the run's, is not)."""
        if self.engine is None or not interaction_ids:
            return {}
        with session_scope(self.engine) as session:
            return judged_interactions(
                session=session,
                interaction_ids=interaction_ids,
                rubric_hash=self.rubric.content_hash,
                judge_config_hash=self.judge_config_hash,
                retry_reasons=self.retry_reasons if retry_reasons is None else retry_reasons,
            )

    async def judge_stored(
        self,
        items: Sequence[tuple[str, JudgeItem]],
        *,
        force: Collection[str] = (),
        on_verdict: Callable[[str, Verdict], None] | None = None,
    ) -> StoredBatch:
        """Judge the stored interactions (interaction id, item) not judged yet (and those in `force`)."""
        unique = dict(items)
        done = self.already_judged_ids(list(unique))
        for key in force:
            done.pop(key, None)
        todo = [(key, item) for key, item in unique.items() if key not in done]
        batch = StoredBatch(verdict_ids=dict(done), already_judged=len(unique) - len(todo))
        self.already_judged += batch.already_judged
        if todo and self._cap_reached():
            batch.paused = [key for key, _ in todo]
            self.paused_items += len(todo)
            self.start()  # a run that only paused is recorded too: `runs list` says so
            return batch
        if not todo:
            return batch

        def seen(key: str, verdict: Verdict) -> None:
            # The verdict's own judge identity: a fallback link's verdict is stored under that link's config hash.
            batch.verdict_ids[key] = verdict_id(key, verdict.rubric.hash, verdict.judge.config_hash)
            if on_verdict is not None:
                on_verdict(key, verdict)

        on_stored: OnStored | None = None
        if self.evaluations is not None and self.engine is not None:
            with session_scope(self.engine) as session:
                spans = traced_spans(session=session, interaction_ids=[key for key, _ in todo])
            if spans:
                on_stored = partial(self.evaluations.emit, spans=spans, rubric=self.rubric)
        await self._judge(todo, new_source=None, on_verdict=seen, collect=False, on_stored=on_stored)
        batch.judged_now = len(todo)
        return batch

    def _cap_reached(self) -> bool:
        """Whether the day's judge spend reached the cap (read once per batch until it has: then for the run)."""
        if self.paused is not None or self._cap_settings is None or self.engine is None:
            return self.paused is not None
        with session_scope(self.engine) as session:
            spend = settings_day_spend(session, self._cap_settings)
        if spend.paused:
            self.paused = spend.pause_note()
            logger.warning("run %s: %s", self.name, self.paused)
        return spend.paused

    async def judge_new(
        self,
        items: Iterable[JudgeItem],
        *,
        source: str,
        on_verdict: Callable[[Verdict], None] | None = None,
        collect: bool = True,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        resume: bool = False,
    ) -> JudgingResult:
        """Judge new items of `source`, keyed by (source, item id). `resume=True` judges only those without a final
        stored verdict (docs/judging.md); the others are delivered in order from the store and counted in `reused`."""
        keyed: Iterable[tuple[str, JudgeItem]] = ((interaction_id(source, item.id), item) for item in items)
        reuse: dict[str, Verdict] | None = None
        if resume and self.engine is not None:
            reuse = {}
            keyed = self._with_stored(keyed, reuse)
        forward = (lambda _key, verdict: on_verdict(verdict)) if on_verdict is not None else None
        return await self._judge(
            keyed, new_source=source, on_verdict=forward, collect=collect, max_in_flight=max_in_flight, reuse=reuse
        )

    def _with_stored(
        self, keyed: Iterable[tuple[str, JudgeItem]], reuse: dict[str, Verdict]
    ) -> Iterator[tuple[str, JudgeItem]]:
        """The items unchanged, putting the stored verdict of each already judged one in `reuse` before it."""
        assert self.engine is not None
        retry = self.retry_reasons | RETRIED_REASONS  # only scored and not-applicable verdicts are final
        source = iter(keyed)
        while chunk := list(islice(source, RESUME_CHUNK)):
            judged = self.already_judged_ids([key for key, _ in chunk], retry_reasons=retry)
            with session_scope(self.engine) as session:
                records = get_verdicts(session=session, verdict_ids=list(judged.values())) if judged else []
                found = {record.interaction_id: record.to_verdict() for record in records}
            reuse.update(found)
            self.reused += len(found)
            yield from chunk

    def _scrubbed(self, items: Iterable[tuple[str, JudgeItem]], scrubber: Scrubber) -> Iterator[tuple[str, JudgeItem]]:
        for key, item in items:
            yield key, scrub_content(item, scrubber, self.pii)
        if self.pii:
            self.extra["pii_scrubbed"] = dict(self.pii)

    async def _judge(
        self,
        items: Iterable[tuple[str, JudgeItem]],
        *,
        new_source: str | None,
        on_verdict: Callable[[str, Verdict], None] | None,
        collect: bool,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        reuse: dict[str, Verdict] | None = None,
        on_stored: OnStored | None = None,
    ) -> JudgingResult:
        run_id = self.start()
        if self.scrubber is not None:
            items = self._scrubbed(items, self.scrubber)

        def delivered(key: str, verdict: Verdict) -> None:
            self._count(verdict)
            if time.monotonic() - self._last_beat >= self.heartbeat_s:
                self.beat()
            if on_verdict is not None:
                on_verdict(key, verdict)

        before = sum(self._tally.status.values())
        started = time.perf_counter()
        try:
            result = await judge_keyed(
                items,
                self.rubric,
                self._judging,
                engine=self.engine,
                run_id=run_id,
                new_source=new_source,
                on_verdict=delivered,
                collect=collect,
                max_in_flight=max_in_flight,
                tally=self._tally,
                reuse=reuse,
                on_stored=on_stored,
            )
        finally:
            self.judged_now += sum(self._tally.status.values()) - before
            self._wall_s += time.perf_counter() - started
        self._stored += result.summary.stored
        return result
