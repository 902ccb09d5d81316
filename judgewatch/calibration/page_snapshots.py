"""The Tiers and Calibration pages' and `report tiers`' stored renderings (`tiers_view` snapshots), so opening a
page or writing the report is one read instead of a scan of every verdict of the series: one row per rubric,
period and judge series (`judge_series.MAX_SERIES` at most), replaced on every calibration flow run."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Engine, select

from judgewatch.calibration.agreement import confusion_tables, reviewer_agreement
from judgewatch.calibration.judge_series import Series, default_series, tiered_series
from judgewatch.calibration.report_render import Block, block_from_json, block_to_json, jsonable
from judgewatch.calibration.score_frame import load_labels
from judgewatch.calibration.summary import CalibrationSummary, series_label, summarize
from judgewatch.calibration.tiers_report import blocks, blocks_title, fmt_ci, report_document
from judgewatch.storage.calibration import CalibrationSnapshot, save_snapshot
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

VIEW_KIND = "tiers_view"
PERIODS = {"7d": 7, "30d": 30, "90d": 90, "": None}  # the page's period choices ("" = all time)
FILL_COMMAND = "judgewatch calibrate"
LATEST = "latest"  # the snapshot's day: one row per rubric, period and series, replaced on every run
REVIEWER_HEADERS = ["tier", "criterion", "items labeled twice+", "reviewers", "Krippendorff alpha (ordinal)"]


@dataclass
class PageView:
    """A stored rendering of one summary (one rubric, period and judge series)."""

    rubric_name: str
    period: str
    computed_at: datetime
    judge_config_hash: str | None
    series_label: str
    header: list[str]  # the series line first, then the judge, its trust and the notes
    blocks: list[Block]
    document: dict[str, Any]
    title: str
    confusion: dict[str, dict[str, Any]] = field(default_factory=dict)  # "tier · criterion" -> categories, counts
    reviewers: list[list[str]] = field(default_factory=list)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The report's tables keyed by the heading they follow (the first table of each section)."""
        out: dict[str, pd.DataFrame] = {}
        heading = ""
        for block in self.blocks:
            if block.kind == "h2":
                heading = block.text
            elif block.kind == "table" and heading not in out:
                out[heading] = pd.DataFrame(list(block.rows), columns=list(block.headers))
        return out

    @property
    def images(self) -> dict[str, bytes]:
        return {b.name: b.image for b in self.blocks if b.kind == "image"}

    @property
    def captions(self) -> dict[str, str]:
        """Each image's caption: what it covers (which release, what is pooled, what is left out and why)."""
        return {b.name: b.text for b in self.blocks if b.kind == "image"}

    def first_paragraph(self, heading: str) -> str:
        """The first paragraph under one h2 heading ("" when the snapshot has no such section)."""
        return next((b.text for b in self.section(heading) if b.kind == "p"), "")

    def section(self, heading: str) -> list[Block]:
        """The blocks under one h2 heading."""
        out: list[Block] = []
        inside = False
        for block in self.blocks:
            if block.kind in ("h1", "h2"):
                inside = block.text == heading
            elif inside:
                out.append(block)
        return out


@dataclass
class StoredViews:
    """Every stored series for one rubric and period, and the default one of the latest flow run."""

    views: dict[str, PageView]  # judge configuration hash -> view, the default first, then newest first
    default: str | None
    default_reason: str

    def pick(self, config_hash: str | None) -> PageView | None:
        """The view of `config_hash` when stored, else the default one."""
        if config_hash and config_hash in self.views:
            return self.views[config_hash]
        return self.views.get(self.default or "") or next(iter(self.views.values()), None)

    def choices(self) -> list[tuple[str, str]]:
        """(label, configuration hash) for a picker."""
        return [(f"{v.series_label}{' (default)' if h == self.default else ''}", h) for h, v in self.views.items()]

    def reason_line(self, view: PageView) -> str:
        """One line: which series the page shows and why."""
        if view.judge_config_hash == self.default:
            return f"**Showing judge series {view.series_label}**: {self.default_reason}."
        default = self.views[self.default].series_label if self.default in self.views else "none"
        return f"**Showing judge series {view.series_label}**: picked in the Judge series box (default: {default})."


def header_lines(summary: CalibrationSummary) -> list[str]:
    """The judge, its measured trust and the summary's notes (first line each); the series line comes apart."""
    lines = []
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


