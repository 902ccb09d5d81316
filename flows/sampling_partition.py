"""Partitions as flow runs: `sample-partition` reads, stores, judges and routes one partition of a sampling run,
on whichever worker of the work pool takes it; `run_partitions` is the `traffic-sampling` run's side.
docs/sampling.md, "Partitions".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.deployments import arun_deployment
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled, State
from pydantic import BaseModel
from sqlalchemy import Engine, select

from flows.sampling_batches import (
    RunSettings,
    SamplingReport,
    StoringRun,
    merge_report,
    store_read,
    storing,
)
from flows.serving import serve_declared, serve_main
from judgewatch.redact import mask_url
from judgewatch.settings import REPO_ROOT, get_settings
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.runs import EvalRun, RunKind, RunStatus
from judgewatch.storage.types import stable_id
from judgewatch.storage.watermarks import (
    SourceLease,
    SourceWatermark,
    complete_partition,
    load_partitions,
    load_watermark,
    merge_partitions,
    partition_key,
    plan_partitions,
)
from judgewatch.traffic import SourceConfig, Watermark, load_source_config
from judgewatch.traffic.partitions import SourcePartition, merge_watermarks, partition_sampler, split_source
from judgewatch.traffic.start import starting_point

logger = logging.getLogger(__name__)

PARTITION_FLOW = "sample-partition"
PARTITION_DEPLOYMENT = f"{PARTITION_FLOW}/{PARTITION_FLOW}"  # prefect.yaml's deployment of this flow
POLL_S = 2.0  # how often the parent asks the server whether a partition's flow run has finished
PATIENCE_S = 900.0  # partitions waiting this long with none of them running: no worker is there to run them
REPORT_KEY = "partition_report"  # where a partition's run record keeps its report


class PartitionJob(BaseModel):
    """One `sample-partition` flow run's work, its one parameter: a partition of the source whose config is at
    `source` (read from there: a flow parameter never carries a database password) and the run's settings."""

    name: str  # the partition's row in the store ("<source name>#<k>/<N>") and its flow run's name
    source: str
    since: str | None = None  # the run's --since (a re-read: no watermark kept, no row in the store)
    partition: SourcePartition
    parts: int
    options: RunSettings
    database_url: str | None = None  # None: the worker's store

    @classmethod
    def template(cls, source: str, since: str | None, options: RunSettings, database_url: str | None) -> PartitionJob:
        """The run's part of every partition's job; `run_partitions` fills in the partition."""
        return cls(name="", source=source, since=since, partition=SourcePartition(index=0), parts=1, options=options,
                   database_url=database_url)  # fmt: skip

    @property
    def label(self) -> str:
        return f"{self.partition.index + 1}/{self.parts}"


@flow(name=PARTITION_FLOW)
async def sample_partition(job: PartitionJob) -> dict[str, Any]:
    """Read, decide, store, judge and route one partition, from its own watermark; its report (never the picks).
    Its files must be where the parent found them (shared storage): one missing fails the run naming it
    (`SourcePathError`), before anything is read."""
    url = job.database_url or get_settings().effective_database_url
    config, _, _ = starting_point(load_source_config(job.source), job.since, None)
    key, part, save = job.name, job.partition, job.since is None
    report = SamplingReport(source=key, config=job.source, database=mask_url(url), dry_run=False,
                            started_from=f"partition {job.label}'s start")  # fmt: skip
    engine = make_engine(url)
    try:
        if save and _row(engine, key) is None:
            raise PartitionGone(
                f"partition {key} is not part of an unfinished partitioned run in store {mask_url(url)} (read "
                "already, or the run's store is another: pass the run's --database-url)"
            )
        with SourceLease(engine, key) if save else nullcontext() as lease:
            row = _row(engine, key) if save else None
            if row is not None and row.completed_at is not None:
                report.started_from = f"partition {job.label}: read already"
                return report.model_dump(mode="json")
            if row is not None and row.watermark is not None:
                part = part.resumed(Watermark.model_validate_json(row.watermark))
                report.started_from = f"partition {job.label}'s own watermark"
            # started on entry: its record carries the report the parent reads, even for a partition with no picks
            async with storing(engine, lease, report, job.options, name=f"{PARTITION_FLOW}/{key}",
                               identity=_identity(job), params={"source": config.name, "partition": job.label},
                               lazy=False) as run:  # fmt: skip
                report.run_id = run.judging.run_id
                sampler, read = partition_sampler(config, part, on_quarantine=run.on_quarantine)
                await store_read(run, sampler, read, save=save)
                run.judging.extra[REPORT_KEY] = report.model_dump(mode="json")
            if save:
                with session_scope(engine, write=True) as session:
                    complete_partition(session=session, key=key)
    finally:
        engine.dispose()
    return report.model_dump(mode="json")


