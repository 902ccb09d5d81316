"""The sampling flow's steps: the report, the storing run's state, and storing a read batch by batch.

`store_read` is the one place picks become stored interactions, verdicts and review items: the `traffic-sampling`
flow's single pass and every `sample-partition` flow run call it, each saving its own watermark after every batch
(a crash re-reads at most one batch; re-reading stores nothing twice).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from itertools import islice
from typing import Any, TypeVar

from prefect.utilities.annotations import quote
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlmodel import col, select

from flows.sampling_tasks import judge_picks, route_picks, save_checkpoint, store_picks, store_quarantined
from judges.factory import chain, judge_links
from judgewatch.contract.rubric import load_rubric
from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import get_settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.paused import paused_ids, unpause
from judgewatch.storage.runs import RunKind
from judgewatch.storage.watermarks import SourceLease
from judgewatch.traffic import RejectedTrafficRow, Sampler, SourceRead
from judgewatch.traffic.records import source_label
from judgewatch.traffic.sampling import SampleStats, add_counts

logger = logging.getLogger(__name__)

QUARANTINE_FLUSH = 500  # quarantined rows buffered at most before they are stored
QUARANTINE_SHOWN = 20  # positions kept in the report
# The report's counts stored with the run record, beside the run's own (judged now, already judged, by status...).
RUN_COUNTS = {"read", "picked", "filtered", "duplicate", "quarantined", "stored", "routed", "review_items_created",
              "resumed"}  # fmt: skip
T = TypeVar("T")


class SamplingReport(SampleStats):
    """What one run read, picked, quarantined (its `SampleStats`), stored, judged and routed (the flow's return
    value, as a dict)."""

    source: str
    config: str
    database: str
    dry_run: bool
    started_from: str  # "the start", "the stored watermark", "--since <value>"
    run_id: str | None = None
    quarantine_positions: list[str] = Field(default_factory=list)  # "position (reason)", the first few
    batches: int = 0
    stored: int = 0  # interactions upserted
    judged: dict[str, int] = Field(default_factory=dict)  # status -> verdicts made now
    unscored_reasons: dict[str, int] = Field(default_factory=dict)
    already_judged: int = 0  # picks with a verdict under this rubric and judge already (a re-read window)
    routed: dict[str, int] = Field(default_factory=dict)  # pick reason -> verdicts routed to review
    review_items_created: int = 0
    paused: str | None = None  # why judging paused (the daily spend cap), None when it did not
    paused_picks: int = 0  # picks stored without a verdict, judged by the next UTC day's runs
    resumed: int = 0  # picks of earlier paused runs judged by this one
    watermark: dict[str, Any] = Field(default_factory=dict)  # where the next run starts reading
    watermark_saved: bool = False
    alerts: dict[str, Any] = Field(default_factory=dict)  # the alert rules checked after the run (alerts.check)
    partitions: dict[str, str] = Field(default_factory=dict)  # "k/N" -> what became of it (a partitioned run)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`itertools.batched` (Python 3.12) as lists."""
    rest = iter(items)
    while batch := list(islice(rest, size)):
        yield batch


class RunSettings(BaseModel):
    """How a sampling run judges and routes its picks: the flow's options, which its partitions' runs take too."""

    rubric: str = "answer_quality"
    judge: str | None = None  # "reference" or URL(s); None: the configured judge
    review_share: float | None = None  # None: the settings' share
    unscored_share: float = 0.0
    borderline_share: float = 0.0
    batch_size: int = 500


class StoringRun:
    """The state of one storing run: the engine, the lease of what it reads (a source, or a partition of one; None
    for a partition of a --since re-read), the judging run (recorded on first write), the routing, the report."""

    def __init__(self, engine: Engine, lease: SourceLease | None, report: SamplingReport, judging: JudgingRun,
                 policy: RoutingPolicy, batch_size: int) -> None:  # fmt: skip
        self.engine, self.lease, self.report, self.judging = engine, lease, report, judging
        self.policy, self.batch_size = policy, batch_size
        self.quarantined: list[RejectedTrafficRow] = []

    def ensure_run(self) -> str:
        run_id = self.judging.start()
        if run_id is None:  # the engine is always given here: a run that stores is recorded
            raise RuntimeError("the sampling run has no store to record its run in")
        self.report.run_id = run_id
        return run_id

    def on_quarantine(self, row: RejectedTrafficRow) -> None:
        note_quarantine(self.report, row)
        self.quarantined.append(row)
        if len(self.quarantined) >= QUARANTINE_FLUSH:
            self.flush_quarantined()

    def flush_quarantined(self) -> None:
        if self.quarantined:
            rows, self.quarantined = self.quarantined, []
            store_quarantined(self.engine, quote(rows), self.ensure_run())


