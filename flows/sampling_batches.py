"""The sampling flow's steps: the report, the storing run's state, and storing partitions batch by batch.

`store_partitions` is the one place picks become stored interactions, verdicts and review items: the
`traffic-sampling` flow runs it over its partitions, saving the watermark. Per bounded batch of picks: store the
quarantined rows read before them and the picks, judge the picks not judged yet, route a share of the verdicts to
review. `judge_paused` first judges the picks earlier runs of the source stored while the daily judge spend cap
held.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from prefect.utilities.annotations import quote
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlmodel import col, select

from flows.sampling_tasks import (
    PartitionRead,
    judge_picks,
    route_picks,
    save_checkpoint,
    store_picks,
    store_quarantined,
)
from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.paused import paused_ids, unpause
from judgewatch.storage.watermarks import SourceLease
from judgewatch.traffic import RejectedTrafficRow, Watermark
from judgewatch.traffic.partitions import merge_watermarks
from judgewatch.traffic.records import source_label
from judgewatch.traffic.sampling import SampleStats, StratumStats

logger = logging.getLogger(__name__)

QUARANTINE_FLUSH = 500  # quarantined rows buffered at most before they are stored
QUARANTINE_SHOWN = 20  # positions kept in the report
# The report's counts stored with the run record, beside the run's own (judged now, already judged, by status...).
RUN_COUNTS = {"read", "picked", "filtered", "duplicate", "quarantined", "stored", "routed", "review_items_created",
              "resumed"}  # fmt: skip
T = TypeVar("T")


class SamplingReport(BaseModel):
    """What one run read, picked, quarantined, stored, judged and routed (the flow's return value, as a dict)."""

    source: str
    config: str
    database: str
    dry_run: bool
    started_from: str  # "the start", "the stored watermark", "--since <value>"
    run_id: str | None = None
    read: int = 0
    picked: int = 0
    strata: dict[str, StratumStats] = Field(default_factory=dict)
    filtered: int = 0
    filtered_by: dict[str, int] = Field(default_factory=dict)
    duplicate: int = 0
    quarantined: int = 0
    quarantined_by: dict[str, int] = Field(default_factory=dict)
    quarantine_positions: list[str] = Field(default_factory=list)  # "position (reason)", the first few
    pii: dict[str, int] = Field(default_factory=dict)
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


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def display_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


class StoringRun:
    """The state of one storing run: the engine, the source lease (None in a partition's flow run: its parent holds
    it), the judging run (recorded on first write), the report."""

    def __init__(
        self, engine: Engine, lease: SourceLease | None, report: SamplingReport, judging: JudgingRun,
        *, quarantine_run: str | None = None,
    ) -> None:  # fmt: skip
        self.engine, self.lease, self.report, self.judging = engine, lease, report, judging
        self.quarantine_run = quarantine_run  # a partition's flow run tags its quarantined rows with the parent's run
        self.quarantined: list[RejectedTrafficRow] = []

    def ensure_run(self) -> str:
        run_id = self.judging.start()
        if run_id is None:  # the engine is always given here: a run that stores is recorded
            raise RuntimeError("the sampling run has no store to record its run in")
        self.report.run_id = run_id
        return run_id

    def on_quarantine(self, row: RejectedTrafficRow) -> None:
        self.quarantined.append(row)
        if len(self.quarantined) >= QUARANTINE_FLUSH:
            self.flush_quarantined()

    def flush_quarantined(self) -> None:
        if self.quarantined:
            rows, self.quarantined = self.quarantined, []
            store_quarantined(self.engine, quote(rows), self.quarantine_run or self.ensure_run())


def note_quarantine(report: SamplingReport, row: RejectedTrafficRow) -> None:
    if len(report.quarantine_positions) < QUARANTINE_SHOWN:
        report.quarantine_positions.append(f"{row.position} ({row.reason.value})")


def tally(report: SamplingReport, stats: SampleStats) -> None:
    """Add one partition's counts to the report (a single pass is one partition)."""
    report.read, report.picked, report.filtered = (
        report.read + stats.read,
        report.picked + stats.picked,
        report.filtered + stats.filtered,
    )
    report.duplicate, report.quarantined = report.duplicate + stats.duplicate, report.quarantined + stats.quarantined
    add_counts(report.filtered_by, stats.filtered_by)
    add_counts(report.quarantined_by, stats.quarantined_by)
    add_counts(report.pii, stats.pii)
    for name, counts in stats.strata.items():
        mine = report.strata.setdefault(name, StratumStats(rate=counts.rate))
        mine.eligible, mine.picked = mine.eligible + counts.eligible, mine.picked + counts.picked


def add_counts(target: dict[str, int], counts: dict[str, int]) -> None:
    target.update(Counter(target) + Counter(counts))


def _route(run: StoringRun, verdict_ids: Iterable[str], policy: RoutingPolicy, settings: Settings) -> None:
    routing = route_picks(run.engine, quote(list(verdict_ids)), policy, settings.rubrics_dir)
    add_counts(run.report.routed, routing.by_reason)
    run.report.review_items_created += routing.created


async def judge_paused(run: StoringRun, policy: RoutingPolicy, settings: Settings, batch_size: int) -> None:
    """Judge and route the picks of this source that earlier runs stored while the spend cap held, batch by
    batch, forgetting each once judged; stops (they keep waiting) if the cap holds still."""
    label, judging, after = source_label(run.report.source), run.judging, ""
    while True:
        with session_scope(run.engine) as session:
            ids = paused_ids(session=session, source=label, after=after, limit=batch_size)
            rows = session.exec(select(Interaction).where(col(Interaction.id).in_(ids))).all() if ids else []
        if not rows or judging.paused:
            break
        after = ids[-1]
        judged = await judging.judge_stored([(row.id, row.to_item()) for row in rows])
        if judged.paused:
            break
        run.report.resumed += judged.judged_now
        _route(run, judged.verdict_ids.values(), policy, settings)
        with session_scope(run.engine, write=True) as session:
            unpause(session=session, interaction_ids=list(judged.verdict_ids))
        judging.beat()
    run.report.run_id = judging.run_id
    if run.report.resumed:
        logger.info("source %s: %d picks paused by the spend cap judged now", run.report.source, run.report.resumed)


def _checkpoint(run: StoringRun, mark: Watermark, run_id: str | None) -> str:
    if run.lease is None:
        raise RuntimeError("only the run holding the source's lease saves its watermark")
    return save_checkpoint(run.engine, run.lease, run.report.source, mark, run_id)


async def store_partitions(
    run: StoringRun,
    parts: Iterable[PartitionRead],
    start: Watermark | None,
    policy: RoutingPolicy,
    settings: Settings,
    batch_size: int,
    *,
    save: bool,
) -> None:
    """Process the partitions `parts` of a read that began at `start`, batch by batch. One partition: checkpoint
    the watermark after each batch (when `save`). Several: after each partition, once the partitions before it
    are done, so the stored watermark never covers a pick not yet stored."""
    report, judging = run.report, run.judging
    last_saved = start.model_dump_json() if start else None
    mark = start
    for part in parts:

        def quarantine(row: RejectedTrafficRow) -> None:
            note_quarantine(report, row)
            run.on_quarantine(row)

        part.on_quarantine = quarantine
        for batch in batched(part.picks, batch_size):
            run_id = run.ensure_run()
            run.flush_quarantined()
            report.batches += 1
            report.stored += store_picks(run.engine, quote(batch))
            judged = await judge_picks(judging, quote(batch), run.lease)
            summary = judging.summary
            report.judged, report.unscored_reasons = dict(summary.by_status), dict(summary.by_unscored_reason)
            report.already_judged, report.paused = judging.already_judged, judging.paused
            report.paused_picks += len(judged.paused)
            _route(run, judged.verdict_ids.values(), policy, settings)
            if save and part.streamed:  # a single pass: its watermark stops at the last pick handed out
                current = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
                last_saved = _checkpoint(run, current, run_id)
                report.watermark_saved = True
            judging.extra = report.model_dump(mode="json", include=RUN_COUNTS)
            judging.beat()
        run.flush_quarantined()
        mark = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
        tally(report, part.stats)
        if save and mark.model_dump_json() != last_saved:  # rows read after the last pick: not picked
            last_saved = _checkpoint(run, mark, judging.run_id)
            report.watermark_saved = True
    report.watermark = (mark or Watermark()).model_dump(mode="json")
    logger.info(
        "source %s: read %d, picked %d, quarantined %d, judged %s, routed %s",
        report.source, report.read, report.picked, report.quarantined, report.judged, report.routed,
        extra={"run_id": judging.run_id, "source": report.source,
               "judge": judging.judge.identity(judging.rubric).name,
               "counts": {"read": report.read, "picked": report.picked, "quarantined": report.quarantined,
                          "judged": report.judged, "routed": report.routed}},
    )  # fmt: skip