class PartitionGone(RuntimeError):
    """A partition's flow run whose row is gone: its run merged every partition already, or never planned it."""


class PartitionFailed(RuntimeError):
    """A partition's flow run did not complete: the source's watermark stays, the partition keeps its own."""


def _row(engine: Engine, key: str) -> SourceWatermark | None:
    with session_scope(engine) as session:
        return load_watermark(session=session, source=key)


def _identity(job: PartitionJob) -> str:
    """A partition's run record: the same for every attempt at the planned partition (and --since window)."""
    return f"{job.name}@" + stable_id(job.partition.model_dump_json(), job.since)


Launch = Callable[[PartitionJob], Awaitable[tuple[bool, str]]]  # (completed?, the flow run and its state)


def deployment_launch(deployment: str, patience_s: float = PATIENCE_S) -> Launch:
    """Partitions as flow runs of `deployment` on its work pool (linked to this run as subflows). One still waiting
    after `patience_s` with none running or finishing meanwhile is cancelled: no worker polls the pool."""
    progress = [time.monotonic()]

    async def launch(job: PartitionJob) -> tuple[bool, str]:
        try:
            child = await arun_deployment(
                deployment, parameters={"job": job.model_dump(mode="json")}, timeout=0, as_subflow=True,
                flow_run_name=job.name,
            )  # fmt: skip
        except ObjectNotFound:
            raise PartitionFailed(
                f"no deployment {deployment} on the Prefect server: `prefect deploy --all` creates it from "
                "prefect.yaml, or unset PREFECT_API_URL to read the partitions in this process (nothing was read)"
            ) from None
        what = f"flow run {child.name} ({child.id})"
        async with get_client() as client:
            while True:
                state = (await client.read_flow_run(child.id)).state
                if state is None or state.is_final():
                    progress[0] = time.monotonic()
                    return _outcome(state, what)
                if not (state.is_scheduled() or state.is_pending()):
                    progress[0] = time.monotonic()  # running: a worker has it
                elif time.monotonic() - progress[0] > patience_s:
                    waited = f"{state.type.value} after {patience_s:.0f} s with no partition running"
                    await client.set_flow_run_state(child.id, Cancelled(message=f"sampling gave up: {waited}"),
                                                    force=True)  # fmt: skip
                    return False, f"{what}: still {waited}; no worker polls the work pool of {deployment}"
                await asyncio.sleep(POLL_S)

    return launch


async def in_process_launch(job: PartitionJob) -> tuple[bool, str]:
    """A partition as a subflow run of this process (no server, no worker)."""
    return _outcome(await sample_partition(job=job, return_state=True), f"subflow of partition {job.label}")


def _outcome(state: State[Any] | None, what: str) -> tuple[bool, str]:
    if state is None:
        return False, f"{what}: no state"
    return state.is_completed(), f"{what}: {state.type.value}" + (f" ({state.message})" if state.message else "")


