"""Steps of the traffic-sampling flow (where to start reading is `judgewatch.traffic.start`).

Each task is one step over one bounded batch and safe to run again: interactions, quarantined rows, verdicts and
review items are upserted under deterministic ids, and a pick that already has a verdict under this rubric and
judge configuration is not judged again. No Prefect retries: the judge client retries its own transient errors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import Engine, inspect
from sqlalchemy.engine import make_url

from judgewatch.ingest.picks import pick_interaction, quarantine_record
from judgewatch.judging.run import JudgingRun, StoredBatch
from judgewatch.review.routing import RoutingPolicy, RoutingReport, route_verdicts
from judgewatch.review.rubrics import RubricResolver
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import upsert_interactions
from judgewatch.storage.paused import pause_picks
from judgewatch.storage.quarantine import quarantine_rows
from judgewatch.storage.watermarks import SourceLease, load_watermark, save_watermark
from judgewatch.traffic import Pick, RejectedTrafficRow, Watermark

logger = logging.getLogger(__name__)


def peek_watermark(url: str, source: str) -> str | None:
    """The stored watermark without writing anything (no migration, no new SQLite file): for dry runs."""
    parsed = make_url(url)
    file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if file not in (None, "", ":memory:") and not Path(file or "").expanduser().exists():
        return None
    engine = make_engine(url)
    try:
        if not inspect(engine).has_table("source_watermark"):
            return None
        with session_scope(engine) as session:
            row = load_watermark(session=session, source=source)
            return row.watermark if row else None
    finally:
        engine.dispose()


@task(name="store-picks", cache_policy=NO_CACHE)
def store_picks(engine: Engine, picks: Sequence[Pick]) -> int:
    """Upsert the picked interactions with their inclusion probability, stratum, salt and PII counts."""
    with session_scope(engine, write=True) as session:
        return upsert_interactions(session=session, interactions=[pick_interaction(p) for p in picks])


@task(name="store-quarantined", cache_policy=NO_CACHE)
def store_quarantined(engine: Engine, rows: Sequence[RejectedTrafficRow], run_id: str) -> int:
    """Upsert the rows the source could not map (reason, raw excerpt, line), tagged with the run."""
    with session_scope(engine, write=True) as session:
        return quarantine_rows(session=session, records=[quarantine_record(r) for r in rows], run_id=run_id)


@task(name="judge-picks", cache_policy=NO_CACHE)
async def judge_picks(run: JudgingRun, picks: Sequence[Pick], lease: SourceLease | None) -> StoredBatch:
    """Judge the picks not judged yet under the run's rubric and judge configuration; verdicts are stored. Picks
    left unjudged because the daily spend cap holds are recorded as waiting (`storage.paused`), for the next UTC
    day's runs."""
    items = [(p.row.interaction_id, pick_interaction(p).to_item()) for p in picks]
    renew = None if lease is None else (lambda _key, _verdict: lease.renew_if_due())  # None: a --since partition
    batch = await run.judge_stored(items, on_verdict=renew)
    if batch.paused and run.engine is not None:
        with session_scope(run.engine, write=True) as session:
            pause_picks(session=session, source=picks[0].row.source, interaction_ids=batch.paused, run_id=run.run_id)
    return batch


@task(name="route-verdicts", cache_policy=NO_CACHE)
def route_picks(
    engine: Engine, verdict_ids: Sequence[str], policy: RoutingPolicy, rubrics_dir: Path | None
) -> RoutingReport:
    """A uniform share of the scored verdicts (plus optional targeted picks) become review items, once each."""
    with session_scope(engine, write=True) as session:
        return route_verdicts(
            session=session, policy=policy, rubrics=RubricResolver(rubrics_dir), verdict_ids=list(verdict_ids)
        )


@task(name="save-watermark", cache_policy=NO_CACHE)
def save_checkpoint(engine: Engine, lease: SourceLease, watermark: Watermark, run_id: str | None) -> str:
    """Store the watermark of what `lease` holds (a source, or a partition of one) after everything it covers is
    stored, while still holding it; its JSON."""
    lease.renew()
    text = watermark.model_dump_json()
    with session_scope(engine, write=True) as session:
        save_watermark(session=session, source=lease.source, watermark=text, run_id=run_id)
    return text
