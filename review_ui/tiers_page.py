"""The "Tiers" page for model owners: the gate's question first, then the Tiers report's tables and plots for one
judge series (default: the one the latest gate used). Read from the snapshots the calibration flow stores (opening
the page computes nothing); aggregate only, so reviewers stay blind; every handler checks who is asking."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.calibration import plots
from judgewatch.calibration.page_snapshots import FILL_COMMAND, PERIODS, PageView, StoredViews, stored_views
from judgewatch.calibration.tiers_report import GATE_SECTION
from review_ui.common import image, message_frame, page_controls, require_viewer

INTRO = """\
Scores of each serving tier, per criterion, for two separate questions (**estimand**): *traffic_quality* (all
production traffic, weighted back from the sample) and *release_quality* (a release's golden sets).
**Judge only** is the judge's mean; **corrected** adds what the human labels measured about the judge's errors
(prediction-powered inference), with its 95% interval and the n it rests on (sampled, labeled, effective);
with fewer human labels than the stated minimum it reads *too few labels (n=k, need m)* instead of an interval.
Tier gaps carry a p-value; on traffic the gap is also shown adjusted for the requests each tier served.
**n effective**: how many human labels the labels-only estimate would need for the corrected one's precision;
`-` where it is not defined (no interval: fewer labels than the minimum; a release's tier gap).
**Labels by** says who gave the labels: people, `synthetic` (a program) or `dataset_annotation` (derived from
a golden set's own annotations, not a reviewer); `-` where there is none.
"""
THEN = f"then `{FILL_COMMAND}`"
MISSING = {
    GATE_SECTION: "No gate decision of this judge series in this period (or a snapshot older than this table): "
    f"`judgewatch regress` asks the gate, {THEN}.",
    "Tier scores": "No estimates for this series and period: run a release through the gate (`judgewatch regress`) "
    f"or sample traffic (`judgewatch sample`), {THEN}.",
    "Tier difference": "Fewer than two tiers in traffic or in a release: no difference to show. Regress a release "
    f"on two tiers (`judgewatch regress --tier full=... --tier quantized=... --baseline-tier full`), {THEN}.",
    "Judge-human agreement per tier": "No human labels yet: label routed items in the Queue (or "
    f"`judgewatch review replay --labels FILE`), {THEN}.",
    "Open drift alerts": "No open drift alerts.",
    "What the numbers rest on": f"No scored verdicts of this series in this period: {THEN} after judging some.",
}
NOT_COMPUTED = (
    f"Nothing computed for this period yet: the daily calibration flow fills this page; run `{FILL_COMMAND}`."
)
BEFORE_OPENING = "Open this tab or press Refresh to read the latest numbers."
PLOTS = {"estimates": "Per tier and criterion", "trend": "Scores over time", "agreement": "Agreement and bias per week"}
GATE_LABEL = "The gate's question: which tier, which criterion, by how much"


@dataclass
class TiersView:
    lead: str  # the gate's answer in one sentence: first on the page
    gate: pd.DataFrame
    header: str
    estimates: pd.DataFrame
    differences: pd.DataFrame
    agreement: pd.DataFrame
    alerts: pd.DataFrame
    counts: pd.DataFrame
    estimates_png: bytes
    trend_png: bytes
    agreement_png: bytes
    series: list[tuple[str, str]]  # (label, judge configuration hash) the picker offers
    shown: str | None  # the configuration hash shown
    captions: dict[str, str]  # plot name -> what it covers (its label on the page)


@lru_cache(maxsize=4)
def _message_png(text: str) -> bytes:
    return plots.message_png(text)


def _empty_view(text: str) -> TiersView:
    empty = message_frame(text)
    png = _message_png(f"nothing to plot yet: run `{FILL_COMMAND}`")
    return TiersView("", empty, text, empty, empty, empty, empty, empty, png, png, png, [], None, dict(PLOTS))


def _cost(engine: Engine, since: str | None) -> str:
    """The judge's cost over the page's period (None: not asked), then today's spend against the daily cap, its
    pause first when it holds (read live: grouped queries)."""
    from datetime import timedelta

    from judgewatch.judging.costs import cost_line
    from judgewatch.judging.spend_cap import settings_day_spend
    from judgewatch.settings import get_settings
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.paused import count_paused
    from judgewatch.storage.types import utcnow

    settings = get_settings()
    start = utcnow() - timedelta(days=int(since.rstrip("d"))) if since else None
    with session_scope(engine) as session:
        period = cost_line(session, settings, start) if since is not None else ""
        spend, waiting = settings_day_spend(session, settings), count_paused(session=session)
    today = f"> ⚠️ **Judging paused**: {spend.pause_note()}" if spend.paused else spend.describe()
    today += f" ({waiting:,} sampled picks wait to be judged)" if waiting else ""
    return "\n\n".join(line for line in (today, period) if line)


def read_views(engine: Engine, rubric: str, since: str) -> StoredViews:
    """The stored renderings of the period; a gr.Error for a period the calibration flow does not store."""
    if since not in PERIODS:
        raise gr.Error(f"period {since!r}: choose one of {', '.join(p or 'all time' for p in PERIODS)}")
    return stored_views(engine, rubric_name=rubric, period=since)


def computed_line(view: PageView) -> str:
    return f"Computed {view.computed_at:%Y-%m-%d %H:%M} UTC by the calibration flow (`{FILL_COMMAND}` refreshes it)."


def tiers_view(
    engine: Engine, rubric: str = "answer_quality", since: str = "90d", series: str | None = None
) -> TiersView:
    """What the page shows: the stored rendering for the period and series (one read, no computing on open)."""
    stored = read_views(engine, rubric, since)
    view = stored.pick(series)
    if view is None:
        empty = _empty_view(NOT_COMPUTED)
        empty.header = f"{NOT_COMPUTED}\n\n{_cost(engine, None)}"
        return empty
    t = view.tables

    def table(heading: str) -> pd.DataFrame:
        return t[heading] if heading in t else message_frame(MISSING[heading])

    png = view.images
    lead = view.first_paragraph(GATE_SECTION)
    return TiersView(
        lead=f"**{lead}**" if lead else MISSING[GATE_SECTION],
        gate=table(GATE_SECTION),
        header="\n\n".join([*view.header, computed_line(view), _cost(engine, since)]),
        estimates=table("Tier scores"),
        differences=table("Tier difference"),
        agreement=table("Judge-human agreement per tier"),
        alerts=table("Open drift alerts"),
        counts=table("What the numbers rest on"),
        estimates_png=png.get("estimates") or _message_png(plots.NO_VERDICTS),
        trend_png=png.get("trend") or _message_png(plots.NO_VERDICTS),
        agreement_png=png.get("agreement") or _message_png(plots.NO_LABELS),
        series=stored.choices(),
        shown=view.judge_config_hash,
        captions={**PLOTS, **view.captions},
    )


def add_tiers_tab(engine: Engine, *, rubric: str = "answer_quality", label: str = "Tiers") -> gr.Tab:
    """Add the Tiers tab to the `gr.Blocks` being built; read on opening the tab, on Refresh and on a pick."""

    def load(rubric_name: str, since: str, series: str | None, request: gr.Request) -> list[Any]:
        require_viewer(engine, request)
        v = tiers_view(engine, rubric_name.strip() or rubric, since, series)

        def picture(name: str) -> Any:
            return gr.update(value=image(getattr(v, f"{name}_png")), label=v.captions.get(name, PLOTS[name]))

        picker = gr.update(choices=v.series, value=v.shown)
        return [v.lead, v.gate, v.header, picker, picture("estimates"), v.estimates, v.differences, v.agreement,
                picture("trend"), picture("agreement"), v.alerts, v.counts]  # fmt: skip

    with gr.Tab(label) as tab:
        rubric_box, since_box, refresh = page_controls(rubric)
        waiting = message_frame(BEFORE_OPENING)
        # the gate's question leads: above the series, the judge's trust and the notes
        lead = gr.Markdown(BEFORE_OPENING)
        gate = gr.Dataframe(waiting, label=GATE_LABEL, interactive=False, wrap=True)
        header = gr.Markdown("")
        series_box = gr.Dropdown(
            choices=[], label="Judge series", info="every judge series the calibration flow stored; default first"
        )
        estimates_img = gr.Image(label=PLOTS["estimates"], type="pil", interactive=False)
        estimates = gr.Dataframe(waiting, label="Tier scores", interactive=False, wrap=True)
        differences = gr.Dataframe(waiting, label="Tier difference", interactive=False, wrap=True)
        agreement = gr.Dataframe(waiting, label="Judge-human agreement per tier", interactive=False, wrap=True)
        trend_img = gr.Image(label=PLOTS["trend"], type="pil", interactive=False)
        agreement_img = gr.Image(label=PLOTS["agreement"], type="pil", interactive=False)
        alerts = gr.Dataframe(waiting, label="Open drift alerts", interactive=False, wrap=True)
        counts = gr.Dataframe(waiting, label="What the numbers rest on", interactive=False, wrap=True)
        with gr.Accordion("How to read this page", open=False):
            gr.Markdown(INTRO)
        outputs = [lead, gate, header, series_box, estimates_img, estimates, differences, agreement, trend_img]
        outputs += [agreement_img, alerts, counts]
        inputs = [rubric_box, since_box, series_box]
        # `input`, not `change`: filling the picker's choices on load must not load the page again
        for event in (refresh.click, tab.select, series_box.input, since_box.input):
            event(load, inputs=inputs, outputs=outputs, api_visibility="private")
    return tab
