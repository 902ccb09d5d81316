"""The `sample-partition` flow: one partition of a sampling run as a flow run of its own, which any worker of the
work pool picks up; and the parent's side, `run_partition_flows`: one child flow run per partition, waited for,
the watermark advanced over the partitions that completed, in order.

A child reads and decides its partition (dedup window warmed as in `judgewatch.traffic.partitions`), stores its
picks and quarantined rows, judges and routes them through `store_partitions`, the code a single pass uses; its
judge calls take the endpoint's global slots (`judges.budget`) like every other run's. It saves no watermark:
its run record (`eval_run`, identity `<parent identity>#k/K`) holds its report, counts and end watermark, which
the parent reads back from the store, so no result storage has to be shared between machines. Re-running a
child stores nothing twice (deterministic ids, upserts, a verdict per pick under one rubric and judge).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.deployments import arun_deployment
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled, State
from pydantic import BaseModel, field_validator
from sqlalchemy import Engine, select

from flows.sampling_batches import RUN_COUNTS, SamplingReport, StoringRun, display_url, merge_report, store_partitions
from flows.sampling_tasks import PartitionRead, save_checkpoint
from judges.factory import chain, judge_links
from judgewatch.contract.rubric import load_rubric
from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.runs import EvalRun, RunKind, RunStatus
from judgewatch.traffic import Watermark
from judgewatch.traffic.partitions import SourcePartition, merge_watermarks
from judgewatch.url_secrets import hide_in

logger = logging.getLogger(__name__)

PARTITION_FLOW = "sample-partition"
PARTITION_DEPLOYMENT = f"{PARTITION_FLOW}/{PARTITION_FLOW}"  # prefect.yaml's deployment of this flow
POLL_S = 2.0  # how often the parent asks the server whether a child flow run has finished
PATIENCE_S = 900.0  # children waiting this long with none of them running: no worker is there to run them
REPORT_KEY = "partition_report"  # where a child's run record keeps its report


class PartitionJob(BaseModel):
    """What one `sample-partition` flow run does, as its one JSON parameter: the partition (the source's config
    restricted to its files or key range, where it starts, the rows that warm its dedup window) and the run's
    judging and routing settings. `database_url` None: the worker's configured store."""

    partition: SourcePartition
    partitions: int
    identity: str  # the parent run's identity: the child's run record is `<identity>#k/K`
    parent_run: str  # the parent's run record: the child's quarantined rows are tagged with it
    rubric: str = "answer_quality"
    judge: str | None = None
    review_share: float | None = None
    unscored_share: float = 0.0
    borderline_share: float = 0.0
    batch_size: int = 500
    database_url: str | None = None
    files: list[str] = []  # the files the parent found for this partition and its dedup warm-up: the worker needs them

    @field_validator("judge", "database_url")
    @classmethod
    def _no_credential(cls, value: str | None) -> str | None:
        """A job is a flow run's parameter, which Prefect stores: its URLs carry no credential (the worker has
        them in its environment, `judgewatch.url_secrets`)."""
        return hide_in(value) if value else value

    @classmethod
    def of(cls, partition: SourcePartition, **fields: Any) -> PartitionJob:
        """The job of one partition; for a file source, with the files the parent found that the worker reads."""
        files: list[str] = []
        if partition.config.kind != "sql":
            warmup = list(partition.warmup.files) if partition.warmup is not None else []
            files = [p for p in [*warmup, *partition.config.paths] if Path(p).is_file()]
        return cls(partition=partition, files=files, **fields)

    def absent_files(self) -> list[str]:
        """The files the parent found that this machine does not see."""
        return [p for p in self.files if not Path(p).is_file()]

    @property
    def run_identity(self) -> str:
        return f"{self.identity}#{self.partition.index + 1}/{self.partitions}"

    @property
    def label(self) -> str:
        return f"partition {self.partition.index + 1} of {self.partitions}"


