"""Helpers the review app's pages share: who is asking (and may they), the period controls, the summary.

Every handler of every page starts with `require_role`: a logged-in session can call any handler (Gradio's
`api_visibility` only hides it), so the handler checks that the account is still active and that its role
may see the page. A disabled account's sessions are ended on its next request.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Collection

import gradio as gr
import pandas as pd
from PIL import Image
from sqlalchemy import Engine

from judgewatch.calibration.report import blocks
from judgewatch.calibration.summary import CalibrationSummary, parse_since, summarize
from judgewatch.calibration.view_snapshot import header_lines
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.review.accounts import AGGREGATE_ROLES, Role, role_of
from judgewatch.settings import get_settings
from judgewatch.storage.db import session_scope
from review_ui.session_guard import end_sessions

logger = logging.getLogger(__name__)

SINCE_CHOICES = [("last 7 days", "7d"), ("last 30 days", "30d"), ("last 90 days", "90d"), ("all time", "")]


def username(request: gr.Request | None) -> str:
    """The logged-in account's name; a gr.Error when there is none."""
    name = getattr(request, "username", None) if request is not None else None
    if not name:
        raise gr.Error("Log in first.")
    return str(name)


def require_role(engine: Engine, request: gr.Request | None, roles: Collection[Role] | None = None) -> str:
    """The caller's name when the account is active (and, given `roles`, has one of them); a gr.Error otherwise.

    A disabled account also loses its sessions here, so its next page load asks for a login again.
    """
    name = username(request)
    with session_scope(engine) as session:
        role = role_of(session=session, name=name)
    if role is None:
        end_sessions(request, name)
        raise gr.Error("Your account is not active.")
    if roles is not None and role not in roles:
        allowed = " and ".join(sorted(f"{r.value}s" for r in roles))
        raise gr.Error(f"This page is for {allowed}.")
    return name


def require_viewer(engine: Engine, request: gr.Request | None) -> str:
    """The caller's name when it is an active account allowed to see aggregate pages (owner, adjudicator)."""
    return require_role(engine, request, AGGREGATE_ROLES)


def page_top(intro: str, rubric: str) -> tuple[gr.Textbox, gr.Dropdown, gr.Button, gr.Markdown]:
    """What the aggregate pages start with: their intro, the rubric box, period dropdown, Refresh, a header."""
    gr.Markdown(intro)
    with gr.Row():
        rubric_box = gr.Textbox(value=rubric, label="Rubric", scale=2)
        since_box = gr.Dropdown(SINCE_CHOICES, value="90d", label="Period", scale=2)
        refresh = gr.Button("Refresh", size="sm", scale=1)
    header = gr.Markdown("Open this tab or press Refresh to compute.")
    return rubric_box, since_box, refresh, header


def image(png: bytes) -> Image.Image | None:
    """A stored PNG as an image; None for an empty picture (nothing to plot yet)."""
    return Image.open(io.BytesIO(png)) if png else None


def scale_levels(rubric: str) -> list[float] | None:
    try:
        return [float(x) for x in load_rubric(rubric, get_settings().rubrics_dir).scale.levels]
    except RubricError:
        return None


def compute(engine: Engine, rubric: str, since: str) -> CalibrationSummary:
    """The summary behind both pages; a gr.Error with a short message when it cannot be computed."""
    try:
        start = parse_since(since or None)
    except ValueError as exc:
        raise gr.Error(str(exc)) from exc
    try:
        return summarize(engine, rubric_name=rubric, since=start, categories=scale_levels(rubric), n_boot=500)
    except Exception as exc:  # a page that cannot read the store says so instead of a blank error
        logger.exception("could not compute the calibration summary")
        raise gr.Error("Could not compute the numbers from the store: see the server log.") from exc


def tables(summary: CalibrationSummary) -> dict[str, pd.DataFrame]:
    """The report's tables (same wording as `judgewatch report tiers`), keyed by the heading they follow."""
    out: dict[str, pd.DataFrame] = {}
    heading = ""
    for block in blocks(summary):
        if block.kind == "h2":
            heading = block.text
        elif block.kind == "table" and heading not in out:
            out[heading] = pd.DataFrame(list(block.rows), columns=list(block.headers))
    return out


def header_md(summary: CalibrationSummary) -> str:
    """The judge series, rubric, measured trust and notes above both pages' numbers."""
    return "\n\n".join(header_lines(summary)) or "No scored verdicts yet."
