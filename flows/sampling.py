"""The `traffic-sampling` flow: read what is new in a traffic source, sample it, store, judge and route the picks
batch by batch (`flows.sampling_batches`). One run per source at a time: a database lease
(`judgewatch.storage.watermarks`) and the deployment's concurrency limit in `prefect.yaml`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.runtime import deployment as this_deployment
from prefect.runtime import flow_run

from flows.sampling_batches import (
    RunSettings,
    SamplingReport,
    batched,
    judge_paused,
    note_quarantine,
    store_read,
    storing,
)
from flows.sampling_partition import PARTITION_DEPLOYMENT, PartitionJob, run_partitions
from flows.sampling_tasks import peek_watermark
from flows.serving import serve_declared, serve_main
from judgewatch.alerts.check import check_alerts_quietly
from judgewatch.redact import mask_url
from judgewatch.settings import REPO_ROOT, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.types import stable_id
from judgewatch.storage.watermarks import (
    DEFAULT_LEASE_SECONDS,
    SourceLease,
    default_owner,
    load_partitions,
    load_watermark,
)
from judgewatch.traffic import Sampler, load_source_config, read_source
from judgewatch.traffic.partitions import merge_watermarks, partition_sampler, split_source
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
    partition_deployment: str | None = PARTITION_DEPLOYMENT,
) -> dict[str, Any]:
    """Sample what is new in the source `source` (a YAML config path) since its stored watermark.

    `since` re-reads a window instead (a time, an age like "24h", or a watermark JSON) and leaves the stored
    watermark alone. `dry_run` reads and samples only: nothing is stored, nothing judged. `judge`: "reference",
    URL(s) (default: the configured judge, falling back to the reference judge). `review_share` (default from
    settings, 10%) of scored verdicts go to review, plus `unscored_share` / `borderline_share` targeted picks.
    `partitions` > 1 reads the source as that many `sample-partition` flow runs of `partition_deployment` (None:
    subflows of this process), each with its own watermark (docs/sampling.md, "Partitions"). Judging pauses at the
    daily judge spend cap (picks stored, judged by the first run of the next UTC day); the alert rules are checked
    at the end (`judgewatch.alerts`, when a rules file is set). Raises SourceBusy when another run holds the source,
    and PartitionFailed when a partition did not complete.
    """
    if batch_size < 1 or partitions < 1:
        raise ValueError("batch_size and partitions must be >= 1")
    if since is not None:
        parse_start(since)  # a bad value fails before anything is opened
    settings = get_settings()
    config = load_source_config(source)
    url = database_url or settings.effective_database_url
    report = SamplingReport(
        source=config.name, config=str(source), database=mask_url(url), dry_run=dry_run, started_from=""
    )
    if dry_run:
        read_config, start, report.started_from = starting_point(config, since, peek_watermark(url, config.name))
        marks = [start] if start else []
        for part in split_source(read_config, start, partitions):
            sampler, read = partition_sampler(read_config, part, lambda row: note_quarantine(report, row))
            report.batches += sum(1 for _ in batched(sampler.run(read), batch_size))
            marks.append(read.watermark)
            report.add(sampler.stats)
        report.watermark = merge_watermarks(marks).model_dump(mode="json")
        return report.model_dump(mode="json")
    engine = make_engine(url)
    try:
        migrate(engine)
        owner = f"{default_owner()}:{flow_run.id or 'local'}"
        with SourceLease(engine, config.name, owner=owner, ttl_s=lease_seconds) as lease:
            with session_scope(engine) as session:
                stored = load_watermark(session=session, source=config.name)
                unfinished = since is None and bool(load_partitions(session=session, source=config.name))
            mark = stored.watermark if stored else None
            read_config, start, report.started_from = starting_point(config, since, mark)
            identity = f"{config.name}@" + stable_id(start.model_dump_json() if start else "", read_config.filters)
            options = RunSettings(rubric=rubric, judge=judge, review_share=review_share, unscored_share=unscored_share,
                                  borderline_share=borderline_share, batch_size=batch_size)  # fmt: skip
            params = {"source": report.source, "started_from": report.started_from}
            # recorded on the first batch or quarantined row: a run that reads nothing leaves no record
            async with storing(engine, lease, report, options, name=f"{FLOW_NAME}/{report.source}",
                               identity=identity, params=params, lazy=True) as run:  # fmt: skip
                await judge_paused(run)
                if unfinished or partitions > 1:
                    # A deployment's run reads `source` in its clone of the repository, as its partitions' runs
                    # will; any other run names it absolutely. Without `database_url`: the workers' store.
                    job = PartitionJob.template(
                        source if this_deployment.id else _absolute(source), since, options, database_url
                    )
                    await run_partitions(run, read_config, start, partitions, job, partition_deployment)
                else:
                    sampler = Sampler(read_config, on_quarantine=run.on_quarantine)
                    await store_read(run, sampler, read_source(read_config, start), save=since is None)
        report.alerts = check_alerts_quietly(engine, settings)
    finally:
        engine.dispose()
    return report.model_dump(mode="json")


def _absolute(path: str) -> str:
    return str(Path(path).absolute())


if __name__ == "__main__":  # `python -m flows.sampling serve`: serves the deployment as prefect.yaml declares it
    from flows.sampling import traffic_sampling as declared  # the importable module's flow, not __main__'s

    serve_main("flows.sampling", lambda: serve_declared(declared, FLOW_NAME, REPO_ROOT / "prefect.yaml"))