@flow(name=PARTITION_FLOW)
async def sample_partition(job: PartitionJob) -> dict[str, Any]:
    """Read, decide, store, judge and route one partition of a `traffic-sampling` run; its report (counts and
    its end watermark, never the picks). The parent saves the watermark, once every partition before is done."""
    absent = job.absent_files()
    if absent:  # quarantining them would pass for a read: every worker needs the files where the parent saw them
        raise FileNotFoundError(
            f"{job.label}: {len(absent)} of its files are not on worker host {socket.gethostname()}, first "
            f"{absent[0]}: every worker needs the source's files at the path the parent found them (shared storage)"
        )
    settings = get_settings()
    url = job.database_url or settings.effective_database_url
    part, config = job.partition, job.partition.config
    report = SamplingReport(
        source=config.name, config=f"{job.label}: {part.describe()}", database=display_url(url), dry_run=False,
        started_from=f"{job.label} of run {job.parent_run}",
    )  # fmt: skip
    engine = make_engine(url)
    try:
        rubric_obj = load_rubric(job.rubric, settings.rubrics_dir)
        judge_obj = chain(judge_links(job.judge, settings))
        judging = JudgingRun(
            engine,
            kind=RunKind.sampling,
            name=f"{PARTITION_FLOW}/{config.name} {part.index + 1}/{job.partitions}",
            identity=job.run_identity,
            rubric=rubric_obj,
            judge=judge_obj,
            params={"source": config.name, "parent_run": job.parent_run, "partition": part.index},
        )  # started on entry: the record carries the outcome the parent reads, even for an empty partition
        policy = RoutingPolicy.from_settings(
            settings,
            review_share=job.review_share,
            unscored_share=job.unscored_share,
            borderline_share=job.borderline_share,
        )
        run = StoringRun(engine, None, report, judging, quarantine_run=job.parent_run)
        try:
            with judging:
                report.run_id = judging.run_id
                await store_partitions(
                    run, [PartitionRead.streaming(part)], part.since, policy, settings, job.batch_size, save=False
                )
                judging.extra = report.model_dump(mode="json", include=RUN_COUNTS) | {
                    REPORT_KEY: report.model_dump(mode="json")
                }
        finally:
            await judge_obj.aclose()
    finally:
        engine.dispose()
    return report.model_dump(mode="json", exclude={"strata", "quarantine_positions"})


Launch = Callable[[PartitionJob], Awaitable[tuple[bool, str]]]  # (completed?, the child run and its state)


class Idle:
    """When the children last made progress: one was running, or one finished. Children that wait (scheduled,
    pending) while none has made progress for `patience_s` have no worker to run them."""

    def __init__(self, patience_s: float) -> None:
        self.patience_s = patience_s
        self.since = time.monotonic()

    def progress(self) -> None:
        self.since = time.monotonic()

    def too_long(self) -> bool:
        return time.monotonic() - self.since > self.patience_s


def deployment_launch(deployment: str, patience_s: float = PATIENCE_S) -> Launch:
    """Children as flow runs of `deployment` on its work pool (`run_deployment`, linked as subflows). A child
    still waiting after `patience_s` with no child running or finishing meanwhile is cancelled and fails the
    run: nothing polls the work pool (a child queued behind busy workers is not cancelled)."""
    idle = Idle(patience_s)

    async def launch(job: PartitionJob) -> tuple[bool, str]:
        try:
            child = await arun_deployment(
                deployment,
                parameters={"job": job.model_dump(mode="json")},
                flow_run_name=f"{job.partition.config.name}-{job.partition.index + 1}-of-{job.partitions}",
                as_subflow=True,
                timeout=0,  # created; waited for below
            )
        except ObjectNotFound:
            raise PartitionFailed(
                f"no deployment {deployment} on the Prefect server: `prefect deploy --all` creates it from "
                "prefect.yaml (nothing was read)"
            ) from None
        what = f"flow run {child.name} ({child.id})"
        async with get_client() as client:
            while True:
                state = (await client.read_flow_run(child.id)).state
                if state is None or state.is_final():
                    idle.progress()
                    return _outcome(state, what)
                if not (state.is_scheduled() or state.is_pending()):
                    idle.progress()  # running (or being cancelled, paused): a worker has it
                elif idle.too_long():
                    waited = f"{state.type.value} after {patience_s:.0f} s with no partition running"
                    await client.set_flow_run_state(child.id, Cancelled(message=f"sampling parent gave up: {waited}"),
                                                    force=True)  # fmt: skip
                    return False, (
                        f"{what}: still {waited}; no worker polls the work pool of {deployment} "
                        "(`prefect worker start --pool ...`), so it was cancelled"
                    )
                await asyncio.sleep(POLL_S)

    return launch


