"""The `traffic-sampling` flow: read what is new in a traffic source, sample it, store, judge and route the picks.

Per bounded batch of picks: store the picked interactions (inclusion probability, stratum, salt and PII counts
in their metadata) and the quarantined rows read before them, judge the picks not judged yet, route a share of
the verdicts to review, and only then save the source's watermark. A crash re-reads at most one batch; re-reading
stores nothing twice (deterministic ids, upserts). One run per source at a time: a database lease
(`judgewatch.storage.watermarks`) and the deployment's concurrency limit in `prefect.yaml`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.context import FlowRunContext
from prefect.runtime import flow_run

from flows.sampling_batches import (
    RUN_COUNTS,
    SamplingReport,
    StoringRun,
    batched,
    display_url,
    judge_paused,
    note_quarantine,
    store_partitions,
    tally,
)
from flows.sampling_tasks import PartitionRead, peek_watermark, read_partition
from flows.serving import serve_declared, serve_main
from judges.factory import chain, judge_links
from judgewatch.alerts.check import check_alerts_quietly
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
from judgewatch.traffic.partitions import merge_watermarks, split_source
from judgewatch.traffic.start import parse_start, starting_point

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
) -> dict[str, Any]:
    """Sample what is new in the source `source` (a YAML config path) since its stored watermark.

    `since` re-reads a window instead (a time, an age like "24h", or a watermark JSON) and leaves the stored
    watermark alone. `dry_run` reads and samples only: nothing is stored, nothing judged. `judge`: "reference",
    URL(s) (default: the configured judge, falling back to the reference judge). `review_share` (default from
    settings, 10%) of scored verdicts go to review, plus `unscored_share` / `borderline_share` targeted picks.
    `partitions` > 1 splits a source of several files into that many runs of files, or a table into that many
    ranges of its (order, id) keys, read at once by mapped `read-partition` tasks; the watermark is saved per
    partition, in order (docs/sampling.md, "Partitions").
    A dry run reads here too. Judging pauses at the daily judge spend cap (picks stored, judged by the first run of
    the next UTC day); the alert rules are checked at the end (`judgewatch.alerts`, when a rules file is set).
    Raises SourceBusy when another run holds the source.
    """
    if batch_size < 1 or partitions < 1:
        raise ValueError("batch_size and partitions must be >= 1")
    if since is not None:
        parse_start(since)  # a bad value fails before anything is opened
    settings = get_settings()
    config = load_source_config(source)
    url = database_url or settings.effective_database_url
    report = SamplingReport(
        source=config.name, config=str(source), database=display_url(url), dry_run=dry_run, started_from=""
    )
    if dry_run:
        read_config, start, report.started_from = starting_point(config, since, peek_watermark(url, config.name))
        mark = start
        for part in _partitions(read_config, start, partitions):
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
            judge_obj = chain(judge_links(judge, settings, rubric=rubric_obj, engine=engine))
            judging = JudgingRun(
                engine,
                kind=RunKind.sampling,
                name=f"{FLOW_NAME}/{report.source}",
                identity=identity,
                rubric=rubric_obj,
                judge=judge_obj,
                params={"source": report.source, "started_from": report.started_from},
                lazy=True,  # recorded on the first batch or quarantined row: a run that reads nothing leaves none
                spend_cap=True,  # judging pauses at the daily judge spend cap; the picks are still stored
            )
            policy = RoutingPolicy.from_settings(
                settings, review_share=review_share, unscored_share=unscored_share, borderline_share=borderline_share
            )
            run = StoringRun(engine, lease, report, judging)
            try:
                with judging:
                    try:
                        await judge_paused(run, policy, settings, batch_size)
                        parts = _partitions(read_config, start, partitions)
                        await store_partitions(run, parts, start, policy, settings, batch_size, save=since is None)
                    finally:
                        judging.extra = report.model_dump(mode="json", include=RUN_COUNTS)
            finally:
                await judge_obj.aclose()
        report.alerts = check_alerts_quietly(engine, settings)
    finally:
        engine.dispose()
    return report.model_dump(mode="json")


def _partitions(config: SourceConfig, start: Watermark | None, parts: int) -> Iterator[PartitionRead]:
    """Each partition's picks, quarantined rows, counts and watermark, in order. One partition is read here,
    streaming; several are mapped as `read-partition` tasks on the flow's threads, read at once and handed over
    in order. (A process pool was measured and removed: no gain on 2 cores, bench/README.md.)"""
    split = split_source(config, start, parts)
    if len(split) == 1:
        yield PartitionRead.streaming(split[0])
        return
    if FlowRunContext.get() is None:  # the CLI's dry run calls the flow's function without Prefect
        yield from map(read_partition.fn, split)
        return
    for future in read_partition.map(split):
        yield future.result()


def serve(deployment: str = FLOW_NAME, prefect_yaml: Path = REPO_ROOT / "prefect.yaml") -> None:
    """Serve the deployment as `prefect.yaml` declares it (schedule, concurrency limit), without a work pool."""
    serve_declared(traffic_sampling, deployment, prefect_yaml)


if __name__ == "__main__":  # `python -m flows.sampling serve`
    from flows.sampling import serve as serve_deployment  # the importable module's flow, not __main__'s

    serve_main("flows.sampling", serve_deployment)
