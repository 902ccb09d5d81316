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
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, cast

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import ProcessPoolTaskRunner

from flows.sampling_batches import (
    RUN_COUNTS,
    SamplingReport,
    StoringRun,
    batched,
    display_url,
    note_quarantine,
    store_partitions,
    tally,
)
from flows.sampling_partition import (
    PARTITION_DEPLOYMENT,
    PATIENCE_S,
    Launch,
    PartitionJob,
    deployment_launch,
    in_process_launch,
    run_partition_flows,
)
from flows.sampling_tasks import PartitionRead, peek_watermark, read_partition
from flows.serving import serve_declared, serve_main
from judges.factory import chain, judge_links
from judgewatch.contract.rubric import load_rubric
from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import REPO_ROOT, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.runs import RunKind
from judgewatch.storage.types import stable_id
from judgewatch.storage.watermarks import DEFAULT_LEASE_SECONDS, SourceLease, default_owner, load_watermark
from judgewatch.traffic import SourceConfig, Watermark, load_source_config
from judgewatch.traffic.partitions import SourcePartition, merge_watermarks, split_source
from judgewatch.traffic.start import parse_since, starting_point

logger = logging.getLogger(__name__)

FLOW_NAME = "traffic-sampling"
DEFAULT_BATCH_PICKS = 500


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
    partition_runs: bool = False,
    partition_deployment: str | None = PARTITION_DEPLOYMENT,
    partition_patience_s: float = PATIENCE_S,
) -> dict[str, Any]:
    """Sample what is new in the source `source` (a YAML config path) since its stored watermark.

    `since` re-reads a window instead (a time, an age like "24h", or a watermark JSON) and leaves the stored
    watermark alone. `dry_run` reads and samples only: nothing is stored, nothing judged. `judge`: "reference",
    URL(s) (default: the configured judge, falling back to the reference judge). `review_share` (default from
    settings, 10%) of scored verdicts go to review, plus `unscored_share` / `borderline_share` targeted picks.
    `partitions` > 1 splits a source of several files into that many runs of files, or a table into that many
    ranges of its (order, id) keys, read at once by mapped `read-partition` tasks (on a process pool with
    `partition_processes`); the watermark is saved per partition, in order (docs/sampling.md, "Partitions").
    `partition_runs` makes each partition a `sample-partition` flow run of its own instead, created from
    `partition_deployment` so that any worker of its work pool runs it (None: subflows of this process); the
    watermark advances over the partitions that completed, in order; children left waiting for
    `partition_patience_s` while none runs (no worker polls the pool) are cancelled and fail the run. A dry run
    always reads here.
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
            part.on_quarantine = lambda row: note_quarantine(report, row)
            report.batches += sum(1 for _ in batched(part.picks, batch_size))
            mark = merge_watermarks([mark, part.watermark] if mark else [part.watermark])
            tally(report, part.stats)
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
            judge_obj = chain(judge_links(judge, settings, rubric=rubric_obj))
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
            run = StoringRun(engine, lease, report, judging)
            try:
                with judging:
                    try:
                        if partition_runs:
                            job = {"rubric": rubric, "judge": judge, "review_share": review_share,
                                   "unscored_share": unscored_share, "borderline_share": borderline_share,
                                   "batch_size": batch_size, "database_url": database_url}  # fmt: skip
                            split = split_source(read_config, start, partitions)
                            launch = (deployment_launch(partition_deployment, partition_patience_s)
                                      if partition_deployment else in_process_launch)  # fmt: skip
                            await _in_flow_runs(run, split, start, identity, launch, job, since is None)
                        else:
                            parts = _partitions(read_config, start, partitions, processes=partition_processes)
                            await store_partitions(run, parts, start, policy, settings, batch_size, save=since is None)
                    finally:
                        judging.extra = report.model_dump(mode="json", include=RUN_COUNTS)
            finally:
                await judge_obj.aclose()
    finally:
        engine.dispose()
    return report.model_dump(mode="json")


async def _in_flow_runs(
    run: StoringRun, split: list[SourcePartition], start: Watermark | None, identity: str,
    launch: Launch, job: dict[str, Any], save: bool,
) -> None:  # fmt: skip
    """Each partition a `sample-partition` flow run, launched by `launch`: on the work pool, or a subflow here."""
    parent_run = run.ensure_run()  # the children's quarantined rows are tagged with it
    jobs = [PartitionJob.of(p, partitions=len(split), identity=identity, parent_run=parent_run, **job)
            for p in split]  # fmt: skip
    await run_partition_flows(run, jobs, start, launch, save=save)
    logger.info("source %s: %d partition flow runs read %d, picked %d, quarantined %d, judged %s, routed %s",
                run.report.source, len(jobs), run.report.read, run.report.picked, run.report.quarantined,
                run.report.judged, run.report.routed)  # fmt: skip


def _partitions(
    config: SourceConfig, start: Watermark | None, parts: int, *, processes: bool = False
) -> Iterator[PartitionRead]:
    """Each partition's picks, quarantined rows, counts and watermark, in order. One partition is read here,
    streaming; several are mapped as `read-partition` tasks, read at once and handed over in order: on the
    flow's threads, or with `processes` on a pool of processes (one per core at most), so that reading and
    deciding, which hold the GIL for most of their time, use every core."""
    split = split_source(config, start, parts)
    if len(split) == 1:
        yield PartitionRead.streaming(split[0])
        return
    if FlowRunContext.get() is None:  # the CLI's dry run calls the flow's function without Prefect
        yield from map(read_partition.fn, split)
        return
    if not processes:
        for future in read_partition.map(split):
            yield future.result()
        return
    with ProcessPoolTaskRunner(max_workers=min(len(split), os.cpu_count() or 1)) as runner:
        with _api_for_subprocesses():
            futures = runner.map(read_partition, {"partition": split})
        for read in futures:  # Prefect 3.9 types these as futures of futures; result() is the task's value
            yield cast(PartitionRead, read.result())


def _api_for_subprocesses() -> AbstractContextManager[object]:
    """Point the pool's processes at the API this flow reports to. With no PREFECT_API_URL (the CLI's ephemeral
    mode), each process would otherwise start a temporary server of its own (about 20 s each, measured)."""
    if PREFECT_API_URL.value():
        return nullcontext()
    return temporary_settings({PREFECT_API_URL: str(get_client().api_url).rstrip("/")})


def serve(deployment: str = FLOW_NAME, prefect_yaml: Path = REPO_ROOT / "prefect.yaml") -> None:
    """Serve the deployment as `prefect.yaml` declares it (schedule, concurrency limit), without a work pool."""
    serve_declared(traffic_sampling, deployment, prefect_yaml)


if __name__ == "__main__":  # `python -m flows.sampling serve`
    from flows.sampling import serve as serve_deployment  # the importable module's flow, not __main__'s

    serve_main("flows.sampling", serve_deployment)
