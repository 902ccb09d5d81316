"""Judging what the receiver stored: the picks of an `otlp` source not judged yet under a rubric and judge, in
keyset batches, routed to review as the sampling flow's are; apart from the receiver (docs/ingest.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from sqlmodel import col, select

from judgewatch.judging.run import JudgingRun
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.review.rubrics import RubricResolver
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.runs import RunKind
from judgewatch.traffic.records import source_label

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judges.base import Judge
    from judgewatch.contract.rubric import Rubric
    from judgewatch.settings import Settings


async def judge_new_picks(
    engine: Engine, settings: Settings, *, source: str, rubric: str, judge: str | None
) -> dict[str, object]:
    """`judge_received` with the named rubric and judge (`judges.factory.judge_links`: "reference", URLs, or the
    configured judge), routed by the settings' policy; what `ingest judge` and the scheduled flow both run."""
    from judges.factory import chain, judge_links
    from judgewatch.contract.rubric import load_rubric

    rubric_obj = load_rubric(rubric, settings.rubrics_dir)
    judge_obj = chain(judge_links(judge, settings, rubric=rubric_obj, engine=engine))
    try:
        policy = RoutingPolicy.from_settings(settings)
        return await judge_received(
            engine, source=source, rubric=rubric_obj, judge=judge_obj, policy=policy, rubrics_dir=settings.rubrics_dir
        )
    finally:
        await judge_obj.aclose()


async def judge_received(
    engine: Engine,
    *,
    source: str,
    rubric: Rubric,
    judge: Judge,
    policy: RoutingPolicy,
    rubrics_dir: Path | None = None,
    batch_size: int = 500,
) -> dict[str, object]:
    """Judge the stored picks of `source` with no verdict under `rubric` and `judge` yet; returns the run's counts."""
    label = source_label(source)
    run = JudgingRun(engine, kind=RunKind.sampling, name=f"ingest-judge/{source}", identity=f"{source}@received",
                     rubric=rubric, judge=judge, params={"source": source}, lazy=True, spend_cap=True)  # fmt: skip
    routed: Counter[str] = Counter()
    created = 0
    with run:
        after = ""
        while True:
            with session_scope(engine) as session:
                query = select(Interaction).where(Interaction.source == label, col(Interaction.id) > after)
                rows = list(session.exec(query.order_by(col(Interaction.id)).limit(batch_size)))
            if not rows:
                break
            after = rows[-1].id
            batch = await run.judge_stored([(row.id, row.to_item()) for row in rows])
            if batch.verdict_ids:
                with session_scope(engine, write=True) as session:
                    report = route_verdicts(session=session, policy=policy, rubrics=RubricResolver(rubrics_dir),
                                            verdict_ids=list(batch.verdict_ids.values()))  # fmt: skip
                routed.update(report.by_reason)
                created += report.created
            if batch.paused:
                break
        run.extra = {"routed": dict(routed), "review_items_created": created}
    summary = run.summary
    return {
        "run_id": run.run_id, "judged": dict(summary.by_status), "unscored_reasons": dict(summary.by_unscored_reason),
        "already_judged": run.already_judged, "routed": dict(routed), "review_items_created": created,
        "paused": run.paused,
    }  # fmt: skip