async def run_partitions(
    run: StoringRun, config: SourceConfig, start: Watermark | None, parts: int, job: PartitionJob,
    deployment: str | None,
) -> None:  # fmt: skip
    """The partitioned run (docs/sampling.md, "Partitions"): its plan, a flow run per partition not read yet (on
    `deployment`'s work pool, or here one after another), their reports added up, the merged watermark saved."""
    report, engine, save = run.report, run.engine, job.since is None
    with session_scope(engine, write=save) as session:
        planned = load_partitions(session=session, source=config.name) if save else []
        if planned:
            split = [SourcePartition.model_validate_json(row.partition or "") for row in planned]
            report.started_from = f"the unfinished partitions of an earlier run ({len(split)})"
        else:
            split = split_source(config, start, parts)
            if save:
                plan_partitions(session=session, source=config.name, partitions=[p.model_dump_json() for p in split])
    done = {k for k, row in enumerate(planned) if row.completed_at is not None}
    jobs = [job.model_copy(update={"name": partition_key(config.name, p.index, len(split)), "partition": p,
                                   "parts": len(split)}) for p in split]  # fmt: skip
    run.ensure_run()
    launch = in_process_launch if deployment is None else deployment_launch(deployment)
    pending = [j for j in jobs if j.partition.index not in done]
    outcomes = await _launch_all(pending, launch, run.lease, at_once=deployment is not None)
    marks = [start]
    for k, j in enumerate(jobs):
        ok, report.partitions[j.label] = outcomes.get(k, (True, "read by an earlier run"))
        if k in outcomes and ok:
            own = _report(engine, _identity(j))
            merge_report(report, own)
            marks.append(Watermark.model_validate(own.watermark))
    failed = [j.label for j in jobs if not outcomes.get(j.partition.index, (True, ""))[0]]
    if failed:
        raise PartitionFailed(
            "; ".join(f"partition {f} did not complete: {report.partitions[f]}" for f in failed)
            + ". Each partition keeps its own watermark: run the sampling again to resume it alone (the partitions "
            "read are not read again); the source's watermark moves once every partition is read."
        )
    if save:
        with session_scope(engine) as session:
            rows = load_partitions(session=session, source=config.name)
        marks = [start, *(Watermark.model_validate_json(r.watermark) if r.watermark else p.since
                          for r, p in zip(rows, split, strict=True))]  # fmt: skip
    merged = merge_watermarks([m for m in marks if m is not None])
    if save:
        if run.lease is not None:
            run.lease.renew()
        with session_scope(engine, write=True) as session:
            merge_partitions(session=session, source=config.name, watermark=merged.model_dump_json(),
                             run_id=report.run_id)  # fmt: skip
        report.watermark_saved = True
    report.watermark = merged.model_dump(mode="json")


async def _launch_all(
    jobs: list[PartitionJob], launch: Launch, lease: SourceLease | None, *, at_once: bool
) -> dict[int, tuple[bool, str]]:
    """Each job's outcome by partition index: all launched at once, or one after another; the source's lease is
    renewed while they run."""
    outcomes: dict[int, tuple[bool, str]] = {}
    queue, running = list(jobs), dict[asyncio.Future[tuple[bool, str]], int]()
    try:
        while queue or running:
            while queue and (at_once or not running):
                job = queue.pop(0)
                running[asyncio.ensure_future(launch(job))] = job.partition.index
            wait_s = lease.ttl_s / 3 if lease is not None else None
            done, _ = await asyncio.wait(set(running), timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            if lease is not None:
                lease.renew_if_due()
            for future in done:
                outcomes[running.pop(future)] = future.result()  # a launch that raised (no deployment) ends it all
    finally:
        for future in running:
            future.cancel()
    return outcomes


def _report(engine: Engine, identity: str) -> SamplingReport:
    """The report a completed partition left in its run record (the latest finished one of its identity)."""
    tbl = table(EvalRun)
    ok = (RunStatus.completed.value, RunStatus.degraded.value)
    with session_scope(engine) as session:
        counts = session.execute(
            select(tbl.c.counts)
            .where(tbl.c.kind == RunKind.sampling.value, tbl.c.identity == identity, tbl.c.status.in_(ok))
            .order_by(tbl.c.finished_at.desc())
            .limit(1)
        ).scalar_one_or_none()
    if not counts or REPORT_KEY not in counts:
        raise PartitionFailed(f"partition run {identity} completed but left no report in the store")
    return SamplingReport.model_validate(counts[REPORT_KEY])


if __name__ == "__main__":  # `python -m flows.sampling_partition serve`: partitions' runs without a work pool
    from flows.sampling_partition import sample_partition as served  # the importable module's flow, not __main__'s

    serve_main("flows.sampling_partition", lambda: serve_declared(served, PARTITION_FLOW, REPO_ROOT / "prefect.yaml"))