async def in_process_launch(job: PartitionJob) -> tuple[bool, str]:
    """Children as subflow runs of this process: each still a `sample-partition` flow run, no worker needed."""
    state = await sample_partition(job=job, return_state=True)
    return _outcome(state, f"subflow {job.label}")


def _outcome(state: State[Any] | None, what: str) -> tuple[bool, str]:
    if state is None:
        return False, f"{what}: no state"
    return state.is_completed(), f"{what}: {state.type.value}" + (f" ({state.message})" if state.message else "")


class PartitionFailed(RuntimeError):
    """A child flow run did not complete: the watermark stays after the partitions before it."""


async def run_partition_flows(
    run: StoringRun, jobs: list[PartitionJob], start: Watermark | None, launch: Launch, *, save: bool
) -> None:
    """Launch every job at once; as children finish, add the reports of the completed prefix (partitions 1..j,
    all completed) to the run's and, when `save`, save the watermark merged over that prefix. Raises
    PartitionFailed after the others have finished when a child did not complete."""
    report, lease = run.report, run.lease
    futures = {asyncio.ensure_future(launch(job)): job.partition.index for job in jobs}
    finished: dict[int, tuple[bool, str]] = {}
    mark, last_saved, prefix = start, start.model_dump_json() if start else None, 0
    pending = set(futures)
    try:
        while pending:
            wait_s = lease.ttl_s / 3 if lease is not None else None
            done, pending = await asyncio.wait(pending, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            if lease is not None:
                lease.renew_if_due()
            for future in done:
                finished[futures[future]] = future.result()  # a launch that raised (no such deployment) ends it
            while prefix < len(jobs) and finished.get(prefix, (False, ""))[0]:
                own = read_partition_report(run.engine, jobs[prefix])
                merge_report(report, own)
                mark = merge_watermarks([mark, Watermark.model_validate(own.watermark)] if mark else
                                        [Watermark.model_validate(own.watermark)])  # fmt: skip
                prefix += 1
            if save and mark is not None and lease is not None and mark.model_dump_json() != last_saved:
                last_saved = save_checkpoint(run.engine, lease, report.source, mark, run.judging.run_id)
                report.watermark_saved = True
    finally:
        for future in pending:
            future.cancel()
    report.watermark = (mark or Watermark()).model_dump(mode="json")
    failed = [(i, what) for i, (ok, what) in sorted(finished.items()) if not ok]
    if failed:
        where = f"after partition {prefix}" if prefix else "where the run started"
        raise PartitionFailed(
            "; ".join(f"{jobs[i].label} did not complete: {what}" for i, what in failed)
            + f". The watermark stays {where}; a rerun reads from there and stores nothing twice."
        )


def read_partition_report(engine: Engine, job: PartitionJob) -> SamplingReport:
    """The report a completed child left in its run record (the latest finished one of its identity)."""
    tbl = table(EvalRun)
    ok = (RunStatus.completed.value, RunStatus.degraded.value)
    with session_scope(engine) as session:
        counts = session.execute(
            select(tbl.c.counts)
            .where(tbl.c.kind == RunKind.sampling.value, tbl.c.identity == job.run_identity, tbl.c.status.in_(ok))
            .order_by(tbl.c.finished_at.desc())
            .limit(1)
        ).scalar_one_or_none()
    if not counts or REPORT_KEY not in counts:
        raise PartitionFailed(f"{job.label} completed but left no report in the store (run {job.run_identity})")
    return SamplingReport.model_validate(counts[REPORT_KEY])
