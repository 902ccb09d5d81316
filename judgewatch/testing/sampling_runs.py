"""The traffic-sampling flow run from a test, and what it stored: its tests compare runs split differently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import text

from judgewatch.storage.db import make_engine


async def sample_flow(source: Path, db: str, **params: Any) -> dict[str, Any]:
    """The `traffic-sampling` flow's report for the source config `source`, stored in `db` (reference judge); its
    partitions are subflows of this process unless `partition_deployment` names a deployment."""
    from flows.sampling import traffic_sampling

    params.setdefault("judge", "reference")
    params.setdefault("partition_deployment", None)
    result = await traffic_sampling(source=str(source), database_url=db, **params)
    assert isinstance(result, dict)
    return result


def stored_sample(db: str, source: str | None = None) -> dict[str, Any]:
    """What sampling runs left in `db` (of the source named `source` only, when given): interaction ids,
    quarantined (position, reason) and the source's watermark."""
    where, own = ("WHERE source = :label", "AND source = :name") if source else ("", "")
    args = {"label": f"traffic:{source}", "name": source}
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            saved = conn.execute(
                text(f"SELECT watermark FROM source_watermark WHERE partition_of IS NULL {own}"), args
            ).scalar_one_or_none()
            return {
                "interactions": sorted(conn.execute(text(f"SELECT id FROM interaction {where}"), args).scalars()),
                "quarantined": sorted(
                    map(tuple, conn.execute(text(f"SELECT position, reason FROM quarantined_row {where}"), args))
                ),
                "watermark": json.loads(saved) if saved else None,
            }
    finally:
        engine.dispose()
