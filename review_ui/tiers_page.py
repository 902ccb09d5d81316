"""The "Tiers" page for model owners: per tier and criterion the judge's raw mean, the corrected estimate with
its interval, the tier difference, judge-human agreement, trends, open drift alerts and label counts.

Read-only and aggregate (no single item's tier or verdict is shown, so reviewers stay blind). The numbers are
read from the snapshot the calibration flow stores (opening the page computes nothing), for logged-in, active
accounts only: a logged-in session can call any handler, so each handler checks who is asking.
`add_tiers_tab(engine)` adds it inside an open `gr.Blocks`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration.view_snapshot import FILL_COMMAND, PERIODS, latest_view
from review_ui.common import image, page_top, require_viewer

logger = logging.getLogger(__name__)

INTRO = """\
Scores of each serving tier, per criterion, for two separate questions (**estimand**): *traffic_quality* (all
production traffic, weighted back from the sample) and *release_quality* (a release's golden sets).
**Judge only** is the judge's mean; **corrected** adds what the human labels measured about the judge's errors
(prediction-powered inference), with its 95% interval and the n it rests on (sampled, labeled, effective).
Tier gaps carry a p-value; on traffic the gap is also shown adjusted for the requests each tier served.
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


def _missing(text: str) -> pd.DataFrame:
    return pd.DataFrame({"": [text]})


def tiers_view(engine: Engine, rubric: str = "answer_quality", since: str = "90d") -> TiersView:
    """What the page shows: the newest stored rendering for the period (one read, no computing on open)."""
    if since not in PERIODS:
        raise gr.Error(f"period {since!r}: choose one of {', '.join(p or 'all time' for p in PERIODS)}")
    stored = latest_view(engine, rubric_name=rubric, period=since)
    if stored is None:
        text = (
            f"Nothing computed for this period yet: the daily calibration flow fills this page; run `{FILL_COMMAND}`."
        )
        empty = _missing(text)
        return TiersView(text, empty, empty, empty, empty, empty, b"", b"", b"")
    t = stored.tables
    at = f"Computed {stored.computed_at:%Y-%m-%d %H:%M} UTC by the calibration flow (`{FILL_COMMAND}` refreshes it)."
    return TiersView(
        header="\n\n".join([*stored.header, at]),
        estimates=t.get(
            "Tier scores", _missing("No estimates: sample traffic or run a release (`judgewatch regress`).")
        ),
        differences=t.get("Tier difference", _missing("Fewer than two tiers: no difference to show.")),
        agreement=t.get("Judge-human agreement per tier", _missing("No human labels yet: label items in the Queue.")),
        alerts=t.get("Open drift alerts", _missing("No open drift alerts.")),
        counts=t.get("What the numbers rest on", _missing("Nothing yet.")),
        estimates_png=stored.images.get("estimates", b""),
        trend_png=stored.images.get("trend", b""),
        agreement_png=stored.images.get("agreement", b""),
    )


def add_tiers_tab(engine: Engine, *, rubric: str = "answer_quality", label: str = "Tiers") -> gr.Tab:
    """Add the Tiers tab to the `gr.Blocks` being built; read on opening the tab and on Refresh."""

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
        header.value = "Open this tab or press Refresh to read the latest numbers."
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