def render_view(
    summary: CalibrationSummary,
    period: str,
    *,
    default: tuple[str | None, str],
    categories: list[float] | None,
    reviewers: list[list[str]],
) -> dict[str, Any]:
    """The snapshot payload of one summary (see the module doc)."""
    series = summary.series
    return {
        "period": period,
        "series": {"label": series_label(series), "config_hash": series.judge.config_hash} if series else None,
        "default_config": default[0],
        "default_reason": default[1],
        "header": header_lines(summary),
        "title": blocks_title(summary),
        "blocks": [block_to_json(b) for b in blocks(summary)],
        "document": report_document(summary),
        "confusion": {
            f"{tier} · {criterion}": {"categories": list(cm.categories), "counts": cm.counts.tolist()}
            for (tier, criterion), cm in confusion_tables(summary.frame, categories=categories).items()
        },
        "reviewers": reviewers,
    }


def _scope(rubric_name: str, period: str, config_hash: str | None) -> str:
    return f"{rubric_name} period={period or 'all'} judge={config_hash or '-'}"


def _series_to_store(engine: Engine, rubric_name: str) -> tuple[list[Series | None], str | None, str]:
    """(series, default hash, why): the default first, then the other tiered series, newest first."""
    choice = default_series(engine, rubric_name=rubric_name)
    if choice is None:
        return [None], None, "no scored verdicts yet"
    default = choice.series.judge.config_hash
    others = [s for s in tiered_series(engine, rubric_name=rubric_name) if s.judge.config_hash != default]
    return [choice.series, *others], default, choice.reason


def save_views(
    engine: Engine,
    *,
    rubric_name: str,
    categories: list[float] | None = None,
    periods: tuple[str, ...] = tuple(PERIODS),
    now: datetime | None = None,
) -> int:
    """Compute the summary for each page period and judge series and store its rendering; returns the count."""
    now = now or utcnow()
    all_series, default, why = _series_to_store(engine, rubric_name)
    # reviewer-vs-reviewer agreement on doubly labeled items (every label, not one per item)
    agreement = reviewer_agreement(load_labels(engine, rubric_name=rubric_name))
    reviewers = [[r.tier, r.criterion, str(r.n_items), str(r.n_reviewers), fmt_ci(r.alpha)] for r in agreement]
    stored = 0
    for series in all_series:
        config = series.judge.config_hash if series else None
        for period in periods:
            days = PERIODS[period]
            summary = summarize(
                engine,
                rubric_name=rubric_name,
                rubric_version=series.rubric.version if series else None,
                judge_config_hash=config,
                since=now - timedelta(days=days) if days else None,
                categories=categories,
                n_boot=500,
            )
            payload = render_view(summary, period, default=(default, why), categories=categories, reviewers=reviewers)
            version = summary.series.rubric.version if summary.series else None
            snapshot = CalibrationSnapshot(id="", kind=VIEW_KIND, scope=_scope(rubric_name, period, config), day=LATEST,
                                           rubric_name=rubric_name, rubric_version=version, judge_config_hash=config,
                                           payload=jsonable(payload), computed_at=now)  # fmt: skip
            with session_scope(engine, write=True) as session:
                save_snapshot(session=session, snapshot=snapshot)
            stored += 1
    logger.info("tiers views: %d stored for %s (%d series)", stored, rubric_name, len(all_series))
    return stored


def _view(rubric_name: str, period: str, at: datetime, config: str | None, payload: dict[str, Any]) -> PageView:
    series, content = payload.get("series") or {}, [block_from_json(b) for b in payload.get("blocks", [])]
    title = payload.get("title", f"judgewatch tiers: {rubric_name}")
    return PageView(rubric_name, period, at, config, series.get("label", "none"), list(payload.get("header", [])),
                    content, payload.get("document", {}), title, payload.get("confusion", {}),
                    payload.get("reviewers", []))  # fmt: skip


def stored_views(engine: Engine, *, rubric_name: str, period: str) -> StoredViews:
    """Every stored series for this rubric and period (a handful of rows, whatever the store's size)."""
    c = table(CalibrationSnapshot).c
    query = (
        select(c.computed_at, c.judge_config_hash, c.payload)
        .where(c.kind == VIEW_KIND, c.rubric_name == rubric_name, c.day == LATEST)
        .where(c.scope.like(f"{rubric_name} period={period or 'all'} %"))
        .order_by(c.computed_at.desc(), c.scope)
    )
    with session_scope(engine) as session:
        rows = session.execute(query).all()
    if not rows:
        return StoredViews({}, None, "")
    newest = rows[0][2]
    default, reason = newest.get("default_config"), newest.get("default_reason", "")
    views = {config or "-": _view(rubric_name, period, at, config, payload) for at, config, payload in rows}
    if default in views:
        views = {default: views[default], **{k: v for k, v in views.items() if k != default}}
    out = StoredViews(views, default, reason)
    for view in views.values():
        view.header = [out.reason_line(view), *view.header]
    return out
