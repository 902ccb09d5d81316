"""The "Calibration" page: how far the judge can be trusted, per tier.

Judge-human agreement tables, a confusion matrix per tier and criterion (judge rows, human columns),
reviewer-vs-reviewer agreement on doubly labeled items, the anchor-set comparison of the current judge
configuration with the previous one, and the drift alerts. Aggregate and read-only, for active owners and
adjudicators (every handler checks). `add_calibration_tab(engine)` adds it inside an open `gr.Blocks`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration import plots
from judgewatch.calibration.agreement import confusion_frame, confusion_tables, reviewer_agreement
from judgewatch.calibration.report import anchor_blocks, fmt_ci, fmt_num
from judgewatch.calibration.score_frame import load_labels
from judgewatch.calibration.summary import CalibrationSummary
from judgewatch.stats import ConfusionMatrix
from judgewatch.storage.calibration import get_alerts
from judgewatch.storage.db import session_scope
from review_ui.common import compute, header_md, image, page_top, require_viewer, scale_levels, tables

logger = logging.getLogger(__name__)

INTRO = """\
How well the judge agrees with people, per tier (weighted kappa: 0 = chance, 1 = perfect; bias = judge minus
human), where it disagrees (confusion matrices), how well reviewers agree with each other, and how a new judge
configuration compares with the previous one on the frozen anchor set, before any new label arrives.
"""
ALERT_COLUMNS = ["state", "tier", "criterion", "window", "from", "kind", "p agreement", "p bias", "message", "webhook"]


@dataclass
class CalibrationView:
    header: str
    agreement: pd.DataFrame
    confusion: dict[str, ConfusionMatrix] = field(default_factory=dict)  # "tier · criterion" -> matrix
    reviewers: pd.DataFrame = field(default_factory=pd.DataFrame)
    anchors: pd.DataFrame = field(default_factory=pd.DataFrame)
    anchors_note: str = ""
    alerts: pd.DataFrame = field(default_factory=pd.DataFrame)


def reviewers_frame(engine: Engine, rubric: str) -> pd.DataFrame:
    rows = reviewer_agreement(load_labels(engine, rubric_name=rubric))
    if not rows:
        return pd.DataFrame({"": ["No item has two labels yet (double labeling is a share of routed items)."]})
    return pd.DataFrame(
        [[r.tier, r.criterion, r.n_items, r.n_reviewers, fmt_ci(r.alpha)] for r in rows],
        columns=["tier", "criterion", "items labeled twice+", "reviewers", "Krippendorff alpha (ordinal)"],
    )


def anchors_frame(summary: CalibrationSummary) -> tuple[str, pd.DataFrame]:
    """The note and table of the anchor-set comparison (the report's section)."""
    notes, frame = [], pd.DataFrame()
    for block in anchor_blocks(summary):
        if block.kind == "p":
            notes.append(block.text)
        elif block.kind == "table":
            part = pd.DataFrame(list(block.rows), columns=list(block.headers))
            frame = pd.concat([frame, part], ignore_index=True)
    return "\n\n".join(notes), frame


def alerts_frame(engine: Engine, rubric: str, limit: int = 50) -> pd.DataFrame:
    with session_scope(engine) as session:
        alerts = get_alerts(session=session, rubric_name=rubric)[:limit]
    rows = [
        [
            a.state,
            a.tier,
            a.criterion,
            a.window,
            f"{a.window_start:%Y-%m-%d}",
            a.kind,
            fmt_num(a.p_agreement_drop, ".2g"),
            fmt_num(a.p_bias_shift, ".2g"),
            a.message,
            a.webhook_status or "-",
        ]
        for a in alerts
    ]
    return pd.DataFrame(rows, columns=ALERT_COLUMNS) if rows else pd.DataFrame({"": ["No drift alerts."]})


def calibration_view(engine: Engine, rubric: str = "answer_quality", since: str = "90d") -> CalibrationView:
    """Everything the page shows, computed from the store."""
    summary = compute(engine, rubric, since)
    agreement = tables(summary).get("Judge-human agreement per tier", pd.DataFrame({"": ["No human labels yet."]}))
    confusion = {
        f"{tier} · {criterion}": cm
        for (tier, criterion), cm in confusion_tables(summary.frame, categories=scale_levels(rubric)).items()
    }
    note, anchors = anchors_frame(summary)
    return CalibrationView(
        header=header_md(summary),
        agreement=agreement,
        confusion=confusion,
        reviewers=reviewers_frame(engine, rubric),
        anchors=anchors,
        anchors_note=note,
        alerts=alerts_frame(engine, rubric),
    )


def add_calibration_tab(engine: Engine, *, rubric: str = "answer_quality", label: str = "Calibration") -> gr.Tab:
    """Add the Calibration tab to the `gr.Blocks` being built; computed on opening the tab and on Refresh."""
    cache: dict[str, dict[str, ConfusionMatrix]] = {}  # per user: the matrices of their last refresh

    def show_matrix(choice: str | None, request: gr.Request) -> list[Any]:
        name = require_viewer(engine, request)
        cm = cache.get(name, {}).get(choice or "")
        if cm is None:
            return [pd.DataFrame(), None]
        return [
            confusion_frame(cm).reset_index(names=""),
            image(plots.confusion_png(cm.counts, cm.categories, choice or "")),
        ]

    def load(rubric_name: str, since: str, request: gr.Request) -> list[Any]:
        name = require_viewer(engine, request)
        v = calibration_view(engine, rubric_name.strip() or rubric, since)
        cache[name] = v.confusion
        choices = list(v.confusion)
        first = choices[0] if choices else None
        matrix, heat = show_matrix(first, request)
        return [
            v.header,
            v.agreement,
            gr.update(choices=choices, value=first),
            matrix,
            heat,
            v.reviewers,
            v.anchors_note,
            v.anchors,
            v.alerts,
        ]

    with gr.Tab(label) as tab:
        rubric_box, since_box, refresh, header = page_top(INTRO, rubric)
        agreement = gr.Dataframe(label="Judge-human agreement per tier", interactive=False, wrap=True)
        gr.Markdown("### Confusion matrix (judge rows, human columns)")
        with gr.Row():
            pick = gr.Dropdown(choices=[], label="Tier · criterion", scale=1)
            matrix = gr.Dataframe(label="Counts", interactive=False, scale=2)
            heat = gr.Image(label="Heat map", type="pil", interactive=False, scale=1)
        reviewers = gr.Dataframe(label="Reviewer agreement", interactive=False, wrap=True)
        gr.Markdown("### Anchor set: new judge configuration vs the previous one")
        anchors_note = gr.Markdown()
        anchors = gr.Dataframe(label="Anchor comparison", interactive=False, wrap=True)
        alerts = gr.Dataframe(label="Drift alerts (newest first)", interactive=False, wrap=True)
        outputs = [header, agreement, pick, matrix, heat, reviewers, anchors_note, anchors, alerts]
        for event in (refresh.click, tab.select):
            event(load, inputs=[rubric_box, since_box], outputs=outputs, api_visibility="private")
        pick.change(show_matrix, inputs=pick, outputs=[matrix, heat], api_visibility="private")
    return tab
