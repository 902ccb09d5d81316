"""The "Calibration" page: how far the judge can be trusted, per tier: agreement, confusion matrices, reviewer
agreement, the anchor-set comparison and the drift alerts. Read from the calibration flow's snapshot (the alerts
live); aggregate, for active owners and adjudicators (every handler checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration import plots
from judgewatch.calibration.agreement import confusion_frame
from judgewatch.calibration.page_snapshots import REVIEWER_HEADERS, PageView
from judgewatch.calibration.report_render import fmt_num
from judgewatch.stats import ConfusionMatrix
from judgewatch.storage.calibration import get_alerts
from judgewatch.storage.db import session_scope
from review_ui.common import image, message_frame, page_controls, require_viewer
from review_ui.tiers_page import BEFORE_OPENING, MISSING, NOT_COMPUTED, computed_line, read_views

INTRO = """\
How well the judge agrees with people, per tier (weighted kappa: 0 = chance, 1 = perfect; bias = judge minus
human), where it disagrees (confusion matrices), how well reviewers agree with each other, and how a new judge
configuration compares with the previous one on the frozen anchor set, before any new label arrives.
"""
NO_LABELS = MISSING["Judge-human agreement per tier"]
ALERT_COLUMNS = ["state", "tier", "criterion", "window", "from", "kind", "p agreement", "p bias", "message"]


@dataclass
class CalibrationView:
    header: str
    agreement: pd.DataFrame
    confusion: dict[str, ConfusionMatrix] = field(default_factory=dict)  # "tier · criterion" -> matrix
    reviewers: pd.DataFrame = field(default_factory=pd.DataFrame)
    anchors: pd.DataFrame = field(default_factory=pd.DataFrame)
    anchors_note: str = ""
    alerts: pd.DataFrame = field(default_factory=pd.DataFrame)


def reviewers_frame(view: PageView) -> pd.DataFrame:
    if not view.reviewers:
        return message_frame("No item has two labels yet (double labeling is a share of routed items).")
    return pd.DataFrame(view.reviewers, columns=REVIEWER_HEADERS)


def anchors_frame(view: PageView) -> tuple[str, pd.DataFrame]:
    """The note and table of the anchor-set comparison (the report's section)."""
    notes, frame = [], pd.DataFrame()
    for block in view.section("Anchor set"):
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
        [a.state, a.tier, a.criterion, a.window, f"{a.window_start:%Y-%m-%d}", a.kind,
         fmt_num(a.p_agreement_drop, ".2g"), fmt_num(a.p_bias_shift, ".2g"), a.message]
        for a in alerts
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=ALERT_COLUMNS) if rows else message_frame("No drift alerts.")


def calibration_view(
    engine: Engine, rubric: str = "answer_quality", since: str = "90d", series: str | None = None
) -> CalibrationView:
    """Everything the page shows: the stored rendering of the default series (one read; alerts live)."""
    view = read_views(engine, rubric, since).pick(series)
    if view is None:
        empty = message_frame(NOT_COMPUTED)
        return CalibrationView(NOT_COMPUTED, empty, reviewers=empty, alerts=alerts_frame(engine, rubric))
    confusion = {
        name: ConfusionMatrix(tuple(m["categories"]), np.asarray(m["counts"], dtype=np.int64))
        for name, m in view.confusion.items()
    }
    note, anchors = anchors_frame(view)
    return CalibrationView(
        header="\n\n".join([*view.header, computed_line(view)]),
        agreement=view.tables.get("Judge-human agreement per tier", message_frame(NO_LABELS)),
        confusion=confusion,
        reviewers=reviewers_frame(view),
        anchors=anchors if not anchors.empty else message_frame(note),
        anchors_note=note,
        alerts=alerts_frame(engine, rubric),
    )


def add_calibration_tab(engine: Engine, *, rubric: str = "answer_quality", label: str = "Calibration") -> gr.Tab:
    """Add the Calibration tab to the `gr.Blocks` being built; read on opening the tab and on Refresh."""
    cache: dict[str, dict[str, ConfusionMatrix]] = {}  # per user: the matrices of their last refresh

    def show_matrix(choice: str | None, request: gr.Request) -> list[Any]:
        name = require_viewer(engine, request)
        cm = cache.get(name, {}).get(choice or "")
        if cm is None:
            return [message_frame(NO_LABELS), None]
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
        picker = gr.update(choices=choices, value=first)
        return [v.header, v.agreement, picker, matrix, heat, v.reviewers, v.anchors_note, v.anchors, v.alerts]

    with gr.Tab(label) as tab:
        gr.Markdown(INTRO)
        rubric_box, since_box, refresh = page_controls(rubric)
        header = gr.Markdown("Open this tab or press Refresh to compute.")
        waiting = message_frame(BEFORE_OPENING)
        agreement = gr.Dataframe(waiting, label="Judge-human agreement per tier", interactive=False, wrap=True)
        gr.Markdown("### Confusion matrix (judge rows, human columns)")
        with gr.Row():
            pick = gr.Dropdown(choices=[], label="Tier · criterion", scale=1)
            matrix = gr.Dataframe(waiting, label="Counts", interactive=False, scale=2)
            heat = gr.Image(label="Heat map", type="pil", interactive=False, scale=1)
        reviewers = gr.Dataframe(waiting, label="Reviewer agreement", interactive=False, wrap=True)
        gr.Markdown("### Anchor set: new judge configuration vs the previous one")
        anchors_note = gr.Markdown()
        anchors = gr.Dataframe(waiting, label="Anchor comparison", interactive=False, wrap=True)
        alerts = gr.Dataframe(waiting, label="Drift alerts (newest first)", interactive=False, wrap=True)
        outputs = [header, agreement, pick, matrix, heat, reviewers, anchors_note, anchors, alerts]
        for event in (refresh.click, tab.select):
            event(load, inputs=[rubric_box, since_box], outputs=outputs, api_visibility="private")
        pick.change(show_matrix, inputs=pick, outputs=[matrix, heat], api_visibility="private")
    return tab
