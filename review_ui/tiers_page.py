"""The "Tiers" page for model owners: per tier and criterion the judge's raw mean, the corrected estimate with
its interval, the tier difference, judge-human agreement, trends, open drift alerts and label counts.

Read-only and aggregate (no single item's tier or verdict is shown, so reviewers stay blind). The numbers are
computed when the tab is opened or refreshed, for active owners and adjudicators only: a logged-in session can
call any handler, so each handler checks who is asking. `add_tiers_tab(engine)` adds it inside an open `gr.Blocks`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration import plots
from review_ui.common import compute, header_md, image, page_top, require_viewer, tables

logger = logging.getLogger(__name__)

INTRO = """\
Scores of each serving tier, per criterion. **Judge raw** is the judge's plain mean; **corrected** adds what
the human labels measured about the judge's errors (prediction-powered inference), with its 95% interval.
Compare tiers on the corrected numbers: a judge can be biased differently on each tier.
"""


@dataclass
class TiersView:
    header: str
    estimates: pd.DataFrame
    differences: pd.DataFrame
    agreement: pd.DataFrame
    alerts: pd.DataFrame
    counts: pd.DataFrame
    estimates_png: bytes
    trend_png: bytes
    agreement_png: bytes


def tiers_view(engine: Engine, rubric: str = "answer_quality", since: str = "90d") -> TiersView:
    """Everything the page shows, computed from the store (also what the page's tests check)."""
    s = compute(engine, rubric, since)
    t = tables(s)
    empty = pd.DataFrame()
    weekly = {(r.tier, r.criterion): r.points for r in (s.drift.results if s.drift else []) if r.window == "weekly"}
    return TiersView(
        header=header_md(s),
        estimates=t.get("Tier scores", empty),
        differences=t.get("Tier difference", empty),
        agreement=t.get("Judge-human agreement per tier", empty),
        alerts=t.get("Open drift alerts", pd.DataFrame({"": ["No open drift alerts."]})),
        counts=t.get("What the numbers rest on", empty),
        estimates_png=plots.estimates_png(s.estimates, s.differences),
        trend_png=plots.trend_png(s.daily, s.weekly),
        agreement_png=plots.agreement_png(weekly),
    )


def add_tiers_tab(engine: Engine, *, rubric: str = "answer_quality", label: str = "Tiers") -> gr.Tab:
    """Add the Tiers tab to the `gr.Blocks` being built; computed on opening the tab and on Refresh."""

    def load(rubric_name: str, since: str, request: gr.Request) -> list[Any]:
        require_viewer(engine, request)
        v = tiers_view(engine, rubric_name.strip() or rubric, since)
        return [
            v.header,
            image(v.estimates_png),
            v.estimates,
            v.differences,
            v.agreement,
            image(v.trend_png),
            image(v.agreement_png),
            v.alerts,
            v.counts,
        ]

    with gr.Tab(label) as tab:
        rubric_box, since_box, refresh, header = page_top(INTRO, rubric)
        estimates_img = gr.Image(label="Per tier and criterion", type="pil", interactive=False)
        estimates = gr.Dataframe(label="Tier scores", interactive=False, wrap=True)
        differences = gr.Dataframe(label="Tier difference", interactive=False, wrap=True)
        agreement = gr.Dataframe(label="Judge-human agreement per tier", interactive=False, wrap=True)
        trend_img = gr.Image(label="Scores over time", type="pil", interactive=False)
        agreement_img = gr.Image(label="Agreement and bias per week", type="pil", interactive=False)
        alerts = gr.Dataframe(label="Open drift alerts", interactive=False, wrap=True)
        counts = gr.Dataframe(label="What the numbers rest on", interactive=False, wrap=True)
        outputs = [header, estimates_img, estimates, differences, agreement, trend_img, agreement_img, alerts, counts]
        for event in (refresh.click, tab.select):
            event(load, inputs=[rubric_box, since_box], outputs=outputs, api_visibility="private")
    return tab
