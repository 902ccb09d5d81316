"""The `traffic-sampling` flow: read what is new in a traffic source, sample it, store, judge and route the picks.

Per bounded batch of picks: store the picked interactions (inclusion probability, stratum, salt and PII counts
in their metadata) and the quarantined rows read before them, judge the picks not judged yet, route a share of
the verdicts to review, and only then save the source's watermark. A crash re-reads at most one batch; re-reading
stores nothing twice (deterministic ids, upserts). One run per source at a time: a database lease
(`judgewatch.storage.watermarks`) and the deployment's concurrency limit in `prefect.yaml`.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import ProcessPoolTaskRunner
from prefect.utilities.annotations import quote
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from flows.sampling_tasks import (
    PartitionRead,
    judge_picks,
    peek_watermark,
    route_picks,
    sample_partition,
    save_checkpoint,
    store_picks,
    store_quarantined,
)
from flows.serving import serve_declared, serve_main
from judges.factory import chain, judge_links
from judgewatch.contract.rubric import load_rubric
from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import REPO_ROOT, Settings, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.runs import RunKind
from judgewatch.storage.types import stable_id
from judgewatch.storage.watermarks import DEFAULT_LEASE_SECONDS, SourceLease, default_owner, load_watermark
from judgewatch.traffic import RejectedTrafficRow, SourceConfig, Watermark, load_source_config
from judgewatch.traffic.partitions import merge_watermarks, split_source
from judgewatch.traffic.sampling import SampleStats, StratumStats
from judgewatch.traffic.start import parse_since, starting_point

logger = logging.getLogger(__name__)

FLOW_NAME = "traffic-sampling"
DEFAULT_BATCH_PICKS = 500
QUARANTINE_FLUSH = 500  # quarantined rows buffered at most before they are stored
QUARANTINE_SHOWN = 20  # positions kept in the report
# The report's counts stored with the run record, beside the run's own (judged now, already judged, by status...).
_RUN_COUNTS = {"read", "picked", "filtered", "duplicate", "quarantined", "stored", "routed", "review_items_created"}
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
    watermark: dict[str, Any] = Field(default_factory=dict)  # where the next run starts reading
    watermark_saved: bool = False


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


class _Run:
    """The state of one storing run: the engine, the lease, the judging run (recorded on first write), the report."""

    def __init__(self, engine: Engine, lease: SourceLease, report: SamplingReport, judging: JudgingRun) -> None:
        self.engine, self.lease, self.report, self.judging = engine, lease, report, judging
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
            store_quarantined(self.engine, quote(rows), self.ensure_run())


def _note_quarantine(report: SamplingReport, row: RejectedTrafficRow) -> None:
    if len(report.quarantine_positions) < QUARANTINE_SHOWN:
        report.quarantine_positions.append(f"{row.position} ({row.reason.value})")


def _tally(report: SamplingReport, stats: SampleStats) -> None:
    """Add one partition's counts to the report (a single pass is one partition)."""
    report.read, report.picked, report.filtered = (
        report.read + stats.read,
        report.picked + stats.picked,
        report.filtered + stats.filtered,
    )
    report.duplicate, report.quarantined = report.duplicate + stats.duplicate, report.quarantined + stats.quarantined
    _add(report.filtered_by, stats.filtered_by)
    _add(report.quarantined_by, stats.quarantined_by)
    _add(report.pii, stats.pii)
    for name, counts in stats.strata.items():
        mine = report.strata.setdefault(name, StratumStats(rate=counts.rate))
        mine.eligible, mine.picked = mine.eligible + counts.eligible, mine.picked + counts.picked


def _add(target: dict[str, int], counts: dict[str, int]) -> None:
    target.update(Counter(target) + Counter(counts))