@asynccontextmanager
async def storing(
    engine: Engine, lease: SourceLease | None, report: SamplingReport, options: RunSettings, *, name: str,
    identity: str, params: dict[str, Any], lazy: bool,
) -> AsyncIterator[StoringRun]:  # fmt: skip
    """A storing run with its rubric, judge (closed on exit) and routing; its run record (started on entry unless
    `lazy`: then on its first write) keeps the report's counts beside its own and ends failed if the body raises."""
    settings = get_settings()
    rubric = load_rubric(options.rubric, settings.rubrics_dir)
    judge = chain(judge_links(options.judge, settings, rubric=rubric, engine=engine))
    judging = JudgingRun(engine, kind=RunKind.sampling, name=name, identity=identity, rubric=rubric, judge=judge,
                         params=params, lazy=lazy, spend_cap=True)  # fmt: skip  # judging pauses at the spend cap
    policy = RoutingPolicy.from_settings(settings, review_share=options.review_share,
                                         unscored_share=options.unscored_share,
                                         borderline_share=options.borderline_share)  # fmt: skip
    try:
        with judging:
            try:
                yield StoringRun(engine, lease, report, judging, policy, options.batch_size)
            finally:
                judging.extra |= report.model_dump(mode="json", include=RUN_COUNTS)
    finally:
        await judge.aclose()


def note_quarantine(report: SamplingReport, row: RejectedTrafficRow) -> None:
    if len(report.quarantine_positions) < QUARANTINE_SHOWN:
        report.quarantine_positions.append(f"{row.position} ({row.reason.value})")


def _route(run: StoringRun, verdict_ids: Iterable[str]) -> None:
    routing = route_picks(run.engine, quote(list(verdict_ids)), run.policy, get_settings().rubrics_dir)
    add_counts(run.report.routed, routing.by_reason)
    run.report.review_items_created += routing.created


async def judge_paused(run: StoringRun) -> None:
    """Judge and route the picks of this source that earlier runs stored while the spend cap held, batch by
    batch, forgetting each once judged; stops (they keep waiting) if the cap holds still."""
    label, judging, after = source_label(run.report.source), run.judging, ""
    while True:
        with session_scope(run.engine) as session:
            ids = paused_ids(session=session, source=label, after=after, limit=run.batch_size)
            rows = session.exec(select(Interaction).where(col(Interaction.id).in_(ids))).all() if ids else []
        if not rows or judging.paused:
            break
        after = ids[-1]
        judged = await judging.judge_stored([(row.id, row.to_item()) for row in rows])
        if judged.paused:
            break
        run.report.resumed += judged.judged_now
        _route(run, judged.verdict_ids.values())
        with session_scope(run.engine, write=True) as session:
            unpause(session=session, interaction_ids=list(judged.verdict_ids))
        judging.beat()
    run.report.run_id = judging.run_id
    if run.report.resumed:
        logger.info("source %s: %d picks paused by the spend cap judged now", run.report.source, run.report.resumed)


def merge_report(report: SamplingReport, part: SamplingReport) -> None:
    """Add a partition's own report (a `sample-partition` flow run's) to the run's; the watermark is the caller's."""
    report.add(part)
    for name in ("batches", "stored", "already_judged", "review_items_created", "paused_picks", "resumed"):
        setattr(report, name, getattr(report, name) + getattr(part, name))
    report.paused = report.paused or part.paused
    for mine, theirs in ((report.judged, part.judged), (report.unscored_reasons, part.unscored_reasons),
                         (report.routed, part.routed)):  # fmt: skip
        add_counts(mine, theirs)
    report.quarantine_positions += part.quarantine_positions[
        : max(QUARANTINE_SHOWN - len(report.quarantine_positions), 0)
    ]


async def store_read(run: StoringRun, sampler: Sampler, read: SourceRead, *, save: bool) -> None:
    """Sample `read` (built with `run.on_quarantine`), store, judge and route its picks batch by batch; when `save`,
    save the watermark of what `run.lease` holds after each batch and at the end, so the stored one never covers a
    pick not yet stored."""
    report, judging = run.report, run.judging
    lease = run.lease if save else None
    last_saved = read.since.model_dump_json() if read.since else None
    for batch in batched(sampler.run(read), run.batch_size):
        run_id = run.ensure_run()
        run.flush_quarantined()
        report.batches += 1
        report.stored += store_picks(run.engine, quote(batch))
        judged = await judge_picks(judging, quote(batch), run.lease)
        summary = judging.summary
        report.judged, report.unscored_reasons = dict(summary.by_status), dict(summary.by_unscored_reason)
        report.already_judged, report.paused = judging.already_judged, judging.paused
        report.paused_picks += len(judged.paused)
        _route(run, judged.verdict_ids.values())
        if lease is not None:  # the watermark stops at the last pick handed out
            last_saved = save_checkpoint(run.engine, lease, read.watermark, run_id)
            report.watermark_saved = True
        judging.extra |= report.model_dump(mode="json", include=RUN_COUNTS)
        judging.beat()
    run.flush_quarantined()
    report.add(sampler.stats)
    mark = read.watermark
    if lease is not None and mark.model_dump_json() != last_saved:  # rows read after the last pick: not picked
        save_checkpoint(run.engine, lease, mark, judging.run_id)
        report.watermark_saved = True
    report.watermark = mark.model_dump(mode="json")
    logger.info(
        "source %s: read %d, picked %d, quarantined %d, judged %s, routed %s",
        report.source, report.read, report.picked, report.quarantined, report.judged, report.routed,
        extra={"run_id": judging.run_id, "source": report.source,
               "judge": judging.judge.identity(judging.rubric).name,
               "counts": {"read": report.read, "picked": report.picked, "quarantined": report.quarantined,
                          "judged": report.judged, "routed": report.routed}},
    )  # fmt: skip
