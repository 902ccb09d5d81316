"""The scheduled judging of what the OTLP receiver stored (`ingest-judging` in prefect.yaml; docs/ingest.md), then
the alert rules checked (`judgewatch.alerts`, when a rules file is set)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from judgewatch.alerts.check import check_alerts_quietly
from judgewatch.ingest.judging import judge_new_picks
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate

FLOW_NAME = "ingest-judging"


@flow(name=FLOW_NAME)
async def ingest_judging(
    source: str = "otlp", rubric: str = "answer_quality", judge: str | None = None, database_url: str | None = None
) -> dict[str, Any]:
    """Judge the received picks of `source` not judged yet; the counts (judged by status, already judged, routed).

    `judge`: "reference", URL(s), or (default) the configured judge falling back to the reference judge. A run
    with nothing new judges nothing and says so in its counts; a run is never left half-recorded (resumable)."""
    settings = get_settings()
    engine = make_engine(database_url or settings.effective_database_url)
    try:
        migrate(engine)
        counts = await judge_new_picks(engine, settings, source=source, rubric=rubric, judge=judge)
        return {**counts, "alerts": check_alerts_quietly(engine, settings)}
    finally:
        engine.dispose()