@flow(name=FLOW_NAME)
async def traffic_sampling(
    source: str,
    since: str | None = None,
    dry_run: bool = False,
    judge: str | None = None,
    rubric: str = "answer_quality",
    review_share: float | None = None,
    unscored_share: float = 0.0,
    borderline_share: float = 0.0,
    batch_size: int = DEFAULT_BATCH_PICKS,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    database_url: str | None = None,
    partitions: int = 1,
    partition_processes: bool = False,
) -> dict[str, Any]:
    """Sample what is new in the source `source` (a YAML config path) since its stored watermark.

    `since` re-reads a window instead (a time, an age like "24h", or a watermark JSON) and leaves the stored
    watermark alone. `dry_run` reads and samples only: nothing is stored, nothing judged. `judge`: "reference",
    URL(s) (default: the configured judge, falling back to the reference judge). `review_share` (default from
    settings, 10%) of scored verdicts go to review, plus `unscored_share` / `borderline_share` targeted picks.
    `partitions` > 1 splits a source of several files into that many runs of files, or a table into that many
    ranges of its (order, id) keys, read at once by mapped `sample-partition` tasks (on a process pool with
    `partition_processes`); the watermark is saved per partition, in order (docs/sampling.md, "Partitions").
    Raises SourceBusy when another run holds the source.
    """
    if batch_size < 1 or partitions < 1:
        raise ValueError("batch_size and partitions must be >= 1")
    if since is not None:
        parse_since(since)  # a bad value fails before anything is opened
    settings = get_settings()
    config = load_source_config(source)
    url = database_url or settings.effective_database_url
    report = SamplingReport(
        source=config.name, config=str(source), database=display_url(url), dry_run=dry_run, started_from=""
    )
    if dry_run:
        read_config, start, report.started_from = starting_point(config, since, peek_watermark(url, config.name))
        mark = start
        for part in _partitions(read_config, start, partitions, processes=partition_processes):
            part.on_quarantine = lambda row: _note_quarantine(report, row)
            report.batches += sum(1 for _ in batched(part.picks, batch_size))
            mark = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
            _tally(report, part.stats)
        report.watermark = (mark or Watermark()).model_dump(mode="json")
        return report.model_dump(mode="json")
    engine = make_engine(url)
    try:
        migrate(engine)
        owner = f"{default_owner()}:{flow_run.id or 'local'}"
        with SourceLease(engine, config.name, owner=owner, ttl_s=lease_seconds) as lease:
            with session_scope(engine) as session:
                stored = load_watermark(session=session, source=config.name)
            stored_json = stored.watermark if stored else None
            read_config, start, report.started_from = starting_point(config, since, stored_json)
            identity = f"{config.name}@" + stable_id(start.model_dump_json() if start else "", read_config.filters)
            rubric_obj = load_rubric(rubric, settings.rubrics_dir)
            judge_obj = chain(judge_links(judge, settings))
            judging = JudgingRun(
                engine,
                kind=RunKind.sampling,
                name=f"{FLOW_NAME}/{report.source}",
                identity=identity,
                rubric=rubric_obj,
                judge=judge_obj,
                params={"source": report.source, "started_from": report.started_from},
                lazy=True,  # recorded on the first batch or quarantined row: a run that reads nothing leaves none
            )
            policy = RoutingPolicy.from_settings(
                settings, review_share=review_share, unscored_share=unscored_share, borderline_share=borderline_share
            )
            run = _Run(engine, lease, report, judging)
            try:
                with judging:
                    try:
                        parts = _partitions(read_config, start, partitions, processes=partition_processes)
                        await _sample(run, parts, start, policy, settings, batch_size, save=since is None)
                    finally:
                        judging.extra = report.model_dump(mode="json", include=_RUN_COUNTS)
            finally:
                await judge_obj.aclose()
    finally:
        engine.dispose()
    return report.model_dump(mode="json")


def _partitions(
    config: SourceConfig, start: Watermark | None, parts: int, *, processes: bool = False
) -> Iterator[PartitionRead]:
    """Each partition's picks, quarantined rows, counts and watermark, in order. One partition is read here,
    streaming; several are mapped as `sample-partition` tasks, read at once and handed over in order: on the
    flow's threads, or with `processes` on a pool of processes (one per core at most), so that reading and
    deciding, which hold the GIL for most of their time, use every core."""
    split = split_source(config, start, parts)
    if len(split) == 1:
        yield PartitionRead.streaming(split[0])
        return
    if FlowRunContext.get() is None:  # the CLI's dry run calls the flow's function without Prefect
        yield from map(sample_partition.fn, split)
        return
    if not processes:
        for future in sample_partition.map(split):
            yield future.result()
        return
    with ProcessPoolTaskRunner(max_workers=min(len(split), os.cpu_count() or 1)) as runner:
        with _api_for_subprocesses():
            futures = runner.map(sample_partition, {"partition": split})
        for read in futures:  # Prefect 3.9 types these as futures of futures; result() is the task's value
            yield cast(PartitionRead, read.result())


def _api_for_subprocesses() -> AbstractContextManager[object]:
    """Point the pool's processes at the API this flow reports to. With no PREFECT_API_URL (the CLI's ephemeral
    mode), each process would otherwise start a temporary server of its own (about 20 s each, measured)."""
    if PREFECT_API_URL.value():
        return nullcontext()
    return temporary_settings({PREFECT_API_URL: str(get_client().api_url).rstrip("/")})


async def _sample(
    run: _Run,
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
            _note_quarantine(report, row)
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
            report.already_judged = judging.already_judged
            routing = route_picks(run.engine, quote(list(judged.verdict_ids.values())), policy, settings.rubrics_dir)
            _add(report.routed, routing.by_reason)
            report.review_items_created += routing.created
            if save and part.streamed:  # a single pass: its watermark stops at the last pick handed out
                current = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
                last_saved = save_checkpoint(run.engine, run.lease, report.source, current, run_id)
                report.watermark_saved = True
            judging.extra = report.model_dump(mode="json", include=_RUN_COUNTS)
            judging.beat()
        run.flush_quarantined()
        mark = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
        _tally(report, part.stats)
        if save and mark.model_dump_json() != last_saved:  # rows read after the last pick: not picked
            last_saved = save_checkpoint(run.engine, run.lease, report.source, mark, judging.run_id)
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


def serve(deployment: str = FLOW_NAME, prefect_yaml: Path = REPO_ROOT / "prefect.yaml") -> None:
    """Serve the deployment as `prefect.yaml` declares it (schedule, concurrency limit), without a work pool."""
    serve_declared(traffic_sampling, deployment, prefect_yaml)


if __name__ == "__main__":  # `python -m flows.sampling serve`
    from flows.sampling import serve as serve_deployment  # the importable module's flow, not __main__'s

    serve_main("flows.sampling", serve_deployment)
