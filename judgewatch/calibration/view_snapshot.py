"""What the Tiers page shows, computed by the calibration flow and stored, so opening the page is one read.

Computing the summary scans every verdict of the series (minutes on a store with a million verdicts); a page
must not do that on open. The flow renders the report's tables and plots once per page period and stores them
as a `tiers_view` snapshot (one per rubric, period, judge configuration and day); the page reads the newest one
and says when it was computed. Without a snapshot the page says which command makes one.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Engine, select

from judgewatch.calibration.report import blocks
from judgewatch.calibration.serialize import jsonable
from judgewatch.calibration.summary import CalibrationSummary, summarize
from judgewatch.storage.calibration import CalibrationSnapshot, save_snapshot
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

VIEW_KIND = "tiers_view"
PERIODS = {"7d": 7, "30d": 30, "90d": 90, "": None}  # the page's period choices ("" = all time)
FILL_COMMAND = "judgewatch calibrate"


@dataclass
class PageView:
    """A stored rendering of one summary: header lines, tables keyed by the heading they follow, PNG plots."""

    rubric_name: str
    period: str
    computed_at: datetime | None
    judge_config_hash: str | None
    header: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    images: dict[str, bytes] = field(default_factory=dict)


def header_lines(summary: CalibrationSummary) -> list[str]:
    """The page header: the judge series, its measured trust, and the summary's notes (first line each)."""
    lines = [summary.series_reason] if summary.series_reason else []
    if summary.series is not None:
        j = summary.series.judge
        lines.append(
            f"**Judge** {j.kind}:{j.name} (configuration `{j.config_hash}`), rubric "
            f"{summary.rubric_name} {summary.series.rubric.version}."
        )
    if summary.trust is not None:
        lines.append(f"**Measured trust:** {summary.trust.summary.splitlines()[0]}")
    lines += [f"> ⚠️ {note.splitlines()[0]}" for note in summary.notes]
    return lines


def render_view(summary: CalibrationSummary, period: str) -> dict[str, Any]:
    """The snapshot payload: header, tables (headers + rows) and base64 PNGs, from the report's blocks."""
    tables: dict[str, dict[str, Any]] = {}
    images: dict[str, str] = {}
    heading = ""
    for block in blocks(summary):
        if block.kind == "h2":
            heading = block.text
        elif block.kind == "table" and heading not in tables:
            tables[heading] = {"headers": list(block.headers), "rows": [list(r) for r in block.rows]}
        elif block.kind == "image":
            images[block.name] = base64.b64encode(block.image).decode("ascii")
    return {"period": period, "header": header_lines(summary), "tables": tables, "images": images}


def _scope(rubric_name: str, period: str, config_hash: str | None) -> str:
    return f"{rubric_name} period={period or 'all'} judge={config_hash or '-'}"


def save_views(
    engine: Engine,
    *,
    rubric_name: str,
    categories: list[float] | None = None,
    judge_config_hash: str | None = None,
    periods: tuple[str, ...] = tuple(PERIODS),
    now: datetime | None = None,
) -> int:
    """Compute the summary for each page period and store its rendering; returns how many were stored."""
    now = now or utcnow()
    stored = 0
    for period in periods:
        days = PERIODS[period]
        since = now - timedelta(days=days) if days else None
        summary = summarize(
            engine,
            rubric_name=rubric_name,
            judge_config_hash=judge_config_hash,
            since=since,
            categories=categories,
            n_boot=500,
        )
        config = summary.series.judge.config_hash if summary.series else None
        snapshot = CalibrationSnapshot(
            id="",
            kind=VIEW_KIND,
            scope=_scope(rubric_name, period, config),
            day="",
            rubric_name=rubric_name,
            rubric_version=summary.series.rubric.version if summary.series else None,
            judge_config_hash=config,
            payload=jsonable(render_view(summary, period)),
            computed_at=now,
        )
        with session_scope(engine, write=True) as session:
            save_snapshot(session=session, snapshot=snapshot)
        stored += 1
    logger.info("tiers views: %d periods stored for %s", stored, rubric_name)
    return stored


def latest_view(
    engine: Engine, *, rubric_name: str, period: str, judge_config_hash: str | None = None
) -> PageView | None:
    """The newest stored rendering for this rubric and period (and judge configuration, when given)."""
    c = table(CalibrationSnapshot).c
    query = select(c.computed_at, c.judge_config_hash, c.payload).where(
        c.kind == VIEW_KIND, c.rubric_name == rubric_name, c.scope.like(f"{rubric_name} period={period or 'all'} %")
    )
    if judge_config_hash is not None:
        query = query.where(c.judge_config_hash == judge_config_hash)
    with session_scope(engine) as session:
        row = session.execute(query.order_by(c.computed_at.desc()).limit(1)).first()
    if row is None:
        return None
    at, config, payload = row
    tables = {
        heading: pd.DataFrame(t["rows"], columns=t["headers"]) for heading, t in payload.get("tables", {}).items()
    }
    images = {name: base64.b64decode(data) for name, data in payload.get("images", {}).items()}
    return PageView(rubric_name, period, at, config, list(payload.get("header", [])), tables, images)
